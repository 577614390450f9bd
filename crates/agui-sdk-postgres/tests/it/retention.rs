//! Retention: ended runs and idle threads expire after their configured times.

use std::time::Duration;

use agui_sdk_agent::runs::{
    owner_scope, Created, RunLimits, RunLog, RunStatus, RunStoreError, ThreadEntry, ThreadIndex,
    ThreadKey, ThreadQuery,
};
use agui_sdk_postgres::Swept;
use bytes::Bytes;

use crate::{drop_schema, new_run, store};

async fn count(admin: &tokio_postgres::Client, schema: &str, table: &str) -> i64 {
    admin
        .query_one(&format!("SELECT count(*) FROM {schema}.{table}"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn ended_runs_and_idle_threads_expire_and_running_ones_stay() {
    let Some((s, admin, schema)) = store(
        "retention",
        RunLimits::shared()
            .retention(Duration::from_millis(1_500))
            .thread_idle_ttl(Duration::from_millis(1_500)),
    )
    .await
    else {
        return;
    };
    let event = || vec![Bytes::from_static(b"{}"), Bytes::from_static(b"{}")];
    let ended = new_run("ended", None);
    let key = ended.key.clone();
    let Created::New(f) = s.create(ended).await.unwrap() else {
        panic!("a new run")
    };
    s.append(&key, f, 1, event(), Some(RunStatus::Finished))
        .await
        .unwrap();
    let running = new_run("running", None);
    let live = running.key.clone();
    let Created::New(lf) = s.create(running).await.unwrap() else {
        panic!("a new run")
    };
    s.append(&live, lf, 1, event(), None).await.unwrap();
    let thread = ThreadKey::derive("owner", "idle");
    let run = new_run("thread-run", Some(thread.clone()));
    let tkey = run.key.clone();
    let Created::New(tf) = s.create(run).await.unwrap() else {
        panic!("a new run")
    };
    let entry = ThreadEntry::from_parts(Bytes::from_static(b"{}\n"), vec!["m".into()]);
    s.end_thread_run(&tkey, tf, 1, event(), RunStatus::Finished, entry)
        .await
        .unwrap();

    // Within their time, all are kept.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.read(&key, 0, 10).await.unwrap().events.len(), 2);
    assert!(s.thread(&thread).await.unwrap().is_some());
    // Past it, the ended runs and the idle thread are gone: from every read at once,
    // and from the tables by the store's own sweep.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(s.record(&key).await.unwrap().is_none());
    assert!(matches!(
        s.read(&key, 0, 10).await,
        Err(RunStoreError::NotFound)
    ));
    assert!(s.thread(&thread).await.unwrap().is_none());
    assert!(s
        .list_threads(&owner_scope("owner"), &ThreadQuery::first(10))
        .await
        .unwrap()
        .is_empty());
    // The sweep runs every quarter of the shorter time: wait for it, a few at most.
    for _ in 0..50 {
        if count(&admin, &schema, "runs").await == 1 && count(&admin, &schema, "threads").await == 0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        count(&admin, &schema, "runs").await,
        1,
        "only the running run is left"
    );
    assert_eq!(count(&admin, &schema, "events").await, 2, "its events");
    assert_eq!(count(&admin, &schema, "threads").await, 0);
    assert_eq!(count(&admin, &schema, "thread_history").await, 0);
    let held: i64 = admin
        .query_one(
            &format!("SELECT sum(n)::bigint FROM {schema}.thread_count"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(held, 0, "the thread count follows the sweep");
    assert_eq!(
        s.sweep().await.unwrap(),
        Swept::default(),
        "nothing is left to sweep"
    );
    let r = s.record(&live).await.unwrap().unwrap();
    assert_eq!(
        (r.status, r.head),
        (RunStatus::Running, 2),
        "a running run stays"
    );
    // The key of an expired run starts a new run.
    let Created::New(_) = s.create(new_run("ended", None)).await.unwrap() else {
        panic!("an expired run's key is free")
    };
    drop_schema(&admin, &schema).await;
}
