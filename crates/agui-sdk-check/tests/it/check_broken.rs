//! Deliberately broken servers: each is the same small, correct AG-UI server wrong in
//! exactly one way, and each gets exactly the finding it deserves, at the right level,
//! and nothing else. The correct one passes every scenario without a finding.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_check::{Checker, Finding, Level, Report, Scenario, Status};
use agui_sdk_testkit::server::{spawn, TestServer};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The one thing a server gets wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    MissingRunStarted,
    NoTerminalEvent,
    RunIdMismatch,
    ThreadIdMismatch,
    OtherThread,
    ContentWithoutStart,
    OpenToolCall,
    EventAfterTerminal,
    WrongContentType,
    StreamForInvalidInput,
    PatchDoesNotApply,
    MalformedFraming,
    Stall,
    DuplicateInterruptIds,
    UnknownField,
    /// Advertises resumable runs, but its events carry no SSE ids.
    ResumableWithoutIds,
}

/// The events the server answers `input` with, given its fault.
fn events(fault: Fault, input: &Value) -> Vec<Value> {
    let (thread, run) = (&input["threadId"], &input["runId"]);
    let mut out = Vec::new();
    if fault != Fault::MissingRunStarted {
        let t = if fault == Fault::OtherThread {
            json!("elsewhere")
        } else {
            thread.clone()
        };
        out.push(json!({"type": "RUN_STARTED", "threadId": t, "runId": run,
                        "protocolVersion": agui_sdk_core::PROTOCOL_VERSION}));
    }
    let last_role = input["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["role"].clone());
    let offered = input["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "agui_check_echo"));
    if input["state"].is_object() {
        out.push(json!({"type": "STATE_SNAPSHOT", "snapshot": {"counter": 1}}));
        let path = if fault == Fault::PatchDoesNotApply {
            "/missing/deep"
        } else {
            "/counter"
        };
        out.push(
            json!({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": path, "value": 2}]}),
        );
    }
    if offered && last_role == Some(json!("user")) {
        out.push(json!({"type": "TOOL_CALL_START", "toolCallId": "call-1", "toolCallName": "agui_check_echo"}));
        out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": "call-1", "delta": "{\"text\":\"ping\"}"}));
        out.push(json!({"type": "TOOL_CALL_END", "toolCallId": "call-1"}));
    } else {
        out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"}));
        let mut content =
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "Hi"});
        match fault {
            Fault::ContentWithoutStart => content["messageId"] = json!("never-started"),
            Fault::UnknownField => content["vendorExtra"] = json!(1),
            _ => {}
        }
        out.push(content);
        out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": "m-1"}));
    }
    if fault == Fault::OpenToolCall {
        out.push(
            json!({"type": "TOOL_CALL_START", "toolCallId": "open", "toolCallName": "lookup"}),
        );
    }
    let mut fin = json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run});
    match fault {
        Fault::RunIdMismatch => fin["runId"] = json!("another-run"),
        Fault::ThreadIdMismatch => fin["threadId"] = json!("another-thread"),
        Fault::OtherThread => fin["threadId"] = json!("elsewhere"),
        Fault::DuplicateInterruptIds => {
            fin["outcome"] = json!({"type": "interrupt", "interrupts": [
                {"id": "i-1", "reason": "approval"}, {"id": "i-1", "reason": "approval"}]})
        }
        _ => {}
    }
    if fault != Fault::NoTerminalEvent && fault != Fault::Stall {
        out.push(fin);
    }
    if fault == Fault::EventAfterTerminal {
        out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": "late", "role": "assistant"}));
    }
    out
}

fn valid_input(v: &Value) -> bool {
    v["threadId"].is_string() && v["runId"].is_string() && v["messages"].is_array()
}

