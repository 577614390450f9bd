//! The Redis thread store against a real Redis: the thread-store contract, a thread
//! seen the same from two replicas, a stop asked on one replica seen by the other, and
//! a run whose replica died ended as lost by the next reader.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agui_core::Event;
use agui_redis::{RedisThreadLimits, RedisThreadStore};
use agui_server::threads::contract::{check, ContractSetup};
use agui_server::threads::ThreadStore;

async fn store(test: &str, prefix: &str, limits: RedisThreadLimits) -> Option<RedisThreadStore> {
    match tokio::time::timeout(
        Duration::from_secs(10),
        RedisThreadStore::connect(&common::url(), prefix, limits),
    )
    .await
    {
        Ok(Ok(s)) => Some(s),
        Ok(Err(e)) => {
            common::unavailable(test, &e.to_string());
            None
        }
        Err(_) => {
            common::unavailable(test, "connecting timed out");
            None
        }
    }
}

#[tokio::test]
async fn the_redis_thread_store_keeps_the_contract() {
    let prefix = common::prefix();
    let limits = RedisThreadLimits::default().max_run_events(8);
    let Some(s) = store("the_redis_thread_store_keeps_the_contract", &prefix, limits).await else {
        return;
    };
    check(
        Arc::new(s),
        ContractSetup {
            namespace: prefix,
            max_run_events: 8,
        },
    )
    .await;
}

#[tokio::test]
async fn two_replicas_share_threads_and_stops() {
    let prefix = common::prefix();
    let Some(a) = store(
        "two_replicas_share_threads",
        &prefix,
        RedisThreadLimits::default(),
    )
    .await
    else {
        return;
    };
    let b = store(
        "two_replicas_share_threads",
        &prefix,
        RedisThreadLimits::default(),
    )
    .await
    .unwrap();
    a.begin_run("t", "r1").await.unwrap();
    a.append("t", "r1", vec![Event::run_started("t", "r1")])
        .await
        .unwrap();
    // B sees A's live run, and is woken by A's appends.
    let snap = b.snapshot("t").await.unwrap().unwrap();
    assert_eq!(snap.live.as_deref(), Some("r1"));
    assert!(matches!(
        b.begin_run("t", "r2").await,
        Err(agui_server::threads::StoreError::Busy { .. })
    ));
    let b = Arc::new(b);
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move {
            b.wait("t", "r1", 1).await;
            b.read_run("t", "r1", 1).await.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.append("t", "r1", vec![Event::step_started("s")])
        .await
        .unwrap();
    let page = tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.events.len(), 1);
    // A stop asked on B reaches A at its next keep-alive.
    assert!(!a.keep_alive("t", "r1").await.unwrap());
    assert_eq!(b.request_stop("t").await.unwrap().as_deref(), Some("r1"));
    assert!(a.keep_alive("t", "r1").await.unwrap(), "A sees the stop");
    a.append("t", "r1", vec![Event::run_finished("t", "r1")])
        .await
        .unwrap();
    a.end_run("t", "r1").await.unwrap();
    assert_eq!(b.request_stop("t").await.unwrap(), None, "nothing runs now");
    let snap = b.snapshot("t").await.unwrap().unwrap();
    assert_eq!(snap.live, None);
    assert_eq!(snap.history.len(), 1);
}

#[tokio::test]
async fn a_run_whose_replica_died_is_ended_as_lost_by_the_next_reader() {
    let prefix = common::prefix();
    let short = RedisThreadLimits::default().lease(Duration::from_millis(300));
    let Some(dead) = store("a_run_whose_replica_died", &prefix, short).await else {
        return;
    };
    let other = store("a_run_whose_replica_died", &prefix, short)
        .await
        .unwrap();
    dead.begin_run("t", "r1").await.unwrap();
    dead.append(
        "t",
        "r1",
        vec![
            Event::run_started("t", "r1"),
            Event::text_message_start("m"),
            Event::text_message_content("m", "half a rep"),
        ],
    )
    .await
    .unwrap();
    // Its process stops: no more keep-alives. While the lease lasts, the run is live.
    drop(dead);
    assert!(matches!(
        other.begin_run("t", "r2").await,
        Err(agui_server::threads::StoreError::Busy { .. })
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The next reader ends it: RUN_ERROR code run_lost, and it joins the history.
    let page = other.read_run("t", "r1", 0).await.unwrap();
    assert!(page.ended);
    match page.events.last() {
        Some(Event::RunError(e)) => assert_eq!(e.code.as_deref(), Some("run_lost")),
        other => panic!("the lost run ends with RUN_ERROR, got {other:?}"),
    }
    // What it left open is closed first: the log is a valid stream.
    let n = page.events.len();
    assert!(matches!(&page.events[n - 2], Event::TextMessageEnd(m) if m.message_id == "m"));
    agui_core::semantics::verify_events(&page.events).expect("the lost run's log verifies");
    let snap = other.snapshot("t").await.unwrap().unwrap();
    assert_eq!(snap.live, None);
    assert_eq!(snap.history.len(), 1);
    // And the thread takes new runs.
    let begun = other.begin_run("t", "r2").await.unwrap();
    assert!(begun.known_message_ids.contains("m"));
}
