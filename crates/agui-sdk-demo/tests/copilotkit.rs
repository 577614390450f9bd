//! The CopilotKit runtime routes: the contract CopilotKit's React client relies on
//! (info, run, connect, stop, single route, errors, CORS), thread history, live attach,
//! stop, eviction and the downgrade for pre-1.0 clients.

mod common;

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

#[tokio::test]
async fn info_lists_every_agent_and_the_default() {
    let s = serve(
        CopilotRuntime::new()
            .agent("echo", echo())
            .default_agent("echo"),
    )
    .await;
    let mut c = Client::request(s.addr, "GET", "/copilotkit/info", &[], b"").await;
    assert_eq!(c.status, 200);
    let info = c.json().await;
    assert_eq!(info["mode"], "sse");
    assert_eq!(info["audioFileTranscriptionEnabled"], false);
    assert_eq!(info["a2uiEnabled"], false);
    assert!(info["version"].is_string());
    assert_eq!(info["agents"]["echo"]["name"], "echo");
    assert_eq!(info["agents"]["default"]["name"], "default");
    assert!(info["agents"]["echo"]["className"].is_string());

    // The same through the single route, which serves no thread routes.
    let mut c = post(s.addr, "/copilotkit", &json!({ "method": "info" })).await;
    assert_eq!(c.status, 200);
    let mut single = c.json().await;
    assert_eq!(single["threadEndpoints"]["list"], false);
    single["threadEndpoints"] = info["threadEndpoints"].clone();
    assert_eq!(single["singleRoute"]["resourceOperations"], true);
    single.as_object_mut().unwrap().remove("singleRoute");
    assert_eq!(single, info);
}

#[tokio::test]
async fn a_run_streams_and_records_its_input() {
    let s = serve(
        CopilotRuntime::new()
            .agent("echo", echo())
            .default_agent("echo"),
    )
    .await;
    let mut c = post(
        s.addr,
        "/copilotkit/agent/default/run",
        &body("t", "r1", json!([user("u1", "hi")])),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("content-type"), Some("text/event-stream"));
    let events = c.events().await;
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(input_messages(&events[0]), ["u1"]);
    verify_all(&events);
}

#[tokio::test]
async fn refused_requests_say_why_in_copilotkit_shaped_json() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    let mut c = post(
        s.addr,
        "/copilotkit/agent/nope/run",
        &body("t", "r", json!([])),
    )
    .await;
    assert_eq!(c.status, 404);
    let b = c.json().await;
    assert_eq!(b["error"], "Agent not found");
    assert_eq!(b["message"], "Agent 'nope' does not exist");

    // `default` without a default agent is unknown too.
    let c = post(
        s.addr,
        "/copilotkit/agent/default/connect",
        &body("t", "r", json!([])),
    )
    .await;
    assert_eq!(c.status, 404);

    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/run",
        &json!({ "threadId": "t" }),
    )
    .await;
    assert_eq!(c.status, 400);
    let b = c.json().await;
    assert_eq!(b["error"], "Invalid request body");
    assert!(b["details"].as_str().unwrap().contains("runId"), "{b}");

    let mut c = Client::request(
        s.addr,
        "POST",
        "/copilotkit/agent/echo/run",
        &[("Content-Type", "text/plain")],
        b"hello",
    )
    .await;
    assert_eq!(c.status, 415);
    assert_eq!(c.json().await["code"], "unsupported_media_type");

    let big = body("t", "r", json!([user("u", &"x".repeat(70 * 1024))]));
    let mut c = post(s.addr, "/copilotkit/agent/echo/run", &big).await;
    assert_eq!(c.status, 413);
    assert_eq!(c.json().await["code"], "body_too_large");

    let mut c = post(s.addr, "/copilotkit/agent/nope/stop/t", &json!({})).await;
    assert_eq!(c.status, 404);
    assert_eq!(c.json().await["error"], "Agent not found");

    let mut c = post(s.addr, "/copilotkit/transcribe", &json!({})).await;
    assert_eq!(c.status, 503);
    assert!(c.json().await["message"].is_string());
    let c = Client::request(s.addr, "POST", "/copilotkit/threads/subscribe", &[], b"").await;
    assert_eq!(c.status, 422);
    let c = Client::request(s.addr, "GET", "/copilotkit/agent/echo/run", &[], b"").await;
    assert_eq!(c.status, 405);
}

