//! The run-store contract against a real Redis (`AGUI_TEST_REDIS_URL`, by default
//! `redis://127.0.0.1:6379`). Without a reachable Redis the tests print `skipped …`,
//! except under `AGUI_REQUIRE_REDIS=1` (set by `scripts/test-all.sh`, and so CI), where
//! that is a failure.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::contract::{check, check_thread_expiry, ContractSetup};
use agui_sdk_agent::runs::{
    Created, NewRun, RunKey, RunLog, RunStatus, ThreadEntry, ThreadIndex, ThreadKey,
};
use agui_sdk_redis::{RedisRunStore, RunLimits};
use bytes::Bytes;

use crate::common;

use common::url;

/// A store under a fresh prefix, or `None` (after saying why) when Redis is not
/// reachable and not required.
async fn store(test: &str, limits: RunLimits) -> Option<(RedisRunStore, String)> {
    let prefix = common::prefix();
    let s = common::connect(test, &prefix, limits).await?;
    Some((s, prefix))
}

#[tokio::test]
async fn the_redis_store_keeps_the_contract() {
    let Some((s, prefix)) = store(
        "the_redis_store_keeps_the_contract",
        RunLimits::shared().max_events_per_run(8),
    )
    .await
    else {
        return;
    };
    check(
        Arc::new(s),
        ContractSetup {
            namespace: prefix,
            max_events_per_run: 8,
            leases: true,
        },
    )
    .await;
}

