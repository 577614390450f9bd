//! The CopilotKit runtime's thread reads (`/threads/{id}/events`, `/messages`, `/state`)
//! as bytes: a fixed thread (text, a tool call and its result, a state snapshot and
//! delta, a run that fails) answers exactly the bodies it answered when each was built
//! as one buffer, on the in-memory store and on a real Redis, through the REST routes
//! and the single route; a body larger than one chunk arrives whole and in order; a
//! client that does not read (a thread read, or `connect`) holds of the memory budget
//! what its answer copied (a Redis history, reduced messages), so that the next ones are
//! refused with `503`.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_redis::{RedisRunStore, RunLimits};
use agui_sdk_server::copilotkit::CopilotRuntime;
use agui_sdk_server::runs::RunStore;
use agui_sdk_server::{agent_fn, AgentError, Emitter, RunContext, ServerConfig, Shutdown};
use common::{start, types, Client, TestServer};
use serde_json::{json, Value};

type Store = Option<Arc<dyn RunStore>>;

/// A Redis store under a prefix of its own, or `None` (the test kit's Redis gate).
async fn redis(test: &str) -> Option<Arc<dyn RunStore>> {
    let url = agui_sdk_testkit::redis::url(test)?;
    let prefix = agui_sdk_testkit::redis::prefix("ckr");
    let store = tokio::time::timeout(
        Duration::from_secs(10),
        RedisRunStore::connect(&url, &prefix, {
            let mut limits = RunLimits::shared();
            // Room for the large thread below.
            limits.max_history_bytes = 64 << 20;
            limits
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("{test}: Redis at {url} answers but connecting timed out"))
    .unwrap_or_else(|e| panic!("{test}: Redis at {url} answers but the store cannot connect: {e}"));
    Some(Arc::new(store))
}

macro_rules! on_each_store {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test]
            async fn $name() {
                super::$name(None).await
            })*
        }
        mod redis {
            $(#[tokio::test]
            async fn $name() {
                if let Some(store) = super::redis(stringify!($name)).await {
                    super::$name(Some(store)).await
                }
            })*
        }
    };
}

on_each_store!(
    a_threads_reads_answer_the_bytes_they_always_answered,
    a_history_larger_than_a_chunk_is_read_whole_and_in_order,
    reads_nobody_reads_hold_the_memory_budget_for_what_they_copied,
);

async fn serve(store: Store) -> TestServer {
    serve_with(store, ServerConfig::default()).await
}

async fn serve_with(store: Store, config: ServerConfig) -> TestServer {
    let shutdown = Shutdown::new();
    let runtime = CopilotRuntime::new().agent("fixed", fixed()).config(config);
    let runtime = match store {
        Some(store) => runtime.store(store),
        None => runtime,
    };
    let app = axum::Router::new().nest(
        "/copilotkit",
        runtime.shutdown(shutdown.clone()).into_router(),
    );
    start(app, shutdown).await
}

/// By the user's text: `fail` ends in `RUN_ERROR`; `big N` answers N bytes of text in
/// 1,000-byte deltas; anything else a text, a tool call with its result and state.
fn fixed() -> agui_sdk_server::FnAgent {
    agent_fn(
        |input: RunAgentInput, _ctx: RunContext, tx: Emitter| async move {
            let text = input.last_user_text().unwrap_or_default();
            let run = input.run_id.clone();
            if text == "fail" {
                tx.text_message(&format!("{run}-a"), ["half an answer"], Duration::ZERO)
                    .await?;
                return Err(AgentError::public("the model went away").with_code("upstream"));
            }
            if let Some(n) = text.strip_prefix("big ") {
                let n: usize = n.parse().unwrap();
                let deltas: Vec<String> = (0..n / 1000).map(|i| format!("{:0>1000}", i)).collect();
                tx.text_message(&format!("{run}-a"), deltas, Duration::ZERO)
                    .await?;
                return Ok(());
            }
            tx.text_message(
                &format!("{run}-a"),
                ["Looking \"that\" up: ", "é ✓"],
                Duration::ZERO,
            )
            .await?;
            let call = format!("{run}-call");
            tx.emit(Event::tool_call_start(&call, "lookup")).await?;
            tx.emit(Event::tool_call_args(&call, "{\"q\":")).await?;
            tx.emit(Event::tool_call_args(&call, "\"weather\"}"))
                .await?;
            tx.emit(Event::tool_call_end(&call)).await?;
            tx.emit(Event::tool_call_result(
                format!("{run}-result"),
                &call,
                "sunny",
            ))
            .await?;
            tx.emit(Event::state_snapshot(
                json!({"turns": 1, "z": [1, 2], "a": null}),
            ))
            .await?;
            let delta =
                serde_json::from_value(json!([{"op": "replace", "path": "/turns", "value": 2}]))
                    .unwrap();
            tx.emit(Event::state_delta(delta)).await?;
            Ok::<(), AgentError>(())
        },
    )
}

fn body(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "tools": [], "context": [],
        "forwardedProps": {}, "state": {},
        "messages": [{ "id": format!("{run}-u"), "role": "user", "content": text }],
    })
}