#[tokio::test]
async fn the_single_route_dispatches_and_refuses_bad_envelopes() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/run", "params": { "agentId": "echo" }, "body": body("t", "r1", json!([user("u1", "yo")])) }),
    )
    .await;
    assert_eq!(c.status, 200);
    let events = c.events().await;
    assert_eq!(events.len(), 5);

    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/connect", "params": { "agentId": "echo" }, "body": body("t", "x", json!([])) }),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(types(&c.events().await).len(), 5, "the run replayed");

    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/stop", "params": { "agentId": "echo", "threadId": "t" } }),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.json().await["stopped"], false);

    for (envelope, message) in [
        (json!({}), "Missing method field"),
        (
            json!({ "method": "agent/fly" }),
            "Unsupported method 'agent/fly'",
        ),
        (
            json!({ "method": "agent/run", "body": {} }),
            "Missing or invalid parameter 'agentId'",
        ),
        (
            json!({ "method": "agent/stop", "params": { "agentId": "echo" } }),
            "Missing or invalid parameter 'threadId'",
        ),
        (
            json!({ "method": "agent/run", "params": { "agentId": "echo" } }),
            "Missing request body for JSON handler",
        ),
    ] {
        let mut c = post(s.addr, "/copilotkit", &envelope).await;
        assert_eq!(c.status, 400, "{envelope}");
        let b = c.json().await;
        assert_eq!(b["error"], "invalid_request");
        assert_eq!(b["message"], message);
    }
    let mut c = Client::request(
        s.addr,
        "POST",
        "/copilotkit",
        &[("Content-Type", "text/plain")],
        b"{}",
    )
    .await;
    assert_eq!(c.status, 415);
    assert_eq!(c.json().await["error"], "invalid_request");
}

#[tokio::test]
async fn connect_replays_history_without_duplicating_resent_messages() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    // Unknown thread: an empty stream that ends.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "x", json!([])),
    )
    .await;
    assert_eq!(c.status, 200);
    assert!(c.events().await.is_empty());

    post(
        s.addr,
        "/copilotkit/agent/echo/run",
        &body("t", "r1", json!([user("u1", "one")])),
    )
    .await
    .events()
    .await;
    // The client sends the whole conversation again with its next message.
    let again = json!([
        user("u1", "one"),
        { "id": "r1-reply", "role": "assistant", "content": "echo: one" },
        user("u2", "two"),
    ]);
    post(
        s.addr,
        "/copilotkit/agent/echo/run",
        &body("t", "r2", again),
    )
    .await
    .events()
    .await;

    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let events = c.events().await;
    assert_eq!(events.len(), 10, "{:?}", types(&events));
    assert_eq!(input_messages(&events[0]), ["u1"]);
    assert_eq!(
        input_messages(&events[5]),
        ["u2"],
        "u1 and the reply are not recorded twice"
    );
    verify_all(&events);
}

#[tokio::test]
async fn a_second_run_on_a_running_thread_is_refused_and_connect_attaches_live() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;

    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    for _ in 0..4 {
        run.next_event_within(5).await.expect("an event");
    }
    let mut busy = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r2", json!([])),
    )
    .await;
    assert_eq!(busy.status, 409);
    let b = busy.json().await;
    assert_eq!(b["error"], "Thread already running");
    assert!(b["message"].as_str().unwrap().contains("r1"), "{b}");

    // Connect while running: the live run from its first event, open until it ends.
    let mut live = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(live.next_event_within(5).await.expect("a live event"));
    }
    assert_eq!(
        types(&seen),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TOOL_CALL_START"
        ]
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(200), live.next_event())
            .await
            .is_err(),
        "connect stays open while the run is live"
    );
    gate.add_permits(1);
    seen.extend(live.events().await);
    assert_eq!(
        types(&seen[4..]),
        ["TOOL_CALL_END", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    );
    verify_all(&seen);
    assert_eq!(run.events().await.len(), 3);

    // Nothing runs now: connect replays and ends.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let replay = c.events().await;
    assert_eq!(
        replay.first().map(Event::event_type).map(|t| t.as_str()),
        Some("RUN_STARTED")
    );
    assert_eq!(
        replay.last().map(Event::event_type).map(|t| t.as_str()),
        Some("RUN_FINISHED")
    );
}

