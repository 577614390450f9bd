//! The runtime's guarantees, in process over real loopback HTTP: lifecycle, errors,
//! panics, verification, cancellation on disconnect, streaming without buffering,
//! keep-alive, request limits and errors, capabilities, graceful shutdown.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_core::{AgentCapabilities, Event, EventType, RunAgentInput};
use agui_server::{agent_fn, Agent, AgentError, AgentRouter, AgentStream, RunContext, Shutdown};
use common::{input, start, types, wait_for, Client};
use futures_util::StreamExt;
use serde_json::json;

/// An agent over a fixed list of results.
struct Scripted(Vec<Result<Event, &'static str>>);

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

async fn serve_one(name: &str, agent: impl Agent) -> common::TestServer {
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent(name, agent)
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}

fn run_error(e: &Event) -> (&str, Option<&str>) {
    match e {
        Event::RunError(r) => (r.message.as_str(), r.code.as_deref()),
        other => panic!("expected RUN_ERROR, got {}", other.event_type()),
    }
}

#[tokio::test]
async fn runtime_adds_run_started_and_run_finished() {
    let srv = serve_one(
        "a",
        Scripted(vec![
            Ok(Event::text_message_start("m")),
            Ok(Event::text_message_content("m", "hi")),
            Ok(Event::text_message_end("m")),
        ]),
    )
    .await;
    let mut c = Client::post_json(srv.addr, "/a", &input("t1", "r1", "x")).await;
    assert_eq!(c.status, 200);
    let ev = c.events().await;
    assert_eq!(
        types(&ev),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    match (&ev[0], &ev[4]) {
        (Event::RunStarted(s), Event::RunFinished(f)) => {
            assert_eq!((s.thread_id.as_str(), s.run_id.as_str()), ("t1", "r1"));
            assert_eq!(s.protocol_version.as_deref(), Some("1.1"));
            assert_eq!((f.thread_id.as_str(), f.run_id.as_str()), ("t1", "r1"));
        }
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn added_run_started_declares_the_clients_version_when_older() {
    let srv = serve_one("a", Scripted(vec![Ok(Event::run_finished("t1", "r1"))])).await;
    for (asked, declared) in [
        ("1.0", "1.0"),
        ("1.1", "1.1"),
        ("1.9", "1.1"),
        ("draft", "1.1"),
    ] {
        let mut body = input("t1", "r1", "x");
        body["protocolVersion"] = asked.into();
        let mut c = Client::post_json(srv.addr, "/a", &body).await;
        match &c.events().await[0] {
            Event::RunStarted(s) => {
                assert_eq!(s.protocol_version.as_deref(), Some(declared), "{asked}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn agents_own_lifecycle_events_are_kept_not_duplicated() {
    let mut started = agui_core::event::RunStarted::new("t1", "r1");
    started.parent_run_id = Some("p0".into());
    let mut fin = agui_core::event::RunFinished::new("t1", "r1");
    fin.result = Some(json!({"ok": true}));
    let srv = serve_one(
        "a",
        Scripted(vec![Ok(started.clone().into()), Ok(fin.clone().into())]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/a", &input("t1", "r1", "x"))
        .await
        .events()
        .await;
    assert_eq!(ev, vec![Event::from(started), Event::from(fin)]);
}

#[tokio::test]
async fn agent_error_becomes_run_error_with_only_the_public_message() {
    let srv = serve_one(
        "a",
        Scripted(vec![Ok(Event::step_started("s")), Err("quota exhausted")]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/a", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "STEP_STARTED", "RUN_ERROR"]);
    assert_eq!(run_error(&ev[2]), ("quota exhausted", Some("agent_error")));

    // An internal error (converted with `?`) is sanitized.
    let leaky = agent_fn(|_i, _c, _tx| async move {
        std::fs::read("/nonexistent/secret/path/key.pem")?;
        Ok(())
    });
    let srv = serve_one("b", leaky).await;
    let ev = Client::post_json(srv.addr, "/b", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
    let (msg, code) = run_error(&ev[1]);
    assert_eq!((msg, code), ("agent failed", Some("agent_error")));
    assert!(!ev[1].to_json_string().contains("secret"));
}

#[tokio::test]
async fn panicking_agent_yields_run_error_and_the_server_keeps_serving() {
    let calls = Arc::new(AtomicUsize::new(0));
    let calls2 = calls.clone();
    let agent = agent_fn(move |input, _ctx, tx| {
        let n = calls2.fetch_add(1, Ordering::SeqCst);
        async move {
            tx.emit(Event::text_message_start("m")).await?;
            if n == 0 {
                panic!("boom: internal detail");
            }
            tx.emit(Event::text_message_end("m")).await?;
            let _ = input;
            Ok(())
        }
    });
    let srv = serve_one("p", agent).await;
    let ev = Client::post_json(srv.addr, "/p", &input("t", "r1", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    );
    assert_eq!(run_error(&ev[2]), ("agent panicked", Some("agent_panic")));
    assert!(!ev[2].to_json_string().contains("boom"));

    let ev = Client::post_json(srv.addr, "/p", &input("t", "r2", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
}

/// Panics while starting the run (in `Agent::run` itself, not in the stream).
struct PanicsOnStart;
impl Agent for PanicsOnStart {
    fn run(&self, _input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        panic!("cannot even start")
    }
}

#[tokio::test]
async fn panic_while_starting_is_a_run_error_too() {
    let srv = serve_one("p", PanicsOnStart).await;
    for run in ["r1", "r2"] {
        let ev = Client::post_json(srv.addr, "/p", &input("t", run, "x"))
            .await
            .events()
            .await;
        assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
        assert_eq!(run_error(&ev[1]).1, Some("agent_panic"));
    }
}

#[tokio::test]
async fn protocol_violations_become_run_error_saying_what_was_wrong() {
    // Content for a message that was never started.
    let srv = serve_one(
        "v",
        Scripted(vec![
            Ok(Event::text_message_start("m1")),
            Ok(Event::text_message_content("m2", "x")),
            Ok(Event::text_message_end("m1")),
        ]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/v", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    );
    let (msg, code) = run_error(&ev[2]);
    assert_eq!(code, Some("protocol_violation"));
    assert!(
        msg.contains("TEXT_MESSAGE_CONTENT") && msg.contains("m2"),
        "{msg}"
    );

    // A stream that ends with a message still open.
    let srv = serve_one("o", Scripted(vec![Ok(Event::text_message_start("m1"))])).await;
    let ev = Client::post_json(srv.addr, "/o", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    );
    let (msg, code) = run_error(&ev[2]);
    assert_eq!(code, Some("protocol_violation"));
    assert!(msg.contains("m1"), "{msg}");

    // A second RUN_STARTED, and RUN_STARTED naming another run.
    let srv = serve_one(
        "d",
        Scripted(vec![
            Ok(Event::run_started("t", "r")),
            Ok(Event::run_started("t", "r")),
        ]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/d", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(run_error(&ev[1]).0.contains("second RUN_STARTED"));

    let srv = serve_one("w", Scripted(vec![Ok(Event::run_started("t", "other"))])).await;
    let ev = Client::post_json(srv.addr, "/w", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(run_error(&ev[1]).0.contains("other"));
}

#[tokio::test]
async fn verification_can_be_turned_off() {
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent(
            "v",
            Scripted(vec![Ok(Event::text_message_content("never-started", "x"))]),
        )
        .verify(false)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let ev = Client::post_json(srv.addr, "/v", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_CONTENT", "RUN_FINISHED"]
    );
}

#[tokio::test]
async fn the_agent_is_not_read_after_its_terminal_event() {
    let polled_after = Arc::new(AtomicBool::new(false));
    let flag = polled_after.clone();
    let agent = agent_fn(move |input, _ctx, tx| {
        let flag = flag.clone();
        async move {
            tx.emit(Event::run_finished(&input.thread_id, &input.run_id))
                .await?;
            // Give the runtime every chance to read on.
            tokio::time::sleep(Duration::from_millis(50)).await;
            flag.store(true, Ordering::SeqCst);
            tx.emit(Event::text_message_start("late")).await?;
            Ok(())
        }
    });
    let srv = serve_one("f", agent).await;
    let ev = Client::post_json(srv.addr, "/f", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_FINISHED"]);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!polled_after.load(Ordering::SeqCst));
}

/// Sets a flag when dropped.
struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn client_disconnect_cancels_the_agent() {
    disconnect_cancels(Some(Duration::from_millis(30))).await;
}

/// Without keep-alive writes (protobuf streams have none), the closed connection is
/// seen on the read side.
#[tokio::test]
async fn client_disconnect_cancels_a_silent_agent_without_keep_alive() {
    disconnect_cancels(None).await;
}

async fn disconnect_cancels(keep_alive: Option<Duration>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let spawned_saw_cancel = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicUsize::new(0));
    let (d, s, p) = (
        dropped.clone(),
        spawned_saw_cancel.clone(),
        progress.clone(),
    );
    let agent = agent_fn(move |_input, ctx, tx| {
        let (d, s, p) = (d.clone(), s.clone(), p.clone());
        async move {
            let _guard = DropFlag(d);
            // Work the agent spawned itself sees the cancellation signal.
            let token = ctx.token().clone();
            tokio::spawn(async move {
                token.cancelled().await;
                s.store(true, Ordering::SeqCst);
            });
            tx.emit(Event::step_started("long")).await?;
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                p.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("slow", agent)
        .keep_alive(keep_alive)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::post_json(srv.addr, "/slow", &input("t", "r", "x")).await;
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::RunStarted
    );
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::StepStarted
    );
    drop(c);
    wait_for(5, || dropped.load(Ordering::SeqCst)).await;
    wait_for(5, || spawned_saw_cancel.load(Ordering::SeqCst)).await;
    // The agent's loop stopped: its counter no longer moves.
    let at_stop = progress.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(progress.load(Ordering::SeqCst), at_stop);
}

#[tokio::test]
async fn events_reach_the_client_as_soon_as_they_exist() {
    let (go_tx, go_rx) = tokio::sync::mpsc::channel::<()>(1);
    let go_rx = Arc::new(tokio::sync::Mutex::new(go_rx));
    let agent = agent_fn(move |_input, _ctx, tx| {
        let go_rx = go_rx.clone();
        async move {
            tx.emit(Event::text_message_start("m")).await?;
            // Only continue once the client has seen the first event.
            go_rx.lock().await.recv().await;
            tx.emit(Event::text_message_end("m")).await?;
            Ok(())
        }
    });
    let srv = serve_one("s", agent).await;
    let mut c = Client::post_json(srv.addr, "/s", &input("t", "r", "x")).await;
    assert_eq!(c.header("content-type"), Some("text/event-stream"));
    assert_eq!(c.header("cache-control"), Some("no-cache"));
    assert_eq!(c.header("x-accel-buffering"), Some("no"));
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::RunStarted
    );
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::TextMessageStart
    );
    go_tx.send(()).await.unwrap();
    assert_eq!(
        types(&c.events().await),
        ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    );
}

#[tokio::test]
async fn keep_alive_comments_flow_while_the_agent_is_quiet() {
    let agent = agent_fn(|_input, _ctx, tx| async move {
        tx.emit(Event::step_started("wait")).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.emit(Event::step_finished("wait")).await?;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("q", agent)
        .keep_alive(Some(Duration::from_millis(50)))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::post_json(srv.addr, "/q", &input("t", "r", "x")).await;
    let mut comments = 0;
    let mut events = Vec::new();
    while let Some(b) = c.next_block().await {
        if b == ": keep-alive" {
            comments += 1;
        } else {
            events.push(Event::from_json_str(b.strip_prefix("data: ").unwrap()).unwrap());
        }
    }
    assert!(comments >= 3, "only {comments} keep-alive comments");
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );

    // Turned off: none.
    let agent = agent_fn(|_input, _ctx, tx| async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        tx.emit(Event::step_started("x")).await?;
        tx.emit(Event::step_finished("x")).await?;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("q", agent)
        .keep_alive(None)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::post_json(srv.addr, "/q", &input("t", "r", "x")).await;
    let _ = c.events().await;
    assert!(!String::from_utf8_lossy(&c.all).contains("keep-alive"));
}

async fn demo_server() -> common::TestServer {
    let shutdown = Shutdown::new();
    let router = agui_server::demo::router(Duration::ZERO)
        .body_limit(4096)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}

#[tokio::test]
async fn malformed_and_invalid_bodies_get_400_with_a_json_error() {
    let srv = demo_server().await;
    let json_ct = [("Content-Type", "application/json")];

    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &json_ct,
        b"{\"threadId\": ",
    )
    .await;
    assert_eq!(c.status, 400);
    assert_eq!(c.header("content-type"), Some("application/json"));
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "malformed_json");
    assert!(body["error"]["line"].is_u64());

    let bad = json!({"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "robot", "content": "x"}]});
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &bad).await;
    assert_eq!(c.status, 400);
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "invalid_input");
    assert_eq!(body["error"]["field"], "messages/0");
    assert!(body["error"]["message"].as_str().unwrap().contains("robot"));

    let missing = json!({"threadId": "t", "messages": []});
    let body = Client::post_json(srv.addr, "/agentic_chat", &missing)
        .await
        .json()
        .await;
    assert_eq!(body["error"]["code"], "invalid_input");
    assert!(body["error"]["message"].as_str().unwrap().contains("runId"));

    let null_field = json!({"threadId": "t", "runId": "r", "messages": [], "forwardedProps": null});
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &null_field).await;
    assert_eq!(c.status, 400);
    assert_eq!(c.json().await["error"]["field"], "forwardedProps");

    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &[("Content-Type", "text/plain")],
        b"{}",
    )
    .await;
    assert_eq!(c.status, 415);
    assert_eq!(c.json().await["error"]["code"], "unsupported_media_type");
}

#[tokio::test]
async fn oversized_body_gets_413_with_a_json_error() {
    let srv = demo_server().await;
    let big = input("t", "r", &"x".repeat(10_000));
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &big).await;
    assert_eq!(c.status, 413);
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "body_too_large");
    assert!(body["error"]["message"].as_str().unwrap().contains("4096"));
}

#[tokio::test]
async fn oversized_chunked_body_without_length_gets_413() {
    let srv = demo_server().await;
    let mut sock = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = "POST /agentic_chat HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    sock.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b' '; 3000];
    for _ in 0..2 {
        sock.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
        sock.write_all(&chunk).await.unwrap();
        sock.write_all(b"\r\n").await.unwrap();
    }
    sock.write_all(b"0\r\n\r\n").await.unwrap();
    let mut resp = Vec::new();
    let _ = sock.read_to_end(&mut resp).await;
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"body_too_large\""), "{text}");
}

#[tokio::test]
async fn unknown_agent_and_wrong_method_get_json_errors() {
    let srv = demo_server().await;
    let mut c = Client::post_json(srv.addr, "/no_such_agent", &input("t", "r", "x")).await;
    assert_eq!(c.status, 404);
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "unknown_agent");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no_such_agent"));

    let mut c = Client::request(srv.addr, "DELETE", "/agentic_chat", &[], b"").await;
    assert_eq!(c.status, 405);
    assert_eq!(c.json().await["error"]["code"], "method_not_allowed");

    let mut c = Client::request(srv.addr, "GET", "/a/b/c", &[], b"").await;
    assert_eq!(c.status, 404);
    assert_eq!(c.json().await["error"]["code"], "not_found");
}

#[tokio::test]
async fn requests_without_accept_get_sse() {
    let srv = demo_server().await;
    let body = serde_json::to_vec(&input("t", "r", "hello")).unwrap();
    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &[("Content-Type", "application/json")],
        &body,
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("content-type"), Some("text/event-stream"));
    let ev = c.events().await;
    assert_eq!(
        ev.first().map(Event::event_type),
        Some(EventType::RunStarted)
    );
    assert_eq!(
        ev.last().map(Event::event_type),
        Some(EventType::RunFinished)
    );
}

#[tokio::test]
async fn capabilities_are_served_as_json() {
    let srv = demo_server().await;
    let mut c = Client::request(srv.addr, "GET", "/reasoning", &[], b"").await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("content-type"), Some("application/json"));
    let body = c.body().await;
    let caps: AgentCapabilities = agui_core::wire::from_json_slice(&body).unwrap();
    assert_eq!(caps.identity.unwrap().name.as_deref(), Some("reasoning"));
    let r = caps.reasoning.unwrap();
    assert_eq!((r.supported, r.encrypted), (Some(true), Some(true)));
    assert_eq!(caps.transport.unwrap().streaming, Some(true));

    let mut c = Client::request(srv.addr, "GET", "/agents", &[], b"").await;
    let list = c.json().await;
    let agents = list["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, agui_server::demo::NAMES);
    for a in agents {
        assert_eq!(a["path"], format!("/{}", a["name"].as_str().unwrap()));
        let _: AgentCapabilities = agui_core::wire::from_json_value(&a["capabilities"]).unwrap();
    }

    let mut c = Client::request(srv.addr, "GET", "/nope", &[], b"").await;
    assert_eq!(c.status, 404);
    assert_eq!(c.json().await["error"]["code"], "unknown_agent");
}

#[tokio::test]
async fn many_concurrent_streams_all_complete() {
    let srv = demo_server().await;
    let mut tasks = Vec::new();
    for i in 0..200 {
        let addr = srv.addr;
        tasks.push(tokio::spawn(async move {
            let name = agui_server::demo::NAMES[i % 9];
            let mut c = Client::post_json(
                addr,
                &format!("/{name}"),
                &input("t", &format!("r{i}"), "hi"),
            )
            .await;
            assert_eq!(c.status, 200);
            let ev = c.events().await;
            assert_eq!(
                ev.first().map(Event::event_type),
                Some(EventType::RunStarted)
            );
            assert_eq!(
                ev.last().map(Event::event_type),
                Some(EventType::RunFinished),
                "{name}"
            );
            ev.len()
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap() > 2);
    }
}

#[tokio::test]
async fn graceful_shutdown_lets_runs_finish_then_ends_the_rest() {
    let agent_quick = agent_fn(|_input, ctx, tx| async move {
        tx.emit(Event::step_started("s")).await?;
        // Finishes soon after being told about shutdown.
        ctx.cancelled().await;
        tx.emit(Event::step_finished("s")).await?;
        Ok(())
    });
    let agent_stuck = agent_fn(|_input, _ctx, tx| async move {
        tx.emit(Event::step_started("s")).await?;
        std::future::pending::<()>().await;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("quick", agent_quick)
        .agent("stuck", agent_stuck)
        .shutdown_grace(Duration::from_millis(300))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router.clone(), shutdown.clone()).await;
    let mut quick = Client::post_json(srv.addr, "/quick", &input("t", "r1", "x")).await;
    let mut stuck = Client::post_json(srv.addr, "/stuck", &input("t", "r2", "x")).await;
    for c in [&mut quick, &mut stuck] {
        assert_eq!(
            c.next_event_within(5).await.unwrap().event_type(),
            EventType::RunStarted
        );
        assert_eq!(
            c.next_event_within(5).await.unwrap().event_type(),
            EventType::StepStarted
        );
    }
    let t0 = std::time::Instant::now();
    shutdown.trigger();
    assert_eq!(
        types(&quick.events().await),
        ["STEP_FINISHED", "RUN_FINISHED"]
    );
    let rest = stuck.events().await;
    assert_eq!(types(&rest), ["RUN_ERROR"]);
    assert_eq!(run_error(&rest[0]).1, Some("shutdown"));
    assert!(t0.elapsed() >= Duration::from_millis(250));
    // The server stops once the streams are closed.
    tokio::time::timeout(Duration::from_secs(5), srv.task)
        .await
        .expect("serve returns after shutdown")
        .unwrap()
        .unwrap();

    // A request reaching the router after shutdown started is refused with 503.
    use tower::ServiceExt;
    let req = axum::http::Request::post("/quick")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            serde_json::to_vec(&input("t", "r3", "x")).unwrap(),
        ))
        .unwrap();
    let res = router.oneshot(req).await.unwrap();
    assert_eq!(res.status(), 503);
}

#[tokio::test]
async fn works_behind_tower_layers_cors_and_bearer_auth() {
    use axum::http::{header, HeaderValue, Method, Request, StatusCode};
    use axum::middleware::{self, Next};
    use axum::response::IntoResponse;
    use tower::ServiceExt;
    use tower_http::cors::CorsLayer;

    async fn auth(req: axum::extract::Request, next: Next) -> axum::response::Response {
        let ok = req.headers().get(header::AUTHORIZATION)
            == Some(&HeaderValue::from_static("Bearer s3cret"));
        if ok || req.method() == Method::OPTIONS {
            next.run(req).await
        } else {
            agui_server::ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "token required")
                .into_response()
        }
    }
    let app = agui_server::demo::router(Duration::ZERO)
        .into_router()
        .layer(middleware::from_fn(auth))
        .layer(
            CorsLayer::new()
                .allow_origin(HeaderValue::from_static("http://app.example"))
                .allow_methods([Method::POST])
                .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION]),
        );
    let body = || axum::body::Body::from(serde_json::to_vec(&input("t", "r", "hi")).unwrap());

    let preflight = Request::builder()
        .method(Method::OPTIONS)
        .uri("/agentic_chat")
        .header(header::ORIGIN, "http://app.example")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = app.clone().oneshot(preflight).await.unwrap();
    assert_eq!(
        res.headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .unwrap(),
        "http://app.example"
    );

    let anonymous = Request::post("/agentic_chat")
        .header(header::CONTENT_TYPE, "application/json")
        .body(body())
        .unwrap();
    let res = app.clone().oneshot(anonymous).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 16)
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["error"]["code"], "unauthorized");

    let authed = Request::post("/agentic_chat")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, "Bearer s3cret")
        .header(header::ORIGIN, "http://app.example")
        .body(body())
        .unwrap();
    let res = app.oneshot(authed).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .unwrap(),
        "http://app.example"
    );
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.starts_with("data: {\"type\":\"RUN_STARTED\""));
    assert!(text
        .trim_end()
        .ends_with("\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}"));
}

#[tokio::test]
async fn concurrent_runs_beyond_the_limit_get_503() {
    let agent = agent_fn(|_input, _ctx, tx| async move {
        tx.emit(Event::step_started("s")).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.emit(Event::step_finished("s")).await?;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("one", agent)
        .max_runs(Some(1))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut first = Client::post_json(srv.addr, "/one", &input("t", "r1", "x")).await;
    assert_eq!(
        first.next_event_within(5).await.unwrap().event_type(),
        EventType::RunStarted
    );
    let mut second = Client::post_json(srv.addr, "/one", &input("t", "r2", "x")).await;
    assert_eq!(second.status, 503);
    assert_eq!(second.json().await["error"]["code"], "too_many_runs");
    assert_eq!(
        types(&first.events().await),
        ["STEP_STARTED", "STEP_FINISHED", "RUN_FINISHED"]
    );
    // The slot is free again once the first run's stream is gone.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut third = Client::post_json(srv.addr, "/one", &input("t", "r3", "x")).await;
    assert_eq!(third.status, 200);
    assert_eq!(third.events().await.len(), 4);
}

#[tokio::test]
async fn content_negotiation_serves_protobuf_or_sse() {
    use agui_core::encoding::{Encoding, EventDecoder};
    let srv = demo_server().await;
    let body = serde_json::to_vec(&input("t", "r", "hi")).unwrap();
    for (accept, expected) in [
        (Some("application/vnd.ag-ui.event+proto"), Encoding::Proto),
        // As in the reference: any acceptable wildcard selects protobuf.
        (Some("*/*"), Encoding::Proto),
        (Some("text/event-stream"), Encoding::Sse),
        (
            Some("text/event-stream, application/vnd.ag-ui.event+proto;q=0"),
            Encoding::Sse,
        ),
        (None, Encoding::Sse),
    ] {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = accept {
            headers.push(("Accept", a));
        }
        let mut c = Client::request(srv.addr, "POST", "/agentic_chat", &headers, &body).await;
        assert_eq!(c.status, 200);
        assert_eq!(
            c.header("content-type"),
            Some(expected.content_type()),
            "{accept:?}"
        );
        let bytes = c.body().await;
        let mut dec = EventDecoder::new(expected);
        dec.push(&bytes);
        dec.finish();
        let events: Vec<Event> = std::iter::from_fn(|| dec.next())
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{accept:?}: {e}"));
        assert_eq!(
            events.first().map(Event::event_type),
            Some(EventType::RunStarted)
        );
        assert_eq!(
            events.last().map(Event::event_type),
            Some(EventType::RunFinished)
        );
        assert!(events.len() > 4);
    }
}

#[tokio::test]
async fn hostile_bodies_get_4xx_and_the_server_keeps_serving() {
    let shutdown = Shutdown::new();
    let router = agui_server::demo::router(Duration::ZERO)
        .body_timeout(Duration::from_millis(200))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let json_ct = [("Content-Type", "application/json")];

    // Deep nesting stops at the parser's depth limit.
    let deep = format!(
        r#"{{"threadId":"t","runId":"r","messages":[],"state":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let mut c = Client::request(srv.addr, "POST", "/agentic_chat", &json_ct, deep.as_bytes()).await;
    assert_eq!(c.status, 400);
    assert_eq!(c.json().await["error"]["code"], "malformed_json");

    // Not UTF-8.
    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &json_ct,
        b"{\"threadId\":\"\xff\xfe\"}",
    )
    .await;
    assert_eq!(c.status, 400);
    assert!(c.json().await["error"]["code"].is_string());

    // Not an object at all.
    let mut c = Client::request(srv.addr, "POST", "/agentic_chat", &json_ct, b"[1,2,3]").await;
    assert_eq!(c.status, 400);
    assert_eq!(c.json().await["error"]["code"], "invalid_input");

    // A body that never finishes arriving.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    sock.write_all(b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"thr")
        .await
        .unwrap();
    let mut resp = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut resp))
        .await
        .expect("the server answers the slow body")
        .unwrap();
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"body_timeout\""), "{text}");

    // Still serving.
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &input("t", "r", "hi")).await;
    assert_eq!(c.status, 200);
    assert_eq!(
        c.events().await.last().map(Event::event_type),
        Some(EventType::RunFinished)
    );
}

/// An agent whose `capabilities` panics.
struct BadCaps;
impl Agent for BadCaps {
    fn run(&self, _input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        futures_util::stream::empty().boxed()
    }
    fn capabilities(&self) -> AgentCapabilities {
        panic!("capabilities bug")
    }
}

#[tokio::test]
async fn a_panicking_capabilities_still_gets_an_answer() {
    let srv = serve_one("bad", BadCaps).await;
    let mut c = Client::request(srv.addr, "GET", "/bad", &[], b"").await;
    assert_eq!(c.status, 200);
    let caps: AgentCapabilities = agui_core::wire::from_json_slice(&c.body().await).unwrap();
    assert_eq!(caps.identity.unwrap().name.as_deref(), Some("bad"));
    let ev = Client::post_json(srv.addr, "/bad", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_FINISHED"]);
}
