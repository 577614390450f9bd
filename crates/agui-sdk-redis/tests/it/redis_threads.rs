//! Threads in the Redis run store against a real Redis: a thread seen the same from two
//! replicas, a stop asked on one replica seen by the producer on the other, and a
//! thread run whose replica died closed by another replica's reaper, joining the
//! thread's history as a valid stream; the cap on threads held.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::{
    reap, thread_entry, CancelOutcome, Created, Leases, NewRun, RunKey, RunLog, RunStatus,
    RunStoreError, ThreadIndex, ThreadKey,
};
use agui_sdk_core::Event;
use agui_sdk_redis::{RedisRunStore, RunLimits};
use bytes::Bytes;

async fn store(test: &str) -> Option<RedisRunStore> {
    store_with(test, &PREFIX, RunLimits::shared()).await
}

async fn store_with(test: &str, prefix: &str, limits: RunLimits) -> Option<RedisRunStore> {
    common::connect(test, prefix, limits).await
}

static PREFIX: std::sync::LazyLock<String> = std::sync::LazyLock::new(common::prefix);

fn json(e: Event) -> Bytes {
    let mut out = Vec::new();
    e.write_json(&mut out);
    Bytes::from(out)
}

fn run(thread: &ThreadKey, run_id: &str, replica: &str, lease: Duration) -> NewRun {
    NewRun {
        key: RunKey::derive("owner", "agent", run_id),
        run_id: run_id.into(),
        thread_id: "t".into(),
        agent: "agent".into(),
        body_hash: String::new(),
        replica: replica.into(),
        lease,
        thread: Some(thread.clone()),
    }
}

#[tokio::test]
async fn two_replicas_share_threads_and_stops() {
    let test = "two_replicas_share_threads_and_stops";
    let Some(a) = store(test).await else { return };
    let b = store(test).await.unwrap();
    let thread = ThreadKey::derive("owner", "shared-thread");
    let r1 = run(&thread, "shared-r1", "a", Duration::from_secs(10));
    let key = r1.key.clone();
    let Created::New(fence) = a.create(r1).await.unwrap() else {
        panic!("a new run")
    };
    a.append(
        &key,
        fence,
        1,
        vec![json(Event::run_started("t", "shared-r1"))],
        None,
    )
    .await
    .unwrap();
    // B sees A's live run and cannot start another on the thread.
    let t = b.thread(&thread).await.unwrap().unwrap();
    assert_eq!(t.live.map(|l| l.run_id).as_deref(), Some("shared-r1"));
    assert!(matches!(
        b.create(run(&thread, "shared-r2", "b", Duration::from_secs(10)))
            .await,
        Err(RunStoreError::Busy { run_id }) if run_id == "shared-r1"
    ));
    // A stop asked on B reaches A at its next heartbeat.
    assert!(!a.heartbeat(&key, fence).await.unwrap().cancel_requested);
    assert_eq!(
        b.request_cancel(&key).await.unwrap(),
        CancelOutcome::Requested
    );
    assert!(a.heartbeat(&key, fence).await.unwrap().cancel_requested);
    let last = vec![json(Event::run_finished("t", "shared-r1"))];
    let entry = thread_entry(&a, &key, &last).await.unwrap();
    a.end_thread_run(&key, fence, 2, last, RunStatus::Cancelled, entry)
        .await
        .unwrap();
    let t = b.thread(&thread).await.unwrap().unwrap();
    assert_eq!(t.live, None, "nothing runs now");
    assert_eq!(t.history.len(), 1);
    assert_eq!(t.history[0].count, 2);
}

