//! The contract every [`RunStore`] keeps, as a check any implementation can run in its
//! tests: [`check`] panics with what was broken.
//!
//! It covers idempotent create, contiguous and atomic appends, `Conflict` on a wrong
//! first seq (and a retried append recognised by its head), reads after any cursor,
//! `Gone` after trimming, terminal appends, wake-ups, cancel requests seen by the
//! heartbeat, and (for stores with leases) expiry, take-over and fencing.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::{CancelOutcome, Created, Fence, NewRun, RunKey, RunStatus, RunStore, RunStoreError};

/// What the store under test is configured to do.
#[derive(Debug, Clone)]
pub struct ContractSetup {
    /// A prefix making this check's run keys unique (stores may be shared).
    pub namespace: String,
    /// The store keeps at most this many events per run (configure it small, e.g. 8).
    pub max_events_per_run: u64,
    /// Whether leases expire (a store for several replicas); when true, the check
    /// creates a run with a 50 ms lease and expects it among the expired ones.
    pub leases: bool,
}

fn ev(i: u64) -> Bytes {
    Bytes::from(format!(
        "{{\"type\":\"STEP_STARTED\",\"stepName\":\"s{i}\"}}"
    ))
}

fn new_run(setup: &ContractSetup, name: &str, lease: Duration) -> NewRun {
    NewRun {
        key: RunKey::derive(&setup.namespace, "agent", name),
        run_id: name.to_owned(),
        thread_id: "thread".into(),
        agent: "agent".into(),
        body_hash: "hash-a".into(),
        replica: "replica-a".into(),
        lease,
    }
}

async fn fresh(
    store: &dyn RunStore,
    setup: &ContractSetup,
    name: &str,
    lease: Duration,
) -> (RunKey, Fence) {
    let run = new_run(setup, name, lease);
    let key = run.key.clone();
    match store.create(run).await.expect("create") {
        Created::New(f) => (key, f),
        Created::Existing(r) => panic!("a new run key found an existing run: {r:?}"),
    }
}

