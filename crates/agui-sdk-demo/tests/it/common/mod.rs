//! Shared helpers for the tests that run the server with the demo agents: the test
//! kit's (a router served on a loopback port, an HTTP/1.1 client over a raw socket, the
//! small agents of the runtime tests), and the demo agents behind them.

use std::time::Duration;

use agui_sdk_server::Shutdown;

pub(crate) use agui_sdk_testkit::http::Client;
pub(crate) use agui_sdk_testkit::server::*;

/// The demo agents, with a 4 KiB body limit.
pub(crate) async fn demo_server() -> TestServer {
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::ZERO)
        .body_limit(4096)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}
