//! `serve` handles SIGTERM: the switch is triggered and serving ends. (A test binary of
//! its own: the signal goes to the whole process.)

use std::time::Duration;

use agui_sdk_server::{serve, AgentRouter, Shutdown};

#[tokio::test]
async fn serve_ends_on_sigterm_and_triggers_the_switch() {
    let shutdown = Shutdown::new();
    let router = AgentRouter::new().shutdown(shutdown.clone()).into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(serve(listener, router, shutdown.clone()));
    // Serving: a connection is accepted.
    tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(!shutdown.is_triggered());

    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let served = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("serve returned after SIGTERM")
        .unwrap();
    assert!(served.is_ok());
    assert!(shutdown.is_triggered());
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the listener is closed"
    );
}
