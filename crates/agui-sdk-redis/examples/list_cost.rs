//! What one filtered thread list costs in Redis: fills one owner with `n` threads
//! (each a thread run created and ended through the store), then times a list for an
//! agent none of them ran (`limit=1&agentId=nope` on the CopilotKit route) and reads
//! the store's count of index entries read.
//!
//! ```text
//! cargo run --release -p agui-sdk-redis --example list_cost -- 50000 [redis://127.0.0.1:6379]
//! ```
//!
//! The keys go under a fresh prefix, deleted at the end.

use std::time::{Duration, Instant};

use agui_sdk_agent::runs::{
    owner_scope, Created, NewRun, RunKey, RunLog, RunStatus, ThreadEntry, ThreadIndex, ThreadKey,
    ThreadQuery,
};
use agui_sdk_redis::{RedisRunStore, RunLimits};
use bytes::Bytes;
use futures_util::StreamExt;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5_000);
    let url = args
        .next()
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into());
    let prefix = format!("agui-list-cost-{}", std::process::id());
    let limits = RunLimits::shared().max_threads(n as u64 + 10);
    let store = RedisRunStore::connect(&url, &prefix, limits)
        .await
        .expect("connect to Redis");
    let owner = "list-cost-owner";
    let t0 = Instant::now();
    futures_util::stream::iter(0..n)
        .map(|i| {
            let store = &store;
            async move {
                let thread = ThreadKey::derive(owner, &format!("t{i}"));
                let run_id = format!("r{i}");
                let key = RunKey::derive(owner, "agent", &run_id);
                let new = NewRun {
                    key: key.clone(),
                    run_id,
                    thread_id: format!("t{i}"),
                    agent: "agent".into(),
                    body_hash: String::new(),
                    replica: "here".into(),
                    lease: Duration::from_secs(60),
                    thread: Some(thread),
                };
                let Ok(Created::New(fence)) = store.create(new).await else {
                    panic!("a new run")
                };
                let ev = Bytes::from_static(
                    b"{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n",
                );
                store
                    .end_thread_run(
                        &key,
                        fence,
                        1,
                        vec![ev.clone()],
                        RunStatus::Finished,
                        ThreadEntry::from_parts(ev, Vec::new()),
                    )
                    .await
                    .expect("end a run");
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<()>>()
        .await;
    let filled = t0.elapsed();
    let scope = owner_scope(owner);
    let query = ThreadQuery {
        agents: vec!["nope".into()],
        ..ThreadQuery::first(2)
    };
    let mut times = Vec::new();
    let reads_before = store.thread_index_reads();
    for _ in 0..5 {
        let t = Instant::now();
        let page = store.list_threads(&scope, &query).await.expect("list");
        times.push(t.elapsed());
        assert!(page.is_empty());
    }
    let reads = store.thread_index_reads() - reads_before;
    let all = store
        .list_threads(&scope, &ThreadQuery::first(3))
        .await
        .expect("list");
    assert_eq!(all.len(), 3.min(n), "the threads are listed");
    times.sort();
    println!(
        "{n} threads (filled in {filled:.1?}): a list for an agent none ran took {:.2?} (median of 5; min {:.2?}, max {:.2?}); index entries read by the 5: {reads}",
        times[2], times[0], times[4]
    );
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    // What the lists' indexes hold per thread, and what a thread's own keys hold.
    let mut index = 0u64;
    let owner_key = format!("{prefix}:owner:{{{scope}}}");
    for key in [
        format!("{owner_key}:open"),
        format!("{owner_key}:archived"),
        format!("{owner_key}:open:agent:agent"),
        format!("{owner_key}:archived:agent:agent"),
        format!("{prefix}:listed"),
    ] {
        let bytes: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut con)
            .await
            .unwrap();
        index += bytes.unwrap_or(0);
    }
    let thread = ThreadKey::derive(owner, "t0");
    let mut own = 0u64;
    for part in ["meta", "hist", "ids"] {
        let bytes: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(format!("{prefix}:th:{{{thread}}}:{part}"))
            .query_async(&mut con)
            .await
            .unwrap();
        own += bytes.unwrap_or(0);
    }
    println!(
        "the lists' indexes hold {} bytes a thread; a thread's own keys {own}",
        index / n as u64
    );
    // Clean up the prefix.
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
            .unwrap();
        if !keys.is_empty() {
            let _: () = redis::cmd("UNLINK")
                .arg(&keys)
                .query_async(&mut con)
                .await
                .unwrap();
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
}
