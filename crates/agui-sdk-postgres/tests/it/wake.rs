//! Wake-ups by LISTEN/NOTIFY across replicas, and a lost connection.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::{Created, Fence, NewRun, RunKey, RunLimits, RunLog, RunStoreError};
use agui_sdk_postgres::{PostgresRunStore, FALLBACK};
use bytes::Bytes;

use crate::{drop_schema, store, url};

async fn run(s: &PostgresRunStore, name: &str) -> (RunKey, Fence) {
    let key = RunKey::derive("owner", "agent", name);
    let new = NewRun {
        key: key.clone(),
        run_id: name.into(),
        thread_id: "thread".into(),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "replica-a".into(),
        lease: Duration::from_secs(60),
        thread: None,
    };
    let Created::New(f) = s.create(new).await.unwrap() else {
        panic!("a new run")
    };
    (key, f)
}

/// How long a wait on `a` at `after` takes to end when `b` appends 150 ms into it.
async fn wake_latency(
    a: &Arc<PostgresRunStore>,
    b: &PostgresRunStore,
    key: &RunKey,
    fence: Fence,
    after: u64,
) -> Duration {
    let waiter = {
        let a = Arc::clone(a);
        let key = key.clone();
        tokio::spawn(async move {
            a.wait(&key, after, Duration::from_secs(10)).await;
            tokio::time::Instant::now()
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let appended = tokio::time::Instant::now();
    b.append(key, fence, after + 1, vec![Bytes::from_static(b"{}")], None)
        .await
        .unwrap();
    let woke = waiter.await.unwrap();
    woke.saturating_duration_since(appended)
}

#[tokio::test]
async fn a_waiter_wakes_on_another_replicas_append_by_its_notification() {
    let Some((a, admin, schema)) = store("wake_replicas", RunLimits::shared()).await else {
        return;
    };
    let a = Arc::new(a);
    let b = PostgresRunStore::connect(&url(), &schema, RunLimits::shared())
        .await
        .unwrap();
    let (key, fence) = run(&b, "woken").await;
    // Another run's append wakes nobody waiting on this one.
    let (other, other_fence) = run(&b, "other").await;
    let heard = a.wakeups_received();
    let waited = wake_latency(&a, &b, &key, fence, 0).await;
    assert!(
        waited < FALLBACK / 4,
        "woken by the notification of b's append, not by the {FALLBACK:?} check: {waited:?}"
    );
    assert!(a.wakeups_received() > heard, "a heard b's notification");
    let t0 = tokio::time::Instant::now();
    let waiter = {
        let a = Arc::clone(&a);
        let key = key.clone();
        tokio::spawn(async move { a.wait(&key, 1, Duration::from_millis(600)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.append(
        &other,
        other_fence,
        1,
        vec![Bytes::from_static(b"{}")],
        None,
    )
    .await
    .unwrap();
    waiter.await.unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(600),
        "another run's notification is no wake-up for this one"
    );
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_lost_connection_loses_nothing_committed_and_the_store_reconnects() {
    let Some((a, admin, schema)) = store("wake_lost", RunLimits::shared()).await else {
        return;
    };
    let a = Arc::new(a);
    let b = PostgresRunStore::connect(&url(), &schema, RunLimits::shared())
        .await
        .unwrap();
    let (key, fence) = run(&b, "survives").await;
    b.append(&key, fence, 1, vec![Bytes::from_static(b"{\"n\":1}")], None)
        .await
        .unwrap();
    let _ = a.read(&key, 0, 10).await.unwrap();
    // Every connection of the stores on this schema is cut, the listeners' too.
    let cut = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&format!("agui-sdk-postgres {schema}")],
        )
        .await
        .unwrap();
    assert!(cut.len() >= 3, "the pools' and the listeners' connections");
    // An operation may fail once, saying why; the pool reconnects.
    let mut attempts = 0;
    let batch = loop {
        attempts += 1;
        match a.read(&key, 0, 10).await {
            Ok(b) => break b,
            Err(RunStoreError::Unavailable(e)) if attempts < 5 => {
                assert!(!e.to_string().is_empty());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("the store does not reconnect: {e}"),
        }
    };
    assert_eq!(
        batch.events,
        vec![Bytes::from_static(b"{\"n\":1}")],
        "what was committed is kept"
    );
    // The listener reconnects within its backoff: wake-ups come again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut head = 1;
    let mut waited = Duration::MAX;
    for _ in 0..3 {
        // The producer's first append after the cut may fail: it retries from its head.
        waited = loop {
            let t = tokio::time::timeout(
                Duration::from_secs(5),
                wake_latency_or_error(&a, &b, &key, fence, head),
            )
            .await
            .expect("an append and its wake-up end");
            match t {
                Some(w) => break w,
                None => continue,
            }
        };
        head += 1;
        if waited < FALLBACK / 4 {
            break;
        }
    }
    assert!(
        waited < FALLBACK / 4,
        "woken by notification after the reconnect: {waited:?}"
    );
    drop_schema(&admin, &schema).await;
}

/// As [`wake_latency`], `None` when the append fails (a pooled connection was cut).
async fn wake_latency_or_error(
    a: &Arc<PostgresRunStore>,
    b: &PostgresRunStore,
    key: &RunKey,
    fence: Fence,
    after: u64,
) -> Option<Duration> {
    let waiter = {
        let a = Arc::clone(a);
        let key = key.clone();
        tokio::spawn(async move {
            a.wait(&key, after, Duration::from_secs(10)).await;
            tokio::time::Instant::now()
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let appended = tokio::time::Instant::now();
    match b
        .append(key, fence, after + 1, vec![Bytes::from_static(b"{}")], None)
        .await
    {
        Ok(()) => Some(waiter.await.unwrap().saturating_duration_since(appended)),
        Err(RunStoreError::Unavailable(_)) => {
            waiter.abort();
            None
        }
        Err(e) => panic!("append after the cut: {e}"),
    }
}
