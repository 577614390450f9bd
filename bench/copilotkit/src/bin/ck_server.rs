//! The benchmark agent behind agui-server's CopilotKit runtime, mounted at
//! `/copilotkit`. `ck-server [PORT]` (default 0: a free port); prints `listening <port>`.
//!
//! Every run is answered at once (no pauses) with the reply shape that
//! `node/server.mjs` gives too, event for event:
//!
//! * `RUN_STARTED` (the runtime records the request's new messages in it);
//! * an assistant text message streamed as 40 word pieces;
//! * a call of the frontend tool `show_card` under that message, its JSON arguments
//!   streamed as 10 pieces;
//! * a `STATE_SNAPSHOT`;
//! * `RUN_FINISHED`.
//!
//! Ids derive from the run id; the text, arguments and state derive from the turn
//! number (how many user messages the request holds).
//!
//! `POST /debug/gc` answers `{}`: the driver calls it on both servers before reading
//! their resident size (the Node server collects garbage there).

use agui_core::event::ToolCallStart;
use agui_core::{Event, RunAgentInput};
use agui_core::types::Role;
use agui_server::copilotkit::CopilotRuntime;
use agui_server::{Agent, AgentError, AgentStream, RunContext};
use futures_util::StreamExt;
use serde_json::json;

/// Word pieces of the reply; piece `i` of turn `t` is `WORDS[(t + i) % WORDS.len()]`.
const WORDS: [&str; 16] = [
    "the", "ledger", "shows", "three", "open", "items", "for", "this", "week", "and",
    "two", "of", "them", "need", "review", "today",
];
const TEXT_PIECES: usize = 40;
const ARG_PIECES: usize = 10;

/// Splits ASCII `s` into `n` pieces at `floor(k * len / n)`.
fn pieces(s: &str, n: usize) -> Vec<String> {
    let len = s.len();
    (0..n)
        .map(|k| s[k * len / n..(k + 1) * len / n].to_owned())
        .collect()
}

struct Scripted;

impl Agent for Scripted {
    fn run(&self, input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        let turn = input
            .messages
            .iter()
            .filter(|m| m.role() == Role::User)
            .count();
        let (thread, run) = (input.thread_id.clone(), input.run_id.clone());
        let msg = format!("{run}-m");
        let call = format!("{run}-t");

        let mut events = Vec::with_capacity(TEXT_PIECES + ARG_PIECES + 7);
        events.push(Event::run_started(&thread, &run));
        events.push(Event::text_message_start(&msg));
        for i in 0..TEXT_PIECES {
            let word = WORDS[(turn + i) % WORDS.len()];
            events.push(Event::text_message_content(&msg, format!("{word} ")));
        }
        events.push(Event::text_message_end(&msg));

        let mut start = ToolCallStart::new(&call, "show_card");
        start.parent_message_id = Some(msg.clone());
        events.push(start.into());
        let args = format!(
            "{{\"title\":\"Turn {turn}\",\"items\":[\"alpha\",\"beta\",\"gamma\",\"delta\"],\"priority\":\"normal\",\"note\":\"review the open items before the end of the day\"}}"
        );
        for p in pieces(&args, ARG_PIECES) {
            events.push(Event::tool_call_args(&call, p));
        }
        events.push(Event::tool_call_end(&call));

        events.push(Event::state_snapshot(json!({
            "turn": turn,
            "topic": "weekly review",
            "lastMessageId": msg,
            "cards": turn,
        })));
        events.push(Event::run_finished(&thread, &run));
        futures_util::stream::iter(events.into_iter().map(Ok::<_, AgentError>)).boxed()
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let runtime = CopilotRuntime::new()
        .agent("bench", Scripted)
        .default_agent("bench");
    let app = axum::Router::new()
        .nest("/copilotkit", runtime.into_router())
        .route("/debug/gc", axum::routing::post(|| async { "{}" }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening {}", listener.local_addr()?.port());
    axum::serve(listener, app).await
}