async fn agent(State(fault): State<Arc<Fault>>, body: Bytes) -> Response {
    let fault = *fault;
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let input = if valid_input(&input) {
        input
    } else if fault == Fault::StreamForInvalidInput {
        json!({"threadId": "t", "runId": "r", "messages": []})
    } else {
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"error":"the body is not a RunAgentInput"}"#,
        )
            .into_response();
    };
    let mut sse = String::new();
    let events = events(fault, &input);
    for (i, e) in events.iter().enumerate() {
        sse.push_str("data: ");
        sse.push_str(&e.to_string());
        // The last event's frame left unfinished: no blank line ends it.
        if !(fault == Fault::MalformedFraming && i + 1 == events.len()) {
            sse.push_str("\n\n");
        }
    }
    let content_type = if fault == Fault::WrongContentType {
        "application/json"
    } else {
        "text/event-stream"
    };
    let body = if fault == Fault::Stall {
        // What was written, then silence with the connection open.
        let head = futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from(sse))]);
        Body::from_stream(futures_util::StreamExt::chain(
            head,
            futures_util::stream::pending(),
        ))
    } else {
        Body::from(sse)
    };
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn capabilities(State(fault): State<Arc<Fault>>) -> Response {
    if *fault != Fault::ResumableWithoutIds {
        return (StatusCode::NOT_FOUND, "use POST").into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"transport":{"streaming":true,"resumable":true}}"#,
    )
        .into_response()
}

async fn serve(fault: Fault) -> TestServer {
    let app = axum::Router::new()
        .route("/agent", axum::routing::post(agent).get(capabilities))
        .with_state(Arc::new(fault));
    spawn(app).await
}

async fn check(fault: Fault, scenarios: &[Scenario]) -> Report {
    let server = serve(fault).await;
    Checker::new(server.url("/agent"))
        .timeout(Duration::from_millis(500))
        .scenarios(scenarios.iter().copied())
        .run()
        .await
        .unwrap()
}

