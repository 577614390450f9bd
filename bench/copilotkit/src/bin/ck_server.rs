//! The benchmark agent behind agui-sdk-server's CopilotKit runtime, mounted at
//! `/copilotkit`. `ck-server [PORT] [--nagle] [--short] [--redis URL]` (port 0, the
//! default: a free port); prints `listening <port>`.
//!
//! The store is the default `InMemoryRunStore`, or with `--redis URL` a `RedisRunStore`
//! under a prefix of its own; either holds up to a million threads (the defaults keep
//! 10,000 and 100,000). A request's owner is its `Authorization` header, as `agui serve`
//! takes it (there hashed), so each bearer token has its own thread list.
//!
//! `--short` answers every run of the agents `bench` and `other` with the short reply
//! of `node175/list-server.mjs`: `RUN_STARTED`, an assistant text message of 4 pieces,
//! `RUN_FINISHED` (the thread-list benchmark, `ck-list`). Without it:
//!
//! Accepted sockets get `TCP_NODELAY`, as Node's HTTP server gives its own by default.
//! `--nagle` leaves Nagle's algorithm on (what plain `axum::serve` does): a `/run`
//! response then writes its headers, and its first events wait for their
//! acknowledgement, which a client that delays acknowledgements (hyper, for one) sends
//! some 40 ms later on Linux.
//!
//! every run is answered at once (no pauses) with the reply shape that
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
//! `POST /debug/gc` answers `{"heapUsed": N}`, N the bytes the allocator (glibc
//! malloc) has handed out and not had back: Rust frees as it goes, so this is the live
//! heap, the counterpart of Node's `heapUsed` after a collection. The driver calls it
//! on both servers before reading their resident size.

use agui_sdk_core::event::ToolCallStart;
use agui_sdk_core::types::Role;
use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::copilotkit::CopilotRuntime;
use agui_sdk_server::runs::{InMemoryRunStore, Owner, RunLimits, RunStore};
use agui_sdk_server::{Agent, AgentError, AgentStream, RunContext};
use axum::serve::ListenerExt;
use futures_util::StreamExt;
use serde_json::json;
use std::sync::Arc;

/// Word pieces of the reply; piece `i` of turn `t` is `WORDS[(t + i) % WORDS.len()]`.
const WORDS: [&str; 16] = [
    "the", "ledger", "shows", "three", "open", "items", "for", "this", "week", "and", "two", "of",
    "them", "need", "review", "today",
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

/// The short reply of `--short`.
struct Short;

const SHORT_PIECES: [&str; 4] = ["the ledger ", "shows three ", "open items ", "this week"];

impl Agent for Short {
    fn run(&self, input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        let (thread, run) = (input.thread_id.clone(), input.run_id.clone());
        let msg = format!("{run}-m");
        let mut events = vec![
            Event::run_started(&thread, &run),
            Event::text_message_start(&msg),
        ];
        events.extend(
            SHORT_PIECES
                .iter()
                .map(|p| Event::text_message_content(&msg, *p)),
        );
        events.push(Event::text_message_end(&msg));
        events.push(Event::run_finished(&thread, &run));
        futures_util::stream::iter(events.into_iter().map(Ok::<_, AgentError>)).boxed()
    }
}

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

/// Bytes in use in glibc malloc: small blocks in all arenas plus mmapped blocks.
fn malloc_in_use() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's statistics (glibc 2.33 and later).
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nagle = args.iter().any(|a| a == "--nagle");
    let short = args.iter().any(|a| a == "--short");
    let redis = args
        .iter()
        .position(|a| a == "--redis")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let port: u16 = args
        .iter()
        .enumerate()
        .find(|(i, a)| {
            !a.starts_with("--")
                && (*i == 0 || args.get(i - 1).map(String::as_str) != Some("--redis"))
        })
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(0);
    let store: Arc<dyn RunStore> = match redis {
        Some(url) => {
            let prefix = format!("ck-bench-{}", std::process::id());
            let limits = agui_sdk_redis::RunLimits::shared().max_threads(1_000_000);
            Arc::new(
                agui_sdk_redis::RedisRunStore::connect(&url, &prefix, limits)
                    .await
                    .map_err(std::io::Error::other)?,
            )
        }
        None => Arc::new(InMemoryRunStore::new(
            RunLimits::default()
                .max_threads(1_000_000)
                .max_total_bytes(16 << 30),
        )),
    };
    let runtime = if short {
        CopilotRuntime::new()
            .agent("bench", Short)
            .agent("other", Short)
    } else {
        CopilotRuntime::new().agent("bench", Scripted)
    };
    let runtime = runtime.default_agent("bench").store(store);
    let app = axum::Router::new()
        .nest("/copilotkit", runtime.into_router())
        // The owner of a request: its `Authorization` header, when it has one.
        .layer(axum::middleware::from_fn(
            |mut req: axum::extract::Request, next: axum::middleware::Next| async move {
                if let Some(auth) = req
                    .headers()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                {
                    let owner = Owner(auth.to_owned());
                    req.extensions_mut().insert(owner);
                }
                next.run(req).await
            },
        ))
        .route(
            "/debug/gc",
            axum::routing::post(|| async { axum::Json(json!({ "heapUsed": malloc_in_use() })) }),
        );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening {}", listener.local_addr()?.port());
    if nagle {
        axum::serve(listener, app).await
    } else {
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await
    }
}
