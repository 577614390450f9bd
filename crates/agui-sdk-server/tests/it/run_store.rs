//! The run-store contract (`agui_sdk_server::runs::contract`) against the in-memory store.
//! The Redis store runs the same check in the `agui-sdk-redis` crate.

use std::sync::Arc;

use agui_sdk_server::runs::contract::{check, ContractSetup};
use agui_sdk_server::runs::{InMemoryRunStore, RunLimits};

#[tokio::test]
async fn the_in_memory_store_keeps_the_contract() {
    let store = Arc::new(InMemoryRunStore::new(
        RunLimits::default().max_events_per_run(8),
    ));
    check(
        store,
        ContractSetup {
            namespace: "memory".into(),
            max_events_per_run: 8,
            leases: false,
        },
    )
    .await;
}