#[tokio::test]
async fn a_thread_run_whose_replica_died_is_closed_by_the_reaper_into_the_history() {
    let test = "a_thread_run_whose_replica_died";
    let Some(dead) = store(test).await else {
        return;
    };
    let other = Arc::new(store(test).await.unwrap());
    let thread = ThreadKey::derive("owner", "lost-thread");
    let r1 = run(&thread, "lost-r1", "dead", Duration::from_millis(300));
    let key = r1.key.clone();
    let Created::New(fence) = dead.create(r1).await.unwrap() else {
        panic!("a new run")
    };
    let events = vec![
        json(Event::run_started("t", "lost-r1")),
        json(Event::text_message_start("m")),
        json(Event::text_message_content("m", "half a rep")),
    ];
    dead.append(&key, fence, 1, events, None).await.unwrap();
    // Its replica stops: no more heartbeats. While the lease lasts, the thread is busy.
    drop(dead);
    assert!(matches!(
        other
            .create(run(&thread, "lost-r2", "other", Duration::from_secs(10)))
            .await,
        Err(RunStoreError::Busy { .. })
    ));
    tokio::time::sleep(Duration::from_millis(600)).await;
    reap(other.as_ref(), "other").await;
    let r = other.record(&key).await.unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Lost);
    let log = other.read(&key, 0, 100).await.unwrap();
    let last = Event::from_json_slice(log.events.last().unwrap()).unwrap();
    assert!(
        matches!(&last, Event::RunError(e) if e.code.as_deref() == Some(agui_sdk_agent::runs::RUN_LOST)),
        "the lost run ends with RUN_ERROR run_lost: {last:?}"
    );
    // It joined the history, compacted, as a stream that verifies; the thread is free.
    let t = other.thread(&thread).await.unwrap().unwrap();
    assert_eq!(t.live, None);
    assert_eq!(t.history.len(), 1);
    let past: Vec<Event> = t.history[0]
        .lines()
        .map(|l| Event::from_json_slice(l).unwrap())
        .collect();
    agui_sdk_core::semantics::verify_events(&past).expect("the lost run's history verifies");
    assert!(t.known_message_ids.contains("m"));
    assert!(matches!(
        other
            .create(run(&thread, "lost-r2", "other", Duration::from_secs(10)))
            .await,
        Ok(Created::New(_))
    ));
}

#[tokio::test]
async fn a_new_thread_beyond_the_cap_forgets_the_longest_idle_or_is_refused() {
    let prefix = common::prefix();
    let Some(s) = store_with("thread_cap", &prefix, RunLimits::shared().max_threads(2)).await
    else {
        return;
    };
    let long = Duration::from_secs(60);
    let keys: Vec<ThreadKey> = (0..4)
        .map(|i| ThreadKey::derive("cap-owner", &format!("cap-{i}")))
        .collect();
    // Two threads, each with an ended run: the cap is full.
    for (i, k) in keys.iter().take(2).enumerate() {
        let r = run(k, &format!("cap-run-{i}"), "replica-a", long);
        let key = r.key.clone();
        let Created::New(f) = s.create(r).await.unwrap() else {
            panic!("a new run")
        };
        let ev = json(Event::run_finished("t", format!("cap-run-{i}")));
        s.end_thread_run(
            &key,
            f,
            1,
            vec![ev],
            RunStatus::Finished,
            Default::default(),
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A third thread: the one idle the longest (the first) is forgotten for it.
    let third = run(&keys[2], "cap-run-2", "replica-a", long);
    assert!(matches!(s.create(third).await, Ok(Created::New(_))));
    assert!(
        s.thread(&keys[0]).await.unwrap().is_none(),
        "the longest idle thread is forgotten"
    );
    assert!(
        s.thread(&keys[1]).await.unwrap().is_some(),
        "the other stays"
    );
    let listed = s
        .list_threads(
            keys[0].scope(),
            &agui_sdk_agent::runs::ThreadQuery::first(10),
        )
        .await
        .unwrap();
    assert!(
        listed.iter().all(|t| t.key != keys[0]),
        "and leaves its owner's list"
    );
    // The second thread runs too: both held are running, a fourth is refused.
    let again = run(&keys[1], "cap-run-1b", "replica-a", long);
    assert!(matches!(s.create(again).await, Ok(Created::New(_))));
    match s
        .create(run(&keys[3], "cap-run-3", "replica-a", long))
        .await
    {
        Err(RunStoreError::Full(why)) => {
            assert!(why.contains("limit 2"), "the error names the limit: {why}")
        }
        other => panic!("a new thread with every thread running is refused: {other:?}"),
    }
    assert!(
        s.thread(&keys[3]).await.unwrap().is_none(),
        "a refused thread leaves nothing"
    );
}
