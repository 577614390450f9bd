//! The run log's part of the store contract.

use std::sync::Arc;

use agui_sdk_agent::runs::contract::{check_run_log, ContractSetup};
use agui_sdk_agent::runs::{Created, NewRun, RunKey, RunLimits, RunLog, RunStatus};
use bytes::Bytes;

use crate::{drop_schema, store};

#[tokio::test]
async fn the_run_log_keeps_its_part_of_the_contract() {
    let Some((store, admin, schema)) = store(
        "run_log_contract",
        RunLimits::shared().max_events_per_run(8),
    )
    .await
    else {
        return;
    };
    let setup = ContractSetup {
        namespace: schema.clone(),
        max_events_per_run: 8,
        leases: false,
    };
    check_run_log(Arc::new(store), &setup).await;
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_run_keeps_at_most_its_bytes_and_always_its_last_event() {
    let Some((store, admin, schema)) =
        store("run_log_bytes", RunLimits::shared().max_bytes_per_run(100)).await
    else {
        return;
    };
    let key = RunKey::derive("owner", "agent", "bytes");
    let run = NewRun {
        key: key.clone(),
        run_id: "bytes".into(),
        thread_id: "thread".into(),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "replica".into(),
        lease: std::time::Duration::from_secs(60),
        thread: None,
    };
    let Created::New(fence) = store.create(run).await.unwrap() else {
        panic!("a new run")
    };
    // Ten events of 30 bytes: three fit in 100.
    let event = |i: u64| Bytes::from(format!("{{\"type\":\"STEP\",\"n\":\"{i:08}\"}}"));
    assert_eq!(event(1).len(), 30);
    for i in 1..=10 {
        store
            .append(&key, fence, i, vec![event(i)], None)
            .await
            .unwrap();
    }
    let r = store.record(&key).await.unwrap().unwrap();
    assert_eq!(
        (r.head, r.oldest),
        (10, 8),
        "the last three of 30 bytes are kept"
    );
    let b = store.read(&key, 7, 100).await.unwrap();
    assert_eq!(b.events, vec![event(8), event(9), event(10)]);
    // One event larger than the cap is kept alone.
    let big = Bytes::from(vec![b'x'; 500]);
    store
        .append(
            &key,
            fence,
            11,
            vec![big.clone()],
            Some(RunStatus::Finished),
        )
        .await
        .unwrap();
    let r = store.record(&key).await.unwrap().unwrap();
    assert_eq!((r.head, r.oldest, r.status), (11, 11, RunStatus::Finished));
    assert_eq!(store.read(&key, 10, 100).await.unwrap().events, vec![big]);
    drop_schema(&admin, &schema).await;
}
