//! The in-memory thread store keeps the thread-store contract (the Redis store runs
//! the same check in `agui-redis`).

use std::sync::Arc;

use agui_server::threads::contract::{check, ContractSetup};
use agui_server::threads::{InMemoryThreadStore, ThreadLimits};

#[tokio::test]
async fn the_in_memory_thread_store_keeps_the_contract() {
    let mut limits = ThreadLimits::default();
    limits.max_run_events = 8;
    check(
        Arc::new(InMemoryThreadStore::new(limits)),
        ContractSetup {
            namespace: "mem".into(),
            max_run_events: 8,
        },
    )
    .await;
}
