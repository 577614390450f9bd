//! The CopilotKit runtime routes: the contract CopilotKit's React client relies on
//! (info, run, connect, stop, single route, errors, CORS), thread history, live attach,
//! stop, eviction and the downgrade for pre-1.0 clients. The helpers are here, the
//! tests in `contract` (the routes, history, live attach and stop) and `bounds` (what
//! the runtime refuses or limits: eviction, CORS and cross-site requests, memory
//! budgets, pre-1.0 clients, response heads).

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::semantics::Verifier;
use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::copilotkit::{AllowedOrigins, CopilotRuntime, Cors};
use agui_sdk_server::runs::RunLimits;
use agui_sdk_server::{agent_fn, AgentError, Emitter, RunContext, Shutdown};
use common::{start, types, Client, DropFlag, TestServer};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

mod bounds;
mod contract;

/// A runtime at `/copilotkit` (nested, as an application mounts it).
async fn serve(runtime: CopilotRuntime) -> TestServer {
    let shutdown = Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.verify = true;
    config.body_limit = 64 * 1024;
    let app = axum::Router::new().nest(
        "/copilotkit",
        runtime
            .config(config)
            .shutdown(shutdown.clone())
            .into_router(),
    );
    start(app, shutdown).await
}

/// The body CopilotKit's client sends, with `messages`.
fn body(thread: &str, run: &str, messages: Value) -> Value {
    json!({
        "threadId": thread, "runId": run, "tools": [], "context": [],
        "forwardedProps": {}, "state": {}, "messages": messages,
    })
}

fn user(id: &str, text: &str) -> Value {
    json!({ "id": id, "role": "user", "content": text })
}

/// Replies `echo: <last user text>`.
fn echo() -> agui_sdk_server::FnAgent {
    agent_fn(
        |input: RunAgentInput, _ctx: RunContext, tx: Emitter| async move {
            let text = input.last_user_text().unwrap_or_default();
            let id = format!("{}-reply", input.run_id);
            tx.text_message(&id, [format!("echo: {text}")], Duration::ZERO)
                .await?;
            Ok::<(), AgentError>(())
        },
    )
}

/// Starts a text message and a tool call, then waits for a permit from `gate` before
/// finishing; `dropped` is set when the agent's future is dropped.
fn gated(gate: Arc<Semaphore>, dropped: Arc<AtomicBool>) -> agui_sdk_server::FnAgent {
    agent_fn(move |input: RunAgentInput, _ctx: RunContext, tx: Emitter| {
        let gate = gate.clone();
        let flag = DropFlag(dropped.clone());
        async move {
            let _flag = flag;
            let m = format!("{}-m", input.run_id);
            tx.emit(Event::text_message_start(&m)).await?;
            tx.emit(Event::text_message_content(&m, "partial")).await?;
            tx.emit(Event::tool_call_start(
                format!("{}-c", input.run_id),
                "pick",
            ))
            .await?;
            let _permit = gate.acquire().await.map_err(AgentError::internal)?;
            tx.emit(Event::tool_call_end(format!("{}-c", input.run_id)))
                .await?;
            tx.emit(Event::text_message_end(&m)).await?;
            Ok::<(), AgentError>(())
        }
    })
}

async fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> Client {
    Client::post_json(addr, path, body).await
}

fn verify_all(events: &[Event]) {
    let mut v = Verifier::new();
    for (i, e) in events.iter().enumerate() {
        v.push(e)
            .unwrap_or_else(|err| panic!("event {i} ({}): {err}", e.event_type()));
    }
}

fn input_messages(e: &Event) -> Vec<String> {
    match e {
        Event::RunStarted(s) => s
            .input
            .as_ref()
            .map(|i| i.messages.iter().map(|m| m.id().to_owned()).collect())
            .unwrap_or_default(),
        other => panic!("expected RUN_STARTED, got {}", other.event_type()),
    }
}