#[tokio::test]
async fn the_redis_stores_lists_leave_out_threads_whose_keys_expired() {
    let ttl = Duration::from_secs(2);
    let Some((s, prefix)) = store(
        "the_redis_stores_lists_leave_out_expired_threads",
        RunLimits::shared().thread_idle_ttl(ttl),
    )
    .await
    else {
        return;
    };
    let setup = ContractSetup {
        namespace: prefix.clone(),
        max_events_per_run: 8,
        leases: true,
    };
    check_thread_expiry(Arc::new(s), setup, ttl).await;
    // The expired threads left every index set on the way: only the listed-thread hash
    // and sets of the one thread forgotten at the end could remain, and they did not.
    let client = redis::Client::open(url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:owner:*"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(keys.is_empty(), "no index set is left: {keys:?}");
    let listed: u64 = redis::cmd("HLEN")
        .arg(format!("{prefix}:listed"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(listed, 0, "no thread is left listed");
}

#[tokio::test]
async fn a_finished_run_expires_after_its_retention_and_a_second_store_sees_the_same_run() {
    let Some((a, prefix)) = store(
        "a_finished_run_expires",
        RunLimits::shared().retention(Duration::from_secs(120)),
    )
    .await
    else {
        return;
    };
    // A second store on the same prefix: another replica.
    let b = RedisRunStore::connect(&url(), &prefix, RunLimits::shared())
        .await
        .unwrap();
    let key = RunKey::derive("owner", "agent", "r1");
    let fence = match a
        .create(NewRun {
            key: key.clone(),
            run_id: "r1".into(),
            thread_id: "t".into(),
            agent: "agent".into(),
            body_hash: "h".into(),
            replica: "a".into(),
            lease: Duration::from_secs(10),
            thread: None,
        })
        .await
        .unwrap()
    {
        Created::New(f) => f,
        Created::Existing(_) => panic!("fresh key"),
    };
    let waiter = {
        let key = key.clone();
        tokio::spawn(async move {
            let t0 = tokio::time::Instant::now();
            b.wait(&key, 0, Duration::from_secs(5)).await;
            let waited = t0.elapsed();
            (b.read(&key, 0, 10).await.unwrap(), waited)
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.append(
        &key,
        fence,
        1,
        vec![Bytes::from_static(
            b"{\"type\":\"RUN_ERROR\",\"message\":\"x\"}",
        )],
        Some(RunStatus::Error),
    )
    .await
    .unwrap();
    let (batch, waited) = waiter.await.unwrap();
    assert!(
        waited < Duration::from_secs(2),
        "the other replica was woken by pub/sub ({waited:?})"
    );
    assert_eq!(batch.events.len(), 1);
    assert_eq!(batch.status, RunStatus::Error);
    let ttl = a.log_ttl(&key).await.unwrap().expect("a TTL on the log");
    assert!(ttl > 0 && ttl <= 120, "{ttl}");
}

/// Wake-ups go only where a viewer waits: a replica whose viewers wait on one run
/// receives none of another run's, and is woken at once by its own.
#[tokio::test]
async fn a_replica_receives_only_the_wake_ups_of_the_runs_it_waits_on() {
    let Some((a, prefix)) = store("targeted_wake_ups", RunLimits::shared()).await else {
        return;
    };
    let b = Arc::new(
        RedisRunStore::connect(&url(), &prefix, RunLimits::shared())
            .await
            .unwrap(),
    );
    let mut fences = Vec::new();
    for run in ["watched", "other"] {
        let key = RunKey::derive("owner", "agent", run);
        let created = a
            .create(NewRun {
                key: key.clone(),
                run_id: run.into(),
                thread_id: "t".into(),
                agent: "agent".into(),
                body_hash: "h".into(),
                replica: "a".into(),
                lease: Duration::from_secs(10),
                thread: None,
            })
            .await
            .unwrap();
        let Created::New(fence) = created else {
            panic!("fresh key")
        };
        fences.push((key, fence));
    }
    let (watched, watched_fence) = fences[0].clone();
    let (other, other_fence) = fences[1].clone();
    let waiter = {
        let (b, key) = (b.clone(), watched.clone());
        tokio::spawn(async move {
            let t0 = tokio::time::Instant::now();
            b.wait(&key, 0, Duration::from_secs(10)).await;
            t0.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A hundred appends to a run nobody on B waits on: B hears none of them.
    for seq in 1..=100u64 {
        a.append(
            &other,
            other_fence,
            seq,
            vec![Bytes::from(format!(
                "{{\"type\":\"CUSTOM\",\"name\":\"n\",\"value\":{seq}}}"
            ))],
            None,
        )
        .await
        .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(b.wakeups_received(), 0, "B received other runs' wake-ups");
    assert!(!waiter.is_finished());
    let t_append = tokio::time::Instant::now();
    a.append(
        &watched,
        watched_fence,
        1,
        vec![Bytes::from_static(
            b"{\"type\":\"CUSTOM\",\"name\":\"n\",\"value\":0}",
        )],
        None,
    )
    .await
    .unwrap();
    let waited = waiter.await.unwrap();
    assert!(
        t_append.elapsed() < Duration::from_millis(900),
        "woken by its wake-up, not by polling ({waited:?} in all)"
    );
    assert_eq!(b.wakeups_received(), 1);
}

/// The byte caps: a run's log keeps at most `max_bytes_per_run` of events (the oldest
/// go first, the last always stays), a thread's history at most `max_history_bytes`
/// of compacted runs (the last run always stays).
#[tokio::test]
async fn a_runs_log_and_a_threads_history_are_bounded_by_bytes() {
    let limits = RunLimits::shared()
        .max_bytes_per_run(250)
        .max_history_bytes(300);
    let Some((s, prefix)) = store(
        "a_runs_log_and_a_threads_history_are_bounded_by_bytes",
        limits,
    )
    .await
    else {
        return;
    };
    let event = |i: u64| Bytes::from(format!("{{\"type\":\"CUSTOM\",\"name\":\"{i:0>73}\"}}"));
    assert_eq!(event(1).len(), 100);
    let new_run = |name: &str, thread: Option<ThreadKey>| NewRun {
        key: RunKey::derive(&prefix, "agent", name),
        run_id: name.into(),
        thread_id: "t".into(),
        agent: "agent".into(),
        body_hash: String::new(),
        replica: "r".into(),
        lease: Duration::from_secs(10),
        thread,
    };
    let run = new_run("bytes", None);
    let key = run.key.clone();
    let Created::New(fence) = s.create(run).await.unwrap() else {
        panic!("a new run")
    };
    for i in 1..=5 {
        s.append(&key, fence, i, vec![event(i)], None)
            .await
            .unwrap();
    }
    let r = s.record(&key).await.unwrap().unwrap();
    assert_eq!(
        (r.oldest, r.head),
        (4, 5),
        "250 bytes keep the last two events"
    );
    let b = s.read(&key, 3, 10).await.unwrap();
    assert_eq!(b.events, vec![event(4), event(5)]);
    // One event larger than the cap is still kept.
    let big = Bytes::from(format!(
        "{{\"type\":\"CUSTOM\",\"name\":\"{}\"}}",
        "x".repeat(400)
    ));
    s.append(&key, fence, 6, vec![big.clone()], None)
        .await
        .unwrap();
    let b = s.read(&key, 5, 10).await.unwrap();
    assert_eq!(b.events, vec![big]);

    // A history of three runs of about 150 bytes each keeps the last two.
    let thread = ThreadKey::derive(&prefix, "bytes-thread");
    for name in ["h1", "h2", "h3"] {
        let run = new_run(name, Some(thread.clone()));
        let key = run.key.clone();
        let Created::New(fence) = s.create(run).await.unwrap() else {
            panic!("a new run")
        };
        let text = format!("{{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"{name}\",\"pad\":\"{:0>80}\"}}\n", 0);
        let entry = ThreadEntry::from_parts(Bytes::from(text), Vec::new());
        s.end_thread_run(&key, fence, 1, vec![event(1)], RunStatus::Finished, entry)
            .await
            .unwrap();
    }
    let t = s.thread(&thread).await.unwrap().unwrap();
    let runs: Vec<String> = t
        .history
        .iter()
        .map(|e| String::from_utf8_lossy(&e.events).into_owned())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].contains("\"h2\"") && runs[1].contains("\"h3\""));
}