async fn run(s: &TestServer, thread: &str, run_id: &str, text: &str) {
    let mut c = Client::post_json(
        s.addr,
        "/copilotkit/agent/fixed/run",
        &body(thread, run_id, text),
    )
    .await;
    assert_eq!(c.status, 200);
    let events = c.events().await;
    let last = *types(&events).last().unwrap();
    assert!(matches!(last, "RUN_FINISHED" | "RUN_ERROR"), "{last}");
}

/// The status, `Content-Type` and body of `GET /copilotkit{path}`.
async fn get(s: &TestServer, path: &str) -> (u16, String, Vec<u8>) {
    let mut c = Client::request(s.addr, "GET", &format!("/copilotkit{path}"), &[], &[]).await;
    let ct = c.header("content-type").unwrap_or_default().to_owned();
    (c.status, ct, c.body().await)
}

/// The same read through the single route's `resource/request`.
async fn get_single(s: &TestServer, path: &str) -> (u16, Vec<u8>) {
    let envelope =
        json!({"method": "resource/request", "params": {"path": path, "httpMethod": "GET"}});
    let mut c = Client::post_json(s.addr, "/copilotkit", &envelope).await;
    (c.status, c.body().await)
}

/// What the routes answered for this thread when each body was built as one buffer
/// (captured from that code, with these runs).
const EVENTS: &str = concat!(
    r#"{"events":[{"type":"RUN_STARTED","threadId":"t","runId":"r1","protocolVersion":"1.1","input":{"threadId":"t","runId":"r1","state":{},"messages":[{"id":"r1-u","role":"user","content":"hello"}],"tools":[],"context":[],"forwardedProps":{}}},"#,
    r#"{"type":"TEXT_MESSAGE_START","messageId":"r1-a","role":"assistant"},"#,
    r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-a","delta":"Looking \"that\" up: é ✓"},"#,
    r#"{"type":"TEXT_MESSAGE_END","messageId":"r1-a"},"#,
    r#"{"type":"TOOL_CALL_START","toolCallId":"r1-call","toolCallName":"lookup"},"#,
    r#"{"type":"TOOL_CALL_ARGS","toolCallId":"r1-call","delta":"{\"q\":\"weather\"}"},"#,
    r#"{"type":"TOOL_CALL_END","toolCallId":"r1-call"},"#,
    r#"{"type":"TOOL_CALL_RESULT","messageId":"r1-result","toolCallId":"r1-call","content":"sunny"},"#,
    r#"{"type":"STATE_SNAPSHOT","snapshot":{"turns":2,"z":[1,2],"a":null}},"#,
    r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r1"},"#,
    r#"{"type":"RUN_STARTED","threadId":"t","runId":"r2","protocolVersion":"1.1","input":{"threadId":"t","runId":"r2","state":{},"messages":[{"id":"r2-u","role":"user","content":"fail"}],"tools":[],"context":[],"forwardedProps":{}}},"#,
    r#"{"type":"TEXT_MESSAGE_START","messageId":"r2-a","role":"assistant"},"#,
    r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r2-a","delta":"half an answer"},"#,
    r#"{"type":"TEXT_MESSAGE_END","messageId":"r2-a"},"#,
    r#"{"type":"RUN_ERROR","message":"the model went away","code":"upstream"}]}"#,
);

const MESSAGES: &str = concat!(
    r#"{"messages":[{"id":"r1-u","role":"user","content":"hello"},"#,
    r#"{"id":"r1-a","role":"assistant","content":"Looking \"that\" up: é ✓"},"#,
    r#"{"id":"r1-call","role":"assistant","toolCalls":[{"id":"r1-call","name":"lookup","args":"{\"q\":\"weather\"}"}]},"#,
    r#"{"id":"r1-result","role":"tool","content":"sunny","toolCallId":"r1-call"},"#,
    r#"{"id":"r2-u","role":"user","content":"fail"},"#,
    r#"{"id":"r2-a","role":"assistant","content":"half an answer"}]}"#,
);

const STATE: &str = r#"{"state":{"turns":2,"z":[1,2],"a":null}}"#;

