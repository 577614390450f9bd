//! Shared helpers for the tests that run the server with the demo agents: the server
//! tests' own helpers (start a router on a loopback port, a small HTTP/1.1 client over a
//! raw socket), from `agui-sdk-server/tests/common`, and the demo agents behind them.
#![allow(dead_code, unused_imports)]

use std::time::Duration;

use agui_sdk_server::Shutdown;

#[path = "../../../agui-sdk-server/tests/common/mod.rs"]
mod server;
pub use server::*;

/// The demo agents, with a 4 KiB body limit.
pub async fn demo_server() -> TestServer {
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::ZERO)
        .body_limit(4096)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}