#[tokio::test]
async fn connect_with_last_seen_event_id_sends_only_what_was_missed() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped))).await;
    gate.add_permits(1);
    let r0 = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r0", json!([])),
    )
    .await
    .events()
    .await;
    assert_eq!(types(&r0).last(), Some(&"RUN_FINISHED"));
    // The gate's permit came back with r0's end: take it, so that r1 stays live.
    gate.acquire().await.unwrap().forget();
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    // The live run's frames carry `id: {runId}:{seq}`.
    let first = run.next_block().await.unwrap();
    assert!(first.starts_with("id: r1:1\n"), "{first:?}");
    for _ in 0..3 {
        run.next_event_within(5).await.unwrap();
    }
    let mut b = body("t", "x", json!([]));
    b["lastSeenEventId"] = json!("r1:2");
    let mut c = post(s.addr, "/copilotkit/agent/g/connect", &b).await;
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(c.next_event_within(5).await.unwrap());
    }
    assert_eq!(
        types(&got),
        ["TEXT_MESSAGE_CONTENT", "TOOL_CALL_START"],
        "no history, from seq 3"
    );
    gate.add_permits(1);
    got.extend(c.events().await);
    assert_eq!(types(&got).last(), Some(&"RUN_FINISHED"));
    // A cursor into a run that is not live gets the whole thread.
    let mut b = body("t", "x", json!([]));
    b["lastSeenEventId"] = json!("r0:3");
    let all = post(s.addr, "/copilotkit/agent/g/connect", &b)
        .await
        .events()
        .await;
    assert_eq!(
        all.iter()
            .filter(|e| matches!(e, Event::RunStarted(_)))
            .count(),
        2
    );
}

#[tokio::test]
async fn stop_cancels_the_agent_and_ends_the_run_stream_cleanly() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate, dropped.clone()))).await;
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    let mut events = Vec::new();
    for _ in 0..4 {
        events.push(run.next_event_within(5).await.expect("an event"));
    }

    let mut stop = post(s.addr, "/copilotkit/agent/g/stop/t", &json!({})).await;
    assert_eq!(stop.status, 200);
    assert_eq!(
        stop.json().await,
        json!({ "stopped": true, "interrupt": { "type": "RUN_ERROR", "message": "Run stopped by user", "code": "STOPPED" } })
    );
    events.extend(run.events().await);
    assert_eq!(
        types(&events[4..]),
        [
            "TOOL_CALL_END",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_RESULT",
            "RUN_FINISHED"
        ],
        "open constructs closed, the unanswered call answered, then the end"
    );
    match &events[6] {
        Event::ToolCallResult(r) => {
            assert_eq!(r.tool_call_id, "r1-c");
            assert!(r.content.to_text().contains("stopped"));
        }
        _ => unreachable!(),
    }
    match events.last() {
        // The request declared no protocol version (as CopilotKit's clients do), so
        // the `cancelled` outcome, which 0.0.59 refuses, has its stand-in.
        Some(Event::RunFinished(f)) => {
            assert_eq!((f.thread_id.as_str(), f.run_id.as_str()), ("t", "r1"));
            assert_eq!(f.outcome, None);
            assert_eq!(f.result, Some(json!({"cancelled": true})));
        }
        _ => unreachable!(),
    }
    verify_all(&events);
    common::wait_for(5, || dropped.load(Ordering::SeqCst)).await;

    let mut again = post(s.addr, "/copilotkit/agent/g/stop/t", &json!({})).await;
    assert_eq!(
        again.json().await,
        json!({ "stopped": false, "message": "No active run for thread 't'." })
    );
    // The thread takes a new run; its history has the stopped one.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    verify_all(&c.events().await);
}

