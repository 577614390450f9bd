//! The thread count in shards (migration 5): creations made together on many
//! connections, by two replicas, are counted in several shards, and the thread cap
//! holds exactly under them.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::{Created, NewRun, RunKey, RunLimits, RunLog, RunStoreError, ThreadKey};
use agui_sdk_postgres::PostgresRunStore;
use futures_util::future::join_all;

use crate::{drop_schema, store, url};

fn thread_run(i: usize) -> NewRun {
    let thread = ThreadKey::derive("count", &format!("t{i}"));
    NewRun {
        key: RunKey::derive("count", "agent", &format!("r{i}")),
        run_id: format!("r{i}"),
        thread_id: format!("t{i}"),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "replica".into(),
        lease: Duration::from_secs(60),
        thread: Some(thread),
    }
}

/// `n` new threads (numbered from `from`) created at once, half by each store, each keeping a running run:
/// how many were created and how many refused as full.
async fn create_together(
    stores: &[Arc<PostgresRunStore>; 2],
    from: usize,
    n: usize,
) -> (usize, usize) {
    let results = join_all((from..from + n).map(|i| {
        let s = stores[i % 2].clone();
        async move { s.create(thread_run(i)).await }
    }))
    .await;
    let mut made = (0, 0);
    for r in results {
        match r {
            Ok(Created::New(_)) => made.0 += 1,
            Err(RunStoreError::Full(_)) => made.1 += 1,
            other => panic!("a new thread is created or refused as full: {other:?}"),
        }
    }
    made
}

async fn counted(admin: &tokio_postgres::Client, schema: &str) -> (i64, i64, i64) {
    let row = admin
        .query_one(
            &format!(
                "SELECT (SELECT sum(n)::bigint FROM {schema}.thread_count), \
                 (SELECT count(*) FROM {schema}.thread_count WHERE n <> 0), \
                 (SELECT count(*) FROM {schema}.threads)"
            ),
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_made_together_are_counted_in_shards_and_the_cap_holds_exactly() {
    let limits = RunLimits::shared().max_threads(40);
    let Some((a, admin, schema)) = store("thread_count", limits.clone()).await else {
        return;
    };
    let b = PostgresRunStore::connect(&url(), &schema, limits)
        .await
        .unwrap();
    let stores = [Arc::new(a), Arc::new(b)];
    // Far from the cap: each is counted, in more than one shard.
    assert_eq!(create_together(&stores, 0, 16).await, (16, 0));
    let (sum, shards, threads) = counted(&admin, &schema).await;
    assert_eq!((sum, threads), (16, 16));
    assert!(shards > 1, "the creations went to {shards} shard(s)");
    // Up to the cap and past it, every thread running a run: exactly the cap is held.
    let more = create_together(&stores, 100, 64).await;
    let (sum, _, threads) = counted(&admin, &schema).await;
    assert_eq!((sum, threads), (40, 40), "created and refused: {more:?}");
    assert_eq!(more, (24, 40));
    drop_schema(&admin, &schema).await;
}
