//! What the integration tests share: the agent served by `agui-sdk-server` with
//! verification on, a run's events as the client reads them, and the checks made on
//! them.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use agui_sdk_client::{Conversation, HttpAgent};
use agui_sdk_core::semantics::Verifier;
use agui_sdk_core::{Event, Message, RunAgentInput, Tool};
use agui_sdk_server::{AgentRouter, Shutdown};
use futures_util::StreamExt;
use serde_json::{json, Value};

/// The arguments of the `add` tool the tests' agents run.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Add {
    /// First.
    pub a: f64,
    /// Second.
    pub b: f64,
}

/// Serves `agent` at `/a` with verification on; its URL.
pub(crate) async fn serve(agent: agui_sdk_server::FnAgent) -> String {
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("a", agent)
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(agui_sdk_server::serve(listener, router, shutdown));
    format!("http://{addr}/a")
}

/// Serves `agent`, runs `input` against it and returns the events the client read.
pub(crate) async fn events_of(
    agent: agui_sdk_server::FnAgent,
    input: &RunAgentInput,
) -> Vec<Event> {
    let url = serve(agent).await;
    HttpAgent::builder(url)
        .build()
        .unwrap()
        .run(input)
        .filter_map(|e| async move { e.ok() })
        .collect()
        .await
}

/// A run of thread `t` whose one message is the user's `go`.
pub(crate) fn go() -> RunAgentInput {
    RunAgentInput::new("t", "r", vec![Message::user("u", "go")])
}

/// Panics unless `events` pass the verifier.
pub(crate) fn verify(events: &[Event]) {
    let mut v = Verifier::new();
    for (i, e) in events.iter().enumerate() {
        v.push(e).unwrap_or_else(|err| panic!("event {i}: {err}"));
    }
}

/// The events' types, in order.
pub(crate) fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.event_type().as_str()).collect()
}

/// The message and code of the `RUN_ERROR` that ends `events`.
pub(crate) fn run_error(events: &[Event]) -> (String, String) {
    match events.last() {
        Some(Event::RunError(e)) => (e.message.clone(), e.code.clone().unwrap_or_default()),
        other => panic!("expected RUN_ERROR last, got {other:?}"),
    }
}

/// A run offering the tool `copilotkitSuggest` whose `forwardedProps.toolChoice` names
/// `tool`, as CopilotKit's suggestion runs do.
pub(crate) fn tool_choice(tool: &str) -> RunAgentInput {
    serde_json::from_value(json!({
        "threadId": "t", "runId": "r",
        "tools": [{ "name": "copilotkitSuggest", "description": "Suggests.", "parameters": { "type": "object" } }],
        "forwardedProps": { "toolChoice": { "type": "function", "function": { "name": tool } } },
        "messages": [{ "id": "u", "role": "user", "content": "hi" }]
    }))
    .unwrap()
}

/// The frontend tool `show_card` a client offers.
pub(crate) fn card() -> Tool {
    Tool::new(
        "show_card",
        "Shows a card for a city.",
        json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
    )
}

/// A conversation of thread `t` with the agent served at `url`, the client offering
/// `show_card` and leaving its calls unanswered; the events it reads go to `sink`.
pub(crate) fn conversation(url: String, sink: Arc<Mutex<Vec<Event>>>) -> Conversation {
    Conversation::builder(HttpAgent::builder(url).build().unwrap())
        .thread_id("t")
        .on_event(move |e| sink.lock().unwrap().push(e.clone()))
        .tool(card(), |_args: Value| async move {
            Ok(agui_sdk_core::Content::from("shown"))
        })
        .answer_tools(0)
        .build()
}