/// Runs the whole contract against `store`. Panics with the broken rule.
pub async fn check(store: Arc<dyn RunStore>, setup: ContractSetup) {
    let s = store.as_ref();
    let long = Duration::from_secs(60);

    // Idempotent create.
    let (key, fence) = fresh(s, &setup, "create", long).await;
    match s
        .create(new_run(&setup, "create", long))
        .await
        .expect("create again")
    {
        Created::Existing(r) => {
            assert_eq!(r.run_id, "create");
            assert_eq!(r.body_hash, "hash-a");
            assert_eq!(r.status, RunStatus::Running);
            assert_eq!((r.head, r.oldest), (0, 1));
        }
        Created::New(_) => panic!("a second create of the same key made a new run"),
    }
    assert!(s
        .record(&RunKey::derive(&setup.namespace, "agent", "nope"))
        .await
        .unwrap()
        .is_none());

    // Contiguous, atomic appends; conflicts; reads from any cursor.
    s.append(&key, fence, 1, vec![ev(1), ev(2), ev(3)], None)
        .await
        .expect("append 1..=3");
    match s.append(&key, fence, 3, vec![ev(3)], None).await {
        Err(RunStoreError::Conflict { head: 3 }) => {}
        other => panic!("an append at 3 after head 3 must conflict with head 3: {other:?}"),
    }
    match s.append(&key, fence, 5, vec![ev(5)], None).await {
        Err(RunStoreError::Conflict { head: 3 }) => {}
        other => panic!("a gap must conflict: {other:?}"),
    }
    match s
        .append(&key, Fence(fence.0.wrapping_add(1)), 4, vec![ev(4)], None)
        .await
    {
        Err(RunStoreError::Fenced) => {}
        other => panic!("a wrong fence must be fenced: {other:?}"),
    }
    for after in 0..=3u64 {
        let b = s.read(&key, after, 100).await.expect("read");
        assert_eq!(b.first, after + 1);
        assert_eq!(b.head, 3);
        assert_eq!(b.status, RunStatus::Running);
        let want: Vec<Bytes> = (after + 1..=3).map(ev).collect();
        assert_eq!(b.events, want, "read after {after}");
    }
    let b = s.read(&key, 0, 2).await.unwrap();
    assert_eq!(b.events, vec![ev(1), ev(2)], "the limit holds");

    // A wake-up for a waiter at the head.
    let waiter = {
        let store = store.clone();
        let key = key.clone();
        tokio::spawn(async move {
            let t0 = tokio::time::Instant::now();
            store.wait(&key, 3, Duration::from_secs(5)).await;
            t0.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.append(&key, fence, 4, vec![ev(4)], None).await.unwrap();
    let waited = waiter.await.unwrap();
    assert!(
        waited < Duration::from_secs(4),
        "wait must wake on append (waited {waited:?})"
    );

    // Cancel, seen by the heartbeat.
    assert!(!s.heartbeat(&key, fence).await.unwrap().cancel_requested);
    assert_eq!(
        s.request_cancel(&key).await.unwrap(),
        CancelOutcome::Requested
    );
    assert!(s.heartbeat(&key, fence).await.unwrap().cancel_requested);
    assert!(s.record(&key).await.unwrap().unwrap().cancel_requested);

    // A terminal append ends the run.
    s.append(&key, fence, 5, vec![ev(5)], Some(RunStatus::Cancelled))
        .await
        .unwrap();
    let r = s.record(&key).await.unwrap().unwrap();
    assert_eq!((r.status, r.head), (RunStatus::Cancelled, 5));
    assert!(r.finished_at_ms.is_some());
    match s.append(&key, fence, 6, vec![ev(6)], None).await {
        Err(RunStoreError::Ended) => {}
        other => panic!("an ended run takes nothing: {other:?}"),
    }
    assert_eq!(
        s.request_cancel(&key).await.unwrap(),
        CancelOutcome::AlreadyEnded
    );
    let b = s.read(&key, 5, 10).await.unwrap();
    assert!(b.events.is_empty() && b.status == RunStatus::Cancelled);
    // A wait on an ended run returns at once.
    let t0 = tokio::time::Instant::now();
    s.wait(&key, 5, Duration::from_secs(5)).await;
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "waiting on an ended run must not block"
    );

    // Trimming: the oldest events go, a read from before them is Gone.
    let (tkey, tfence) = fresh(s, &setup, "trim", long).await;
    let n = setup.max_events_per_run + 4;
    for i in 1..=n {
        s.append(&tkey, tfence, i, vec![ev(i)], None).await.unwrap();
    }
    let r = s.record(&tkey).await.unwrap().unwrap();
    assert_eq!(r.head, n);
    assert_eq!(
        r.oldest,
        n - setup.max_events_per_run + 1,
        "exactly the cap is kept"
    );
    match s.read(&tkey, 0, 10).await {
        Err(RunStoreError::Gone { oldest, head }) => assert_eq!((oldest, head), (r.oldest, n)),
        other => panic!("a read from before the kept events must be Gone: {other:?}"),
    }
    let b = s.read(&tkey, r.oldest - 1, 100).await.unwrap();
    assert_eq!(b.first, r.oldest);
    assert_eq!(b.events.len() as u64, setup.max_events_per_run);
    assert_eq!(b.events[0], ev(r.oldest));

    // Unknown runs.
    let ghost = RunKey::derive(&setup.namespace, "agent", "ghost");
    assert!(matches!(
        s.read(&ghost, 0, 1).await,
        Err(RunStoreError::NotFound)
    ));
    assert!(matches!(
        s.append(&ghost, fence, 1, vec![ev(1)], None).await,
        Err(RunStoreError::NotFound)
    ));
    assert!(matches!(
        s.request_cancel(&ghost).await,
        Err(RunStoreError::NotFound)
    ));

    if !setup.leases {
        return;
    }
    // Leases: expiry, take-over, fencing of the old producer.
    let (lkey, lfence) = fresh(s, &setup, "lease", Duration::from_millis(50)).await;
    s.append(&lkey, lfence, 1, vec![ev(1)], None).await.unwrap();
    assert!(
        s.take_over(&lkey, "replica-b").await.unwrap().is_none(),
        "a live lease cannot be taken over"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let expired = s.expired_leases(1000).await.unwrap();
    assert!(expired.contains(&lkey), "an expired lease is listed");
    let (nfence, head) = s
        .take_over(&lkey, "replica-b")
        .await
        .unwrap()
        .expect("take-over");
    assert_eq!(head, 1);
    assert_ne!(nfence, lfence);
    assert!(
        s.take_over(&lkey, "replica-c").await.unwrap().is_none(),
        "taken over once"
    );
    match s.append(&lkey, lfence, 2, vec![ev(2)], None).await {
        Err(RunStoreError::Fenced) => {}
        other => panic!("the old producer must be fenced: {other:?}"),
    }
    assert!(matches!(
        s.heartbeat(&lkey, lfence).await,
        Err(RunStoreError::Fenced)
    ));
    s.append(&lkey, nfence, 2, vec![ev(2)], Some(RunStatus::Lost))
        .await
        .unwrap();
    let r = s.record(&lkey).await.unwrap().unwrap();
    assert_eq!(
        (r.status, r.head, r.owner_replica.as_str()),
        (RunStatus::Lost, 2, "replica-b")
    );
    assert!(
        !s.expired_leases(1000).await.unwrap().contains(&lkey),
        "an ended run holds no lease"
    );
}