async fn a_threads_reads_answer_the_bytes_they_always_answered(store: Store) {
    let s = serve(store).await;
    run(&s, "t", "r1", "hello").await;
    run(&s, "t", "r2", "fail").await;
    for (path, want) in [
        ("/threads/t/events", EVENTS),
        ("/threads/t/messages", MESSAGES),
        ("/threads/t/state", STATE),
    ] {
        let (status, ct, got) = get(&s, path).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(ct, "application/json", "{path}");
        assert_eq!(String::from_utf8_lossy(&got), want, "{path}");
        let (status, got) = get_single(&s, path).await;
        assert_eq!(status, 200, "{path} through the single route");
        assert_eq!(
            String::from_utf8_lossy(&got),
            want,
            "{path} through the single route"
        );
    }
    // An unknown thread: empty, in the same shapes.
    for (path, want) in [
        ("/threads/none/events", r#"{"events":[]}"#),
        ("/threads/none/messages", r#"{"messages":[]}"#),
        ("/threads/none/state", r#"{"state":null}"#),
    ] {
        let (status, _, got) = get(&s, path).await;
        assert_eq!(
            (status, String::from_utf8_lossy(&got).as_ref()),
            (200, want)
        );
    }
}

async fn a_history_larger_than_a_chunk_is_read_whole_and_in_order(store: Store) {
    let s = serve(store).await;
    // Three runs of 300 KB of text each: several chunks, an event larger than one.
    for i in 0..3 {
        run(&s, "big", &format!("b{i}"), "big 300000").await;
    }
    let (status, _, events) = get(&s, "/threads/big/events").await;
    assert_eq!(status, 200);
    let events: Value = serde_json::from_slice(&events).expect("the events are one JSON body");
    let events = events["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let one_run = [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ];
    assert_eq!(kinds, one_run.repeat(3));
    for (i, run) in events.chunks(5).enumerate() {
        assert_eq!(run[0]["runId"], format!("b{i}"));
        assert_eq!(run[2]["delta"].as_str().unwrap().len(), 300_000);
    }
    let (status, _, messages) = get(&s, "/threads/big/messages").await;
    assert_eq!(status, 200);
    let messages: Value = serde_json::from_slice(&messages).unwrap();
    let messages = messages["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 6);
    for (i, pair) in messages.chunks(2).enumerate() {
        assert_eq!(pair[0]["id"], format!("b{i}-u"));
        assert_eq!(pair[1]["id"], format!("b{i}-a"));
        assert_eq!(pair[1]["content"].as_str().unwrap().len(), 300_000);
    }
}

/// The first answer of `send` that is not `503` (within 5 s): the budget readers that
/// went away held is free once the server has seen them go.
async fn retry_while_refused<F: std::future::Future<Output = Client>>(
    send: impl Fn() -> F,
) -> Client {
    for _ in 0..100 {
        let c = send().await;
        if c.status != 503 {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    send().await
}

/// Sends `GET /copilotkit{path}` and reads only the answer's head.
async fn unread(s: &TestServer, path: &str) -> Client {
    Client::request(s.addr, "GET", &format!("/copilotkit{path}"), &[], &[]).await
}

async fn reads_nobody_reads_hold_the_memory_budget_for_what_they_copied(store: Store) {
    let in_memory = store.is_none();
    const BUDGET: usize = 40 << 20;
    let mut config = ServerConfig::default();
    config.memory_budget = Some(BUDGET);
    let s = serve_with(store, config).await;
    // Six runs of 2.5 MB of text: a history of 15 MB, more than the sockets between
    // server and client take, so an answer nobody reads stays unsent.
    for i in 0..6 {
        run(&s, "wide", &format!("w{i}"), "big 2500000").await;
    }
    let history = {
        let (status, _, events) = get(&s, "/threads/wide/events").await;
        assert_eq!(status, 200);
        events.len()
    };
    assert!(history > 15_000_000, "{history}");

    // `/events`: the in-memory store's history is shared, nothing is copied and every
    // client is answered; a Redis history is this read's own copy, counted while the
    // answer is sent: two fit in 40 MiB, the third is refused.
    let mut held = Vec::new();
    for i in 0..3 {
        let c = unread(&s, "/threads/wide/events").await;
        let want = if in_memory || i < 2 { 200 } else { 503 };
        assert_eq!(c.status, want, "/events reader {i}");
        held.push(c);
    }
    let mut refused = held.pop().unwrap();
    if !in_memory {
        let e = refused.json().await;
        assert_eq!(e["code"], "memory_budget", "{e}");
    }
    drop(held);

    // `connect` replays the same history: counted the same way while it is written.
    let input = body("wide", "c", "");
    let mut held = Vec::new();
    for i in 0..3 {
        let send = || Client::post_json(s.addr, "/copilotkit/agent/fixed/connect", &input);
        let c = if i == 0 {
            // The first once the readers before are gone (the server sees them go).
            retry_while_refused(send).await
        } else {
            send().await
        };
        let want = if in_memory || i < 2 { 200 } else { 503 };
        assert_eq!(c.status, want, "connect {i}");
        held.push(c);
    }
    let mut refused = held.pop().unwrap();
    if !in_memory {
        let e = refused.json().await;
        assert_eq!(e["code"], "memory_budget", "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("a thread's history"),
            "{e}"
        );
    }
    drop(held);

    // `/messages`: the reduced messages are counted (1.5 times the history's text, and
    // a Redis history's copy on top): one fits, the next is refused.
    let first = retry_while_refused(|| unread(&s, "/threads/wide/messages")).await;
    assert_eq!(first.status, 200);
    let mut second = unread(&s, "/threads/wide/messages").await;
    assert_eq!(second.status, 503);
    let e = second.json().await;
    assert_eq!(e["code"], "memory_budget", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("a thread's messages"),
        "{e}"
    );
    drop(first);

    // Gone, the clients let their part of the budget go: a whole read is answered.
    let mut answered = false;
    for _ in 0..50 {
        let (status, _, body) = get(&s, "/threads/wide/messages").await;
        if status == 200 {
            let m: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(m["messages"].as_array().unwrap().len(), 12);
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        answered,
        "the budget is free again once the readers are gone"
    );
}