/// A finding as the tests compare it: rule, level, request, event.
type Seen = (&'static str, Level, usize, Option<u64>);

fn all_findings(r: &Report) -> Vec<Seen> {
    r.scenarios
        .iter()
        .flat_map(|s| &s.findings)
        .map(|f: &Finding| (f.rule, f.level, f.request, f.event))
        .collect()
}

#[tokio::test]
async fn the_correct_server_passes_every_scenario_without_a_finding() {
    let r = check(Fault::None, &Scenario::ALL).await;
    assert!(r.passed(), "{}", r.to_text(false));
    assert!(all_findings(&r).is_empty(), "{}", r.to_text(false));
    // It calls the offered tool, so the tool's answer went out in a second run.
    assert_eq!(r.scenario("frontend-tool").unwrap().requests, 2);
    // It sends state: both scenarios reached what they test.
    for id in ["frontend-tool", "state"] {
        assert_eq!(r.scenario(id).unwrap().status(), Status::Passed, "{id}");
    }
    // No capabilities: the scenarios that need them say why they did not run.
    for id in [
        "interrupts",
        "interrupts-unknown",
        "interrupts-replay",
        "interrupts-no-resume",
        "capabilities",
        "resumable",
    ] {
        let s = r.scenario(id).unwrap();
        assert!(s.skipped.as_deref().is_some_and(|w| !w.is_empty()), "{id}");
    }
}

#[tokio::test]
async fn each_broken_server_gets_exactly_its_finding() {
    use Level::{Error, Warning};
    let chat = [Scenario::Chat];
    let cases: [(Fault, &[Scenario], Vec<Seen>); 16] = [
        (
            Fault::MissingRunStarted,
            &chat,
            vec![("lifecycle/run-started-first", Error, 0, Some(0))],
        ),
        (
            Fault::NoTerminalEvent,
            &chat,
            vec![("lifecycle/terminal-event", Error, 0, None)],
        ),
        (
            Fault::RunIdMismatch,
            &chat,
            vec![("lifecycle/run-finished-run-id", Error, 0, Some(4))],
        ),
        (
            Fault::ThreadIdMismatch,
            &chat,
            vec![("lifecycle/run-finished-thread-id", Error, 0, Some(4))],
        ),
        (
            Fault::OtherThread,
            &chat,
            vec![("lifecycle/one-thread-per-stream", Error, 0, Some(0))],
        ),
        (
            Fault::ContentWithoutStart,
            &chat,
            vec![("messages/started-before-use", Error, 0, Some(2))],
        ),
        (
            Fault::OpenToolCall,
            &chat,
            vec![
                (
                    "lifecycle/run-finished-closes-everything",
                    Error,
                    0,
                    Some(5),
                ),
                // The open call is of a tool nobody offered.
                ("tools/offered", Warning, 0, Some(4)),
            ],
        ),
        (
            Fault::EventAfterTerminal,
            &chat,
            vec![("lifecycle/no-events-after-run-finished", Error, 0, Some(5))],
        ),
        (
            Fault::WrongContentType,
            &chat,
            vec![("transport/content-type", Error, 0, None)],
        ),
        (
            Fault::StreamForInvalidInput,
            &[Scenario::InvalidInput],
            vec![
                ("input/invalid-rejected", Error, 0, None),
                ("input/invalid-rejected", Error, 1, None),
            ],
        ),
        (
            Fault::PatchDoesNotApply,
            &[Scenario::State],
            vec![("state/delta-applies", Error, 0, Some(2))],
        ),
        (
            Fault::MalformedFraming,
            &chat,
            vec![("transport/framing", Error, 0, Some(4))],
        ),
        (
            Fault::Stall,
            &chat,
            vec![("transport/stall", Error, 0, None)],
        ),
        (
            Fault::DuplicateInterruptIds,
            &chat,
            vec![("interrupts/distinct-ids", Error, 0, Some(4))],
        ),
        (
            Fault::UnknownField,
            &chat,
            vec![("events/unknown-field", Warning, 0, Some(2))],
        ),
        (
            Fault::ResumableWithoutIds,
            &[Scenario::Resumable, Scenario::Capabilities],
            vec![("resumable/event-ids", Error, 0, None)],
        ),
    ];
    for (fault, scenarios, want) in cases {
        let r = check(fault, scenarios).await;
        assert_eq!(all_findings(&r), want, "{fault:?}:\n{}", r.to_text(false));
        assert_eq!(r.passed(), want.iter().all(|f| f.1 == Warning), "{fault:?}");
        // Every finding says what it saw.
        for f in r.scenarios.iter().flat_map(|s| &s.findings) {
            assert!(!f.message.is_empty(), "{fault:?}");
        }
        // Otherwise correct: the scenarios the fault does not touch pass.
        if scenarios == chat && fault != Fault::WrongContentType && fault != Fault::Stall {
            let r = check(fault, &[Scenario::InvalidInput]).await;
            assert!(
                all_findings(&r).is_empty(),
                "{fault:?}:\n{}",
                r.to_text(false)
            );
        }
    }
}

#[tokio::test]
async fn a_stall_is_reported_and_the_check_goes_on() {
    let r = check(
        Fault::Stall,
        &[Scenario::Chat, Scenario::InvalidInput, Scenario::Chat],
    )
    .await;
    let ids: Vec<_> = r.scenarios.iter().map(|s| (s.id, s.passed())).collect();
    assert_eq!(
        ids,
        [("chat", false), ("invalid-input", true), ("chat", false)]
    );
    let f = &r.scenarios[0].findings[0];
    assert!(
        f.message.contains("no byte for 0.5 s after 4 events"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn the_response_and_scenario_deadlines_end_what_the_timeout_does_not() {
    // A timeout far longer than the deadlines: only they can end the silent stream.
    let server = serve(Fault::Stall).await;
    let checker = Checker::new(server.url("/agent"))
        .timeout(Duration::from_secs(60))
        .scenarios([Scenario::Chat, Scenario::InvalidInput]);
    let started = std::time::Instant::now();
    let r = checker
        .clone()
        .response_deadline(Duration::from_millis(400))
        .run()
        .await
        .unwrap();
    let f = &r.scenarios[0].findings[0];
    assert_eq!((f.rule, f.level), ("transport/stall", Level::Error));
    assert!(
        f.message.contains(
            "the response did not end within 0.4 s of its request (the response deadline) after 4 events"
        ),
        "{}",
        f.message
    );
    assert!(r.scenarios[1].passed(), "the check goes on");
    let r = checker
        .scenario_deadline(Duration::from_millis(400))
        .run()
        .await
        .unwrap();
    let f = r.scenarios[0].findings.last().unwrap();
    assert_eq!((f.rule, f.level), ("transport/stall", Level::Error));
    assert!(
        f.message
            .contains("the scenario did not end within 0.4 s (the scenario deadline): stopped"),
        "{}",
        f.message
    );
    assert!(r.scenarios[1].passed(), "the check goes on");
    // Both checks together, well under one timeout.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}