#[tokio::test]
async fn a_client_that_goes_away_does_not_end_the_run() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([])),
    )
    .await;
    run.next_event_within(5).await;
    drop(run);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!dropped.load(Ordering::SeqCst), "the agent still runs");
    gate.add_permits(1);
    common::wait_for(5, || dropped.load(Ordering::SeqCst)).await;
    let mut c = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let events = c.events().await;
    assert_eq!(
        events.last().map(|e| e.event_type().as_str()),
        Some("RUN_FINISHED")
    );
}

#[tokio::test]
async fn idle_threads_are_evicted_beyond_the_limit() {
    let s = serve(
        CopilotRuntime::new()
            .agent("echo", echo())
            .run_limits(RunLimits::default().max_threads(2)),
    )
    .await;
    for t in ["a", "b", "c"] {
        post(
            s.addr,
            "/copilotkit/agent/echo/run",
            &body(t, "r", json!([user("u", t)])),
        )
        .await
        .events()
        .await;
    }
    let count = |t: &'static str| {
        let addr = s.addr;
        async move {
            post(
                addr,
                "/copilotkit/agent/echo/connect",
                &body(t, "x", json!([])),
            )
            .await
            .events()
            .await
            .len()
        }
    };
    assert_eq!(count("a").await, 0, "the longest idle thread was evicted");
    assert_eq!(count("b").await, 5);
    assert_eq!(count("c").await, 5);
}

#[tokio::test]
async fn cors_echoes_requested_headers_for_allowed_origins_only() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    let preflight = |origin: &'static str| {
        let addr = s.addr;
        async move {
            Client::request(
                addr,
                "OPTIONS",
                "/copilotkit/agent/echo/run",
                &[
                    ("Origin", origin),
                    ("Access-Control-Request-Method", "POST"),
                    (
                        "Access-Control-Request-Headers",
                        "authorization,content-type,x-tenant",
                    ),
                ],
                b"",
            )
            .await
        }
    };
    let ok = preflight("http://localhost:5173").await;
    assert!(ok.status < 300, "{}", ok.status);
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    let allowed = ok
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for h in ["authorization", "content-type", "x-tenant"] {
        assert!(allowed.contains(h), "{allowed}");
    }
    assert!(ok
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));

    let evil = preflight("http://evil.example").await;
    assert_eq!(evil.header("access-control-allow-origin"), None);

    let get = Client::request(
        s.addr,
        "GET",
        "/copilotkit/info",
        &[("Origin", "http://127.0.0.1:3000")],
        b"",
    )
    .await;
    assert_eq!(
        get.header("access-control-allow-origin"),
        Some("http://127.0.0.1:3000")
    );

    // An explicit list with credentials.
    let s = serve(CopilotRuntime::new().agent("echo", echo()).cors(
        Cors::new(AllowedOrigins::List(vec!["https://app.example".into()])).credentials(true),
    ))
    .await;
    let c = Client::request(
        s.addr,
        "OPTIONS",
        "/copilotkit/info",
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "authorization"),
        ],
        b"",
    )
    .await;
    assert_eq!(
        c.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(c.header("access-control-allow-credentials"), Some("true"));
    let c = Client::request(
        s.addr,
        "GET",
        "/copilotkit/info",
        &[("Origin", "http://localhost:1")],
        b"",
    )
    .await;
    assert_eq!(c.header("access-control-allow-origin"), None);
}

