//! The contract every [`RunStore`] keeps, as a check any implementation can run in its
//! tests: [`check`] panics with what was broken.
//!
//! It covers idempotent create, contiguous and atomic appends, `Conflict` on a wrong
//! first seq (and a retried append recognised by its head), reads after any cursor,
//! `Gone` after trimming, terminal appends, wake-ups, cancel requests seen by the
//! heartbeat, threads (one running run each, history in order, known message ids, a
//! run ended with `append` leaving no entry), the owners' thread lists (their order,
//! with threads ending in the same millisecond; pages through every filter; a cursor at
//! a thread forgotten since), and (for stores with leases) expiry, take-over and
//! fencing, a thread run ended by the one that took it over included; and the interrupt
//! ledger ([`check_ledger`]).
//! Each role's part runs alone too, for a store built role by role: [`check_run_log`],
//! then [`check_leases`]. [`check_thread_expiry`] checks, on a store configured for it, that lists leave out
//! the threads the store forgot for idleness.
//!
//! Behind the feature `test-util`: a store's crate names it on its dev-dependency,
//! `agui-sdk-agent = { version = "…", features = ["test-util"] }`, and calls [`check`]
//! from a test. A single-process store (the provided [`Leases`] methods)
//! runs it with `leases: false`; a store shared by several replicas with `leases: true`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::{
    owner_scope, CancelOutcome, Created, Fence, Leases, NewRun, RunKey, RunLog, RunStatus,
    RunStore, RunStoreError, ThreadEntry, ThreadKey, ThreadQuery, ThreadUpdate,
};

mod ledger;
mod lists;

pub use ledger::check_ledger;
pub use lists::check_thread_expiry;
use lists::{check_thread_list_filters, check_thread_lists};

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
        thread: None,
    }
}

fn thread_run(setup: &ContractSetup, thread: &ThreadKey, name: &str, lease: Duration) -> NewRun {
    NewRun {
        thread: Some(thread.clone()),
        ..new_run(setup, name, lease)
    }
}

fn entry(name: &str) -> ThreadEntry {
    ThreadEntry::from_parts(
        Bytes::from(format!(
            "{{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"{name}\"}}\n{{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"{name}\"}}\n"
        )),
        vec![format!("m-{name}")],
    )
}

/// `entry(name)` as a thread's history holds it (its ids are the thread's).
fn kept(name: &str) -> ThreadEntry {
    ThreadEntry {
        message_ids: Vec::new(),
        ..entry(name)
    }
}

/// The first `limit` threads of any agent, archived ones too.
fn everything(limit: usize) -> ThreadQuery {
    ThreadQuery {
        include_archived: true,
        ..ThreadQuery::first(limit)
    }
}

