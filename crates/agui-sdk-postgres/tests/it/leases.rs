//! The leases' part of the store contract, and leases shared by two replicas.

use std::time::Duration;

use agui_sdk_agent::runs::contract::{check_leases, ContractSetup};
use agui_sdk_agent::runs::{
    Created, Leases, NewRun, RunKey, RunLimits, RunLog, RunStatus, RunStoreError,
};
use agui_sdk_postgres::PostgresRunStore;
use bytes::Bytes;

use crate::{drop_schema, store, url};

#[tokio::test]
async fn the_leases_keep_their_part_of_the_contract() {
    let Some((store, admin, schema)) =
        store("leases_contract", RunLimits::shared().max_events_per_run(8)).await
    else {
        return;
    };
    let setup = ContractSetup {
        namespace: schema.clone(),
        max_events_per_run: 8,
        leases: true,
    };
    check_leases(&store, &setup).await;
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_replica_takes_over_the_run_of_a_replica_whose_lease_ran_out() {
    let Some((a, admin, schema)) = store("leases_replicas", RunLimits::shared()).await else {
        return;
    };
    // Another replica: another pool on the same schema.
    let b = PostgresRunStore::connect(&url(), &schema, RunLimits::shared())
        .await
        .expect("a second replica connects");
    let key = RunKey::derive("owner", "agent", "replicas");
    let run = NewRun {
        key: key.clone(),
        run_id: "replicas".into(),
        thread_id: "thread".into(),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "replica-a".into(),
        lease: Duration::from_millis(300),
        thread: None,
    };
    let Created::New(fa) = a.create(run).await.unwrap() else {
        panic!("a new run")
    };
    a.append(&key, fa, 1, vec![Bytes::from_static(b"{}")], None)
        .await
        .unwrap();
    // A heartbeat keeps the lease: replica b sees nothing to take over.
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.heartbeat(&key, fa).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!b.expired_leases(100).await.unwrap().contains(&key));
    assert!(b.take_over(&key, "replica-b").await.unwrap().is_none());
    // Replica a stops heartbeating: b finds the lease expired and takes the run over.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(b.expired_leases(100).await.unwrap(), vec![key.clone()]);
    let (fb, head) = b
        .take_over(&key, "replica-b")
        .await
        .unwrap()
        .expect("an expired lease is taken over");
    assert_eq!(head, 1);
    assert!(matches!(
        a.heartbeat(&key, fa).await,
        Err(RunStoreError::Fenced)
    ));
    assert!(matches!(
        a.append(&key, fa, 2, vec![Bytes::from_static(b"{}")], None)
            .await,
        Err(RunStoreError::Fenced)
    ));
    b.append(
        &key,
        fb,
        2,
        vec![Bytes::from_static(b"{}")],
        Some(RunStatus::Lost),
    )
    .await
    .unwrap();
    let r = a.record(&key).await.unwrap().unwrap();
    assert_eq!(
        (r.status, r.head, r.owner_replica.as_str()),
        (RunStatus::Lost, 2, "replica-b")
    );
    assert!(b.expired_leases(100).await.unwrap().is_empty());
    drop_schema(&admin, &schema).await;
}