#[tokio::test]
async fn a_pre_1_0_client_gets_events_its_schemas_accept() {
    let s = serve(agui_sdk_demo::copilot_runtime(Duration::ZERO)).await;
    let run = |version: Option<&str>, run: &'static str| {
        let mut b = body("t", run, json!([user("u", "go")]));
        if let Some(v) = version {
            b["protocolVersion"] = json!(v);
        }
        let addr = s.addr;
        async move {
            post(addr, "/copilotkit/agent/subagents/run", &b)
                .await
                .events()
                .await
        }
    };
    let old = run(None, "r1").await;
    assert!(old
        .iter()
        .all(|e| !e.event_type().as_str().starts_with("SUBAGENT_")));
    let customs: Vec<&str> = old
        .iter()
        .filter_map(|e| match e {
            Event::Custom(c) => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        customs.contains(&"SUBAGENT_STARTED") && customs.contains(&"SUBAGENT_FINISHED"),
        "{customs:?}"
    );
    match &old[0] {
        Event::RunStarted(s) => assert_eq!(s.protocol_version, None),
        _ => unreachable!(),
    }
    let new = run(Some("1.1"), "r2").await;
    assert!(new
        .iter()
        .any(|e| e.event_type().as_str() == "SUBAGENT_STARTED"));
}

#[tokio::test]
async fn a_pre_1_0_replay_has_nothing_after_a_run_error() {
    let calls = Arc::new(AtomicUsize::new(0));
    let flaky = {
        let calls = calls.clone();
        agent_fn(move |input: RunAgentInput, _ctx: RunContext, tx: Emitter| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    return Err(AgentError::public("model overloaded").with_code("overloaded"));
                }
                tx.text_message(&format!("{}-m", input.run_id), ["fine"], Duration::ZERO)
                    .await?;
                Ok(())
            }
        })
    };
    let s = serve(CopilotRuntime::new().agent("f", flaky)).await;
    for r in ["r1", "r2"] {
        post(
            s.addr,
            "/copilotkit/agent/f/run",
            &body("t", r, json!([user(r, "x")])),
        )
        .await
        .events()
        .await;
    }
    let mut old = post(
        s.addr,
        "/copilotkit/agent/f/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let old = old.events().await;
    assert!(!types(&old).contains(&"RUN_ERROR"), "{:?}", types(&old));
    match &old[1] {
        Event::RunFinished(f) => {
            assert_eq!(f.run_id, "r1");
            assert_eq!(f.result.as_ref().unwrap()["error"]["code"], "overloaded");
        }
        other => panic!("{other:?}"),
    }
    let mut b = body("t", "x", json!([]));
    b["protocolVersion"] = json!("1.1");
    let new = post(s.addr, "/copilotkit/agent/f/connect", &b)
        .await
        .events()
        .await;
    assert_eq!(
        types(&new)[1],
        "RUN_ERROR",
        "a 1.x client gets the run as it was"
    );
}

#[tokio::test]
async fn the_demo_app_serves_both_route_families() {
    let shutdown = Shutdown::new();
    let app = agui_sdk_demo::app(Duration::ZERO, Default::default(), shutdown.clone(), None);
    let s = start(app, shutdown).await;
    let mut c = post(s.addr, "/agentic_chat", &common::input("t", "r", "hi")).await;
    assert_eq!(c.status, 200);
    let events = c.events().await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    let mut c = Client::request(s.addr, "GET", "/copilotkit/info", &[], b"").await;
    let info = c.json().await;
    assert_eq!(info["agents"].as_object().unwrap().len(), 11);
    assert_eq!(
        info["agents"]["default"]["description"],
        info["agents"]["agentic_chat"]["description"]
    );
    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/run", "params": { "agentId": "default" }, "body": body("t2", "r", json!([user("u", "hi")])) }),
    )
    .await;
    let events = c.events().await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    verify_all(&events);
}