/// One running run per thread; history in order; known ids; `append` ends leave none.
async fn check_threads(s: &dyn RunStore, setup: &ContractSetup) {
    let long = Duration::from_secs(60);
    let thread = ThreadKey::derive(&setup.namespace, "thread-1");
    assert!(
        s.thread(&ThreadKey::derive(&setup.namespace, "no-thread"))
            .await
            .unwrap()
            .is_none(),
        "an unknown thread is None"
    );
    let run = thread_run(setup, &thread, "t-a", long);
    let a = run.key.clone();
    let Created::New(fa) = s.create(run).await.expect("create a thread run") else {
        panic!("a new thread run")
    };
    let r = s.record(&a).await.unwrap().expect("record");
    assert_eq!(
        r.thread.as_ref(),
        Some(&thread),
        "the record names its thread"
    );
    let t = s.thread(&thread).await.unwrap().expect("the thread exists");
    assert_eq!(
        t.live.as_ref().map(|l| (&l.key, l.run_id.as_str())),
        Some((&a, "t-a"))
    );
    assert!(t.history.is_empty() && t.known_message_ids.is_empty());
    match s.create(thread_run(setup, &thread, "t-b", long)).await {
        Err(RunStoreError::Busy { run_id }) => assert_eq!(run_id, "t-a"),
        other => panic!("a second run of a running thread must be Busy: {other:?}"),
    }
    // A retried create of the live run itself attaches.
    assert!(matches!(
        s.create(thread_run(setup, &thread, "t-a", long)).await,
        Ok(Created::Existing(_))
    ));
    s.append(&a, fa, 1, vec![ev(1)], None).await.unwrap();
    match s
        .end_thread_run(
            &a,
            Fence(fa.0.wrapping_add(1)),
            2,
            vec![ev(2)],
            RunStatus::Finished,
            entry("t-a"),
        )
        .await
    {
        Err(RunStoreError::Fenced) => {}
        other => panic!("a thread run's end is fenced: {other:?}"),
    }
    s.end_thread_run(&a, fa, 2, vec![ev(2)], RunStatus::Finished, entry("t-a"))
        .await
        .expect("end the thread run");
    let r = s.record(&a).await.unwrap().unwrap();
    assert_eq!((r.status, r.head), (RunStatus::Finished, 2));
    let t = s.thread(&thread).await.unwrap().unwrap();
    assert!(t.live.is_none(), "an ended run frees its thread");
    assert_eq!(t.history, vec![kept("t-a")]);
    assert!(t.known_message_ids.contains("m-t-a"));

    // The next run; ended with a plain terminal append, it leaves no entry.
    let run = thread_run(setup, &thread, "t-b", long);
    let b = run.key.clone();
    let Created::New(fb) = s.create(run).await.expect("the thread's next run") else {
        panic!("a new run")
    };
    assert_eq!(
        s.thread(&thread)
            .await
            .unwrap()
            .unwrap()
            .live
            .map(|l| l.run_id),
        Some("t-b".to_owned())
    );
    assert!(
        s.record(&a).await.unwrap().is_none(),
        "a thread's ended run, in its history, keeps no log once the next run starts"
    );
    s.append(&b, fb, 1, vec![ev(1)], Some(RunStatus::Error))
        .await
        .unwrap();
    let t = s.thread(&thread).await.unwrap().unwrap();
    assert!(t.live.is_none());
    assert_eq!(t.history.len(), 1, "an append end adds no entry");
    let run = thread_run(setup, &thread, "t-c", long);
    let c = run.key.clone();
    let Created::New(fc) = s.create(run).await.unwrap() else {
        panic!("a new run")
    };
    s.end_thread_run(&c, fc, 1, vec![ev(1)], RunStatus::Cancelled, entry("t-c"))
        .await
        .unwrap();
    let t = s.thread(&thread).await.unwrap().unwrap();
    assert_eq!(t.history, vec![kept("t-a"), kept("t-c")], "oldest first");

    // The owner's list: threads with an ended run, the last updated first.
    let scope = owner_scope(&setup.namespace);
    assert_eq!(
        thread.scope(),
        scope,
        "a thread key carries its owner's scope"
    );
    let busy = ThreadKey::derive(&setup.namespace, "thread-running");
    let run = thread_run(setup, &busy, "t-running", long);
    let (running, fr) = (run.key.clone(), s.create(run).await.unwrap());
    let list = s.list_threads(&scope, &everything(100)).await.unwrap();
    let mine = list
        .iter()
        .find(|t| t.key == thread)
        .expect("the thread is listed");
    assert_eq!(
        (mine.thread_id.as_str(), mine.agent.as_str()),
        ("thread", "agent")
    );
    assert!(mine.created_at_ms > 0 && mine.created_at_ms <= mine.updated_at_ms);
    assert!(
        list.iter().all(|t| t.key != busy),
        "a thread with no ended run is not listed"
    );
    assert!(
        list.windows(2)
            .all(|w| w[0].updated_at_ms >= w[1].updated_at_ms),
        "the last updated first"
    );
    assert!(
        s.list_threads(&scope, &everything(0))
            .await
            .unwrap()
            .is_empty(),
        "the limit holds"
    );
    let elsewhere = owner_scope(&format!("{}-other", setup.namespace));
    assert!(s
        .list_threads(&elsewhere, &everything(100))
        .await
        .unwrap()
        .is_empty());
    // Renaming and archiving: the summary changes, its place in the list does not.
    assert_eq!(mine.name, None);
    assert!(!mine.archived);
    let renamed = s
        .update_thread(
            &thread,
            ThreadUpdate {
                name: Some("Trip to Rome".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .expect("a listed thread is updated");
    assert_eq!(renamed.name.as_deref(), Some("Trip to Rome"));
    assert_eq!(
        renamed.last_run_at_ms, mine.last_run_at_ms,
        "a rename is no run"
    );
    assert!(renamed.updated_at_ms >= mine.updated_at_ms);
    let archived = s
        .update_thread(
            &thread,
            ThreadUpdate {
                archived: Some(true),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert!(archived.archived);
    assert_eq!(
        archived.name.as_deref(),
        Some("Trip to Rome"),
        "the name stays"
    );
    let listed = s.list_threads(&scope, &everything(100)).await.unwrap();
    let again = listed.iter().find(|t| t.key == thread).unwrap();
    assert!(again.archived && again.name.as_deref() == Some("Trip to Rome"));
    assert!(
        s.update_thread(&busy, ThreadUpdate::default())
            .await
            .unwrap()
            .is_none(),
        "a thread with no ended run is not updated"
    );
    // Forgetting: the history and the list entry go; a running run stays.
    assert!(s.forget_thread(&thread).await.unwrap());
    assert!(s
        .thread(&thread)
        .await
        .unwrap()
        .is_none_or(|t| t.history.is_empty()));
    assert!(s
        .list_threads(&scope, &everything(100))
        .await
        .unwrap()
        .iter()
        .all(|t| t.key != thread));
    assert!(!s
        .forget_thread(&ThreadKey::derive(&setup.namespace, "never"))
        .await
        .unwrap());
    assert!(s.forget_thread(&busy).await.unwrap());
    let Created::New(fr) = fr else {
        panic!("a new run")
    };
    assert_eq!(
        s.thread(&busy)
            .await
            .unwrap()
            .and_then(|t| t.live)
            .map(|l| l.run_id)
            .as_deref(),
        Some("t-running"),
        "forgetting a running thread leaves its run"
    );
    s.append(&running, fr, 1, vec![ev(1)], Some(RunStatus::Finished))
        .await
        .unwrap();

    // A run of no thread cannot end as one.
    let (plain, fp) = fresh(s, setup, "no-thread-run", long).await;
    assert!(matches!(
        s.end_thread_run(&plain, fp, 1, vec![ev(1)], RunStatus::Finished, entry("x"))
            .await,
        Err(RunStoreError::NotFound)
    ));
    // Another owner's thread of the same id is another thread.
    let other = ThreadKey::derive(&format!("{}-other", setup.namespace), "thread-1");
    assert!(s.thread(&other).await.unwrap().is_none());
}

/// A thread run whose producer died, ended by the replica that took it over.
async fn check_thread_take_over(s: &dyn RunStore, setup: &ContractSetup) {
    let thread = ThreadKey::derive(&setup.namespace, "thread-lost");
    let run = thread_run(setup, &thread, "t-lost", Duration::from_millis(50));
    let key = run.key.clone();
    let Created::New(old) = s.create(run).await.unwrap() else {
        panic!("a new run")
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (fence, head) = s
        .take_over(&key, "replica-b")
        .await
        .unwrap()
        .expect("take-over of a thread run");
    assert_eq!(head, 0);
    assert!(matches!(
        s.end_thread_run(
            &key,
            old,
            1,
            vec![ev(1)],
            RunStatus::Finished,
            entry("t-lost")
        )
        .await,
        Err(RunStoreError::Fenced)
    ));
    s.end_thread_run(
        &key,
        fence,
        1,
        vec![ev(1)],
        RunStatus::Lost,
        entry("t-lost"),
    )
    .await
    .unwrap();
    let t = s.thread(&thread).await.unwrap().unwrap();
    assert!(t.live.is_none());
    assert_eq!(t.history, vec![kept("t-lost")]);
}

async fn fresh<S: RunLog + ?Sized>(
    store: &S,
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

/// The run log's part of the contract ([`RunLog`]): idempotent create, contiguous and
/// atomic appends, `Conflict` and `Fenced`, reads after any cursor and their limit, the
/// wake-up of a waiter, the end of a run, trimming to `setup.max_events_per_run` with
/// `Gone`, unknown runs. What a store implementing the run log alone can run; [`check`]
/// runs it first. Panics with the broken rule.
pub async fn check_run_log(store: Arc<dyn RunLog>, setup: &ContractSetup) {
    let setup = setup.clone();
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
        let store = Arc::clone(&store);
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
}

/// The leases' part of the contract ([`Leases`]): cancel requests seen by the heartbeat
/// and the record while the run runs, `AlreadyEnded` after its end, `NotFound` for no
/// such run; and with `setup.leases` (a store shared by several replicas) expiry,
/// take-over once, and fencing of the old producer's appends and heartbeats. What a
/// store implementing the run log and its leases can run; [`check`] runs it second.
/// Panics with the broken rule.
pub async fn check_leases<S: RunLog + Leases + ?Sized>(s: &S, setup: &ContractSetup) {
    let long = Duration::from_secs(60);
    let (key, fence) = fresh(s, setup, "cancel", long).await;
    assert!(!s.heartbeat(&key, fence).await.unwrap().cancel_requested);
    assert_eq!(
        s.request_cancel(&key).await.unwrap(),
        CancelOutcome::Requested
    );
    assert!(s.heartbeat(&key, fence).await.unwrap().cancel_requested);
    assert!(s.record(&key).await.unwrap().unwrap().cancel_requested);
    s.append(&key, fence, 1, vec![ev(1)], Some(RunStatus::Cancelled))
        .await
        .unwrap();
    assert_eq!(
        s.request_cancel(&key).await.unwrap(),
        CancelOutcome::AlreadyEnded
    );
    let ghost = RunKey::derive(&setup.namespace, "agent", "ghost");
    assert!(matches!(
        s.request_cancel(&ghost).await,
        Err(RunStoreError::NotFound)
    ));

    if !setup.leases {
        return;
    }
    // Leases: expiry, take-over, fencing of the old producer. The lease is long enough
    // that a loaded machine cannot let it (or the taker's) lapse between two steps.
    let lease = Duration::from_millis(800);
    let (lkey, lfence) = fresh(s, setup, "lease", lease).await;
    s.append(&lkey, lfence, 1, vec![ev(1)], None).await.unwrap();
    assert!(
        s.take_over(&lkey, "replica-b").await.unwrap().is_none(),
        "a live lease cannot be taken over"
    );
    tokio::time::sleep(lease + Duration::from_millis(200)).await;
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

/// Runs the whole contract against `store`: each role's part ([`check_run_log`], then
/// [`check_leases`], threads, and with `setup.leases` a thread run's take-over). Panics
/// with the broken rule.
pub async fn check(store: Arc<dyn RunStore>, setup: ContractSetup) {
    check_run_log(store.clone(), &setup).await;
    let s = store.as_ref();
    check_leases(s, &setup).await;
    check_threads(s, &setup).await;
    check_thread_lists(s, &setup).await;
    check_thread_list_filters(s, &setup).await;
    check_ledger(store.clone(), &setup).await;

    if !setup.leases {
        return;
    }
    check_thread_take_over(s, &setup).await;
}
