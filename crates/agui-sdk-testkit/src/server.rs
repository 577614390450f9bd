//! Servers on a free loopback port (`127.0.0.1:0`) in the test's runtime, and the small
//! agents and helpers the server tests share.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::{
    serve, serve_with, Agent, AgentError, AgentRouter, AgentStream, RunContext, ServeLimits,
    Shutdown,
};
use futures_util::StreamExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A server running in the test's runtime, stopped when dropped: its switch is
/// triggered and its task aborted (the listener closes).
#[derive(Debug)]
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its switch (the router's, for [`start`]).
    pub shutdown: Shutdown,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// `http://ADDR`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://ADDR` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The serving task, to await its end (after triggering [`TestServer::shutdown`]);
    /// dropping the server then no longer aborts it.
    pub fn take_task(&mut self) -> JoinHandle<std::io::Result<()>> {
        self.task.take().expect("the task is taken once")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free loopback port");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    (listener, addr)
}

/// Serves `router` with `agui_sdk_server::serve` on a free loopback port; `shutdown`
/// must be the router's switch.
pub async fn start(router: axum::Router, shutdown: Shutdown) -> TestServer {
    let (listener, addr) = listener().await;
    let task = tokio::spawn(serve(listener, router, shutdown.clone()));
    TestServer {
        addr,
        shutdown,
        task: Some(task),
    }
}

/// [`start`] with `agui_sdk_server::serve_with` and its limits.
pub async fn start_with(
    router: axum::Router,
    shutdown: Shutdown,
    limits: ServeLimits,
) -> TestServer {
    let (listener, addr) = listener().await;
    let task = tokio::spawn(serve_with(listener, router, shutdown.clone(), limits));
    TestServer {
        addr,
        shutdown,
        task: Some(task),
    }
}

/// Serves any `router` with plain `axum::serve` (no limits, no signal handling) on a
/// free loopback port, until its [`TestServer::shutdown`] is triggered or it is dropped.
pub async fn spawn(router: axum::Router) -> TestServer {
    let (listener, addr) = listener().await;
    let shutdown = Shutdown::new();
    let stop = shutdown.triggered();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stop)
            .await
    });
    TestServer {
        addr,
        shutdown,
        task: Some(task),
    }
}

/// Serves `agent` alone as `/{name}`, with verification on.
pub async fn serve_one(name: &str, agent: impl Agent) -> TestServer {
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent(name, agent)
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}

/// A minimal run input body: one user message `text`.
pub fn input(thread: &str, run: &str, text: &str) -> serde_json::Value {
    serde_json::json!({
        "threadId": thread,
        "runId": run,
        "messages": [{ "id": format!("{run}-u"), "role": "user", "content": text }],
    })
}

/// The event type names of `events`.
pub fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.event_type().as_str()).collect()
}

/// The message and code of a `RUN_ERROR`; panics on any other event.
pub fn run_error(e: &Event) -> (&str, Option<&str>) {
    match e {
        Event::RunError(r) => (r.message.as_str(), r.code.as_deref()),
        other => panic!("expected RUN_ERROR, got {}", other.event_type()),
    }
}

/// Waits until `cond` holds, failing after `secs` seconds.
pub async fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met in time"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// An agent over a fixed list of results (an `Err` is a public agent error).
#[derive(Debug)]
pub struct Scripted(pub Vec<Result<Event, &'static str>>);

impl Agent for Scripted {
    fn run(&self, _input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        let items: Vec<Result<Event, AgentError>> = self
            .0
            .iter()
            .map(|r| r.clone().map_err(AgentError::public))
            .collect();
        futures_util::stream::iter(items).boxed()
    }
}

/// Sets its flag when dropped (to see that an agent's work was dropped).
#[derive(Debug)]
pub struct DropFlag(pub Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
