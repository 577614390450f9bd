//! A Rust team checking its own AG-UI router in its own `cargo test`: serve the router
//! on a loopback port, run every scenario against each agent, fail with the report.
//!
//! Here the router is this SDK's demo agents; put yours in its place. In a test:
//!
//! ```text
//! #[tokio::test]
//! async fn our_agents_conform() {
//!     let report = check(my_router()).await;
//!     assert!(report.iter().all(|r| r.passed()));
//! }
//! ```
//!
//! Run it with `cargo run -p agui-sdk-check --example check_my_router`. In a crate of
//! your own this needs, besides `agui-sdk-check` and `tokio`, `agui-sdk-server` and (for
//! the demo agents) `agui-sdk-demo`.

use std::time::Duration;

use agui_sdk_check::{Checker, Report};

/// Serves `router` on a free loopback port and checks each of `agents` there.
async fn check(router: agui_sdk_server::axum::Router, agents: &[&str]) -> Vec<Report> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { agui_sdk_server::axum::serve(listener, router).await });
    let mut reports = Vec::new();
    for name in agents {
        let report = Checker::new(format!("http://{addr}/{name}"))
            .timeout(Duration::from_secs(5))
            .run()
            .await
            .expect("the router answers");
        reports.push(report);
    }
    reports
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Your router here: `AgentRouter::new().agent("support", my_agent).into_router()`.
    let router = agui_sdk_demo::router(Duration::ZERO).into_router();
    let reports = check(router, &agui_sdk_demo::NAMES).await;
    let mut failed = false;
    for r in &reports {
        print!("{}", r.to_text(false));
        failed |= !r.passed();
    }
    if failed {
        std::process::exit(1);
    }
}