#[tokio::test]
async fn large_runs_beyond_the_memory_budget_are_refused() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let shutdown = Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.memory_budget = Some(8 << 20);
    let app = axum::Router::new().nest(
        "/copilotkit",
        CopilotRuntime::new()
            .agent("g", gated(gate.clone(), dropped))
            .config(config)
            .shutdown(shutdown.clone())
            .into_router(),
    );
    let s = start(app, shutdown).await;
    let big = |thread: &str| {
        // 230 KB of JSON that parses into 5,000 messages (some 5 MB counted).
        let messages: Vec<serde_json::Value> = (0..5_000)
            .map(|i| json!({"id": format!("m{i}"), "role": "user", "content": "x"}))
            .collect();
        body(thread, "r", json!(messages))
    };
    let mut first = post(s.addr, "/copilotkit/agent/g/run", &big("t1")).await;
    first
        .next_event_within(5)
        .await
        .expect("the first big run streams");
    let mut second = post(s.addr, "/copilotkit/agent/g/run", &big("t2")).await;
    assert_eq!(second.status, 503);
    let b = second.json().await;
    assert_eq!(
        (b["error"].as_str(), b["code"].as_str()),
        (Some("Service unavailable"), Some("memory_budget"))
    );
    gate.add_permits(1);
    first.events().await;
}

#[tokio::test]
async fn cross_site_simple_requests_neither_start_nor_stop_a_run() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;
    let run_body = serde_json::to_vec(&body("t", "r1", json!([user("u1", "go")]))).unwrap();
    // What a page on any origin may send without a preflight: no Content-Type (a
    // `fetch` with a Blob body) or text/plain.
    for headers in [vec![], vec![("Content-Type", "text/plain")]] {
        for path in ["/copilotkit/agent/g/run", "/copilotkit/agent/g/connect"] {
            let mut c = Client::request(s.addr, "POST", path, &headers, &run_body).await;
            assert_eq!(c.status, 415, "{path} {headers:?}");
            assert_eq!(c.json().await["code"], "unsupported_media_type");
        }
    }
    // A run started by CopilotKit's own client (JSON)…
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    assert_eq!(run.status, 200);
    run.next_event_within(5).await.expect("RUN_STARTED");
    // …is not stopped by a body-less cross-site POST…
    for headers in [vec![], vec![("Content-Type", "text/plain")]] {
        let mut c =
            Client::request(s.addr, "POST", "/copilotkit/agent/g/stop/t", &headers, b"").await;
        assert_eq!(c.status, 415, "{headers:?}");
        assert_eq!(c.json().await["code"], "unsupported_media_type");
    }
    assert!(!dropped.load(Ordering::SeqCst), "the run goes on");
    // …but is by the client's JSON stop.
    let mut stop = post(s.addr, "/copilotkit/agent/g/stop/t", &json!({})).await;
    assert_eq!(stop.json().await["stopped"], true);
    let rest = run.events().await;
    assert_eq!(types(&rest).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn a_stop_is_scoped_to_the_run_its_body_names() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    run.next_event_within(5).await.expect("RUN_STARTED");
    let json_ct = [("Content-Type", "application/json")];
    let stop = |b: &'static [u8]| {
        Client::request(s.addr, "POST", "/copilotkit/agent/g/stop/t", &json_ct, b)
    };

    // Bodies CopilotKit's runtime refuses.
    for (b, error) in [
        (&br#"{"threadId":"t"}"#[..], "Invalid stop request"),
        (br#"[]"#, "Invalid stop request"),
        (br#"not json"#, "Invalid stop request"),
        (br#"{"runId":""}"#, "Invalid runId"),
        (br#"{"runId":7}"#, "Invalid runId"),
    ] {
        let mut c = stop(b).await;
        assert_eq!(c.status, 400, "{}", String::from_utf8_lossy(b));
        assert_eq!(c.json().await["error"], error);
    }
    // Another run's id stops nothing, on the route and through the single route.
    let mut c = stop(br#"{"runId":"r0"}"#).await;
    assert_eq!(
        c.json().await,
        json!({ "stopped": false, "message": "Run 'r0' is not the active run for thread 't'." })
    );
    let envelope = json!({
        "method": "agent/stop",
        "params": { "agentId": "g", "threadId": "t" },
        "body": { "runId": "r0" },
    });
    let mut c = post(s.addr, "/copilotkit", &envelope).await;
    assert_eq!(c.json().await["stopped"], false);
    assert!(!dropped.load(Ordering::SeqCst), "the run goes on");

    // The active run's id stops it.
    let mut c = stop(br#"{"runId":"r1"}"#).await;
    assert_eq!(c.json().await["stopped"], true);
    assert_eq!(types(&run.events().await).last(), Some(&"RUN_FINISHED"));

    // An empty body stops whatever runs.
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r2", json!([user("u2", "go")])),
    )
    .await;
    run.next_event_within(5).await.expect("RUN_STARTED");
    let mut c = stop(b"").await;
    assert_eq!(c.json().await["stopped"], true);
    assert_eq!(types(&run.events().await).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn connect_and_the_envelope_are_admitted_by_the_memory_budget() {
    let shutdown = Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.memory_budget = Some(1 << 20);
    config.body_limit = 4 << 20;
    let app = axum::Router::new().nest(
        "/copilotkit",
        CopilotRuntime::new()
            .agent("echo", echo())
            .config(config)
            .shutdown(shutdown.clone())
            .into_router(),
    );
    let s = start(app, shutdown).await;
    // 300 KB of the smallest messages: several MB once parsed, more than the budget.
    let many: Vec<Value> = (0..6_000).map(|i| user(&format!("m{i}"), "x")).collect();
    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "c1", json!(many)),
    )
    .await;
    assert_eq!(c.status, 503);
    assert_eq!(c.json().await["code"], "memory_budget");
    // A 700 KB envelope is held at twice its length, over the 1 MiB budget.
    let envelope = json!({
        "method": "agent/run",
        "params": { "agentId": "echo" },
        "body": body("t", "r1", json!([user("u1", &"y".repeat(700_000))])),
    });
    let mut c = post(s.addr, "/copilotkit", &envelope).await;
    assert_eq!(c.status, 503);
    assert_eq!(c.json().await["code"], "memory_budget");
    // Small ones pass.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "c2", json!([user("u", "hi")])),
    )
    .await;
    assert_eq!(c.status, 200);
    c.events().await;
    let small = json!({
        "method": "agent/run",
        "params": { "agentId": "echo" },
        "body": body("t", "r2", json!([user("u2", "hi")])),
    });
    let mut c = post(s.addr, "/copilotkit", &small).await;
    assert_eq!(c.status, 200);
    assert_eq!(types(&c.events().await).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn the_response_head_of_run_and_connect_goes_out_before_any_event() {
    // CopilotKit's client re-checks /info when a response has no head after 10 s, and
    // marks the runtime failed: the head may not wait for the agent's first event.
    let gate = Arc::new(Semaphore::new(0));
    let g = gate.clone();
    let silent = agent_fn(move |input: RunAgentInput, _ctx: RunContext, tx: Emitter| {
        let g = g.clone();
        async move {
            let _p = g.acquire().await.map_err(AgentError::internal)?;
            tx.text(format!("{} done", input.run_id)).await?;
            Ok::<(), AgentError>(())
        }
    });
    let s = serve(CopilotRuntime::new().agent("s", silent)).await;
    let head = |path: &'static str, run: &'static str| {
        let addr = s.addr;
        async move {
            tokio::time::timeout(
                Duration::from_secs(5),
                post(addr, path, &body("t", run, json!([user("u", "hi")]))),
            )
            .await
            .unwrap_or_else(|_| panic!("{path}: no response head while the agent is silent"))
        }
    };
    let mut run = head("/copilotkit/agent/s/run", "r1").await;
    assert_eq!(run.status, 200);
    assert_eq!(run.header("content-type"), Some("text/event-stream"));
    let mut connect = head("/copilotkit/agent/s/connect", "r2").await;
    assert_eq!(connect.status, 200);
    gate.add_permits(1);
    assert_eq!(types(&run.events().await).last(), Some(&"RUN_FINISHED"));
    assert_eq!(types(&connect.events().await).last(), Some(&"RUN_FINISHED"));
}
