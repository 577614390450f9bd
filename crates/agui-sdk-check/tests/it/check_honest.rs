//! The checker says what it exercised: agents that never pause or never call the
//! offered tool get "not exercised" with the reason, never "passed"; agents that
//! mishandle a resume get the finding of that case; a tool the request never offered
//! is a finding; and one root cause found in every run is reported once, naming the
//! scenarios it broke.
//!
//! The agent here is small and correct: it pauses when asked for approval, keeps each
//! thread's open interrupts, refuses a wrong resume with `RUN_ERROR`, calls the offered
//! tool and echoes the state. Each [`Fault`] makes it wrong in exactly one way.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agui_sdk_check::{Checker, Level, Report, Scenario, Status};
use agui_sdk_testkit::server::{spawn, TestServer};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The one thing the agent gets wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// Advertises interrupts but never pauses.
    NeverPauses,
    /// Never calls the tool it is offered.
    NeverCallsTool,
    /// Runs a resume that answers an interrupt the thread never raised.
    AcceptsUnknown,
    /// Runs a resume again after it was answered.
    AcceptsReplay,
    /// Runs a run without `resume` on a paused thread.
    RunsWithoutResume,
    /// Calls a tool nobody offered (`weather`) beside its declared one (`lookup`).
    CallsUnoffered,
    /// Names another thread than the input's in every `RUN_STARTED`, as a mock that
    /// makes up its own thread ids does.
    WrongThread,
    /// Refuses each wrong resume with HTTP 409 instead of `RUN_ERROR`.
    RefusesWithStatus,
}

/// The open interrupts of each thread, and those answered.
#[derive(Debug, Default)]
struct Threads {
    open: HashMap<String, Vec<String>>,
    answered: HashSet<String>,
}

#[derive(Debug)]
struct Agent {
    fault: Fault,
    threads: Mutex<Threads>,
    runs: AtomicU64,
}

/// `TEXT_MESSAGE_*` for one short message.
fn text(out: &mut Vec<Value>, id: &str, words: &str) {
    out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
    out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": words}));
    out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
}

/// `TOOL_CALL_*` for one call.
fn call(out: &mut Vec<Value>, id: &str, name: &str, args: &str) {
    out.push(json!({"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name}));
    out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": args}));
    out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
}

impl Agent {
    /// The events answering `input`.
    fn events(&self, input: &Value) -> Vec<Value> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let run = &input["runId"];
        let thread_in = input["threadId"].as_str().unwrap_or_default().to_owned();
        let thread = if self.fault == Fault::WrongThread {
            format!("mock-thread-{n}")
        } else {
            thread_in.clone()
        };
        let mut out = vec![
            json!({"type": "RUN_STARTED", "threadId": thread, "runId": run,
                                  "protocolVersion": agui_sdk_core::PROTOCOL_VERSION}),
        ];
        let last = input["messages"].as_array().and_then(|m| m.last());
        let user_text = last
            .filter(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .map(str::to_owned);
        let offered = input["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "agui_check_echo"));
        if input["state"].is_object() {
            out.push(json!({"type": "STATE_SNAPSHOT", "snapshot": input["state"]}));
        }
        if self.fault == Fault::CallsUnoffered && user_text.is_some() {
            call(&mut out, &format!("lookup-{n}"), "lookup", "{}");
            out.push(
                json!({"type": "TOOL_CALL_RESULT", "messageId": format!("result-{n}"),
                            "toolCallId": format!("lookup-{n}"), "content": "found"}),
            );
            call(&mut out, &format!("weather-{n}"), "weather", "{}");
        }
        let refuse = |mut out: Vec<Value>, why: &str| {
            out.push(json!({"type": "RUN_ERROR", "message": why, "code": "interrupt"}));
            out
        };
        let resume: Vec<String> = input["resume"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(|e| e["interruptId"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut threads = self.threads.lock().unwrap();
        let open = threads.open.get(&thread_in).cloned();
        let mut outcome = None;
        if !resume.is_empty() {
            let open_ids = open.clone().unwrap_or_default();
            if let Some(u) = resume.iter().find(|i| !open_ids.contains(i)) {
                let replay = threads.answered.contains(u);
                let accepted = if replay {
                    self.fault == Fault::AcceptsReplay
                } else {
                    self.fault == Fault::AcceptsUnknown
                };
                if !accepted {
                    return refuse(out, &format!("no open interrupt '{u}'"));
                }
            }
            if open_ids.iter().any(|i| !resume.contains(i)) {
                return refuse(out, "an open interrupt is unanswered");
            }
            threads.open.remove(&thread_in);
            threads.answered.extend(open_ids);
            text(&mut out, &format!("done-{n}"), "Approved: done.");
        } else if open.is_some() && self.fault != Fault::RunsWithoutResume {
            return refuse(out, "the thread is paused: answer its interrupts");
        } else if user_text.as_deref().is_some_and(|t| t.contains("approval"))
            && self.fault != Fault::NeverPauses
        {
            let id = format!("approval-{n}");
            threads.open.insert(thread_in, vec![id.clone()]);
            text(&mut out, &format!("ask-{n}"), "May I?");
            outcome = Some(json!({"type": "interrupt",
                                  "interrupts": [{"id": id, "reason": "tool_approval"}]}));
        } else if offered && user_text.is_some() && self.fault != Fault::NeverCallsTool {
            call(
                &mut out,
                &format!("echo-{n}"),
                "agui_check_echo",
                r#"{"text":"ping"}"#,
            );
        } else {
            text(&mut out, &format!("reply-{n}"), "Hello.");
        }
        let mut fin = json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run});
        if let Some(o) = outcome {
            fin["outcome"] = o;
        }
        out.push(fin);
        out
    }
}

async fn run(State(agent): State<Arc<Agent>>, body: Bytes) -> Response {
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let valid =
        input["threadId"].is_string() && input["runId"].is_string() && input["messages"].is_array();
    if !valid {
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"error":"the body is not a RunAgentInput"}"#,
        )
            .into_response();
    }
    let events = agent.events(&input);
    let refused = events.last().is_some_and(|e| e["type"] == "RUN_ERROR");
    if refused && agent.fault == Fault::RefusesWithStatus {
        return (
            StatusCode::CONFLICT,
            [(header::CONTENT_TYPE, "application/json")],
            events.last().unwrap()["message"].to_string(),
        )
            .into_response();
    }
    let mut sse = String::new();
    for e in events {
        sse.push_str(&format!("data: {e}\n\n"));
    }
    ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
}

async fn capabilities() -> Response {
    let caps = json!({
        "humanInTheLoop": {"supported": true, "interrupts": true},
        "tools": {"supported": true, "clientProvided": true, "items": [
            {"name": "lookup", "description": "Looks things up (the agent runs it).",
             "parameters": {"type": "object"}}]},
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        caps.to_string(),
    )
        .into_response()
}

async fn serve(fault: Fault) -> TestServer {
    let agent = Arc::new(Agent {
        fault,
        threads: Mutex::default(),
        runs: AtomicU64::new(0),
    });
    let app = axum::Router::new()
        .route("/agent", axum::routing::post(run).get(capabilities))
        .with_state(agent);
    spawn(app).await
}

async fn check(fault: Fault, scenarios: &[Scenario]) -> Report {
    let server = serve(fault).await;
    Checker::new(server.url("/agent"))
        .timeout(Duration::from_secs(5))
        .scenarios(scenarios.iter().copied())
        .run()
        .await
        .unwrap()
}

const INTERRUPTS: [Scenario; 4] = [
    Scenario::Interrupts,
    Scenario::InterruptsUnknown,
    Scenario::InterruptsReplay,
    Scenario::InterruptsNoResume,
];

/// Every scenario's status, and every finding as `(scenario, rule, level)`.
type Outcome = (
    Vec<(&'static str, Status)>,
    Vec<(&'static str, &'static str, Level)>,
);

fn outcome(r: &Report) -> Outcome {
    (
        r.scenarios.iter().map(|s| (s.id, s.status())).collect(),
        r.scenarios
            .iter()
            .flat_map(|s| s.findings.iter().map(move |f| (s.id, f.rule, f.level)))
            .collect(),
    )
}

#[tokio::test]
async fn the_correct_agent_passes_every_scenario_it_can_exercise() {
    let r = check(Fault::None, &Scenario::ALL).await;
    let text = r.to_text(false);
    let (status, findings) = outcome(&r);
    assert!(findings.is_empty(), "{text}");
    for (id, s) in status {
        let want = if id == "resumable" {
            Status::Skipped
        } else {
            Status::Passed
        };
        assert_eq!(s, want, "{id}:\n{text}");
    }
    // Each interrupt scenario paused, then made its one (or two) further runs.
    let requests: Vec<_> = INTERRUPTS
        .iter()
        .map(|s| r.scenario(s.id()).unwrap().requests)
        .collect();
    assert_eq!(requests, [2, 2, 3, 2], "{text}");
    assert!(
        text.ends_with(
            "0 errors, 0 warnings; 12 passed, 0 failed, 0 not exercised, 1 skipped: passed\n"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn an_agent_that_never_pauses_exercises_no_interrupt_scenario() {
    let r = check(Fault::NeverPauses, &INTERRUPTS).await;
    let text = r.to_text(false);
    assert!(r.passed(), "{text}");
    for s in &r.scenarios {
        assert_eq!(s.status(), Status::NotExercised, "{}:\n{text}", s.id);
        assert_eq!(
            s.not_exercised.as_deref(),
            Some("the first run did not pause")
        );
        assert!(s.findings.is_empty() && s.repeated.is_empty(), "{text}");
        assert_eq!(s.requests, 1);
    }
    assert!(
        text.contains("NOT EXERCISED interrupts (the first run did not pause)\n"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "0 errors, 0 warnings; 0 passed, 0 failed, 4 not exercised, 0 skipped: passed\n"
        ),
        "{text}"
    );
    let xml = r.to_junit();
    assert_eq!(
        xml.matches("<skipped message=\"not exercised: the first run did not pause\"/>")
            .count(),
        4,
        "{xml}"
    );
}

#[tokio::test]
async fn an_agent_that_never_calls_the_offered_tool_does_not_exercise_frontend_tool() {
    let r = check(Fault::NeverCallsTool, &[Scenario::FrontendTool]).await;
    let s = r.scenario("frontend-tool").unwrap();
    assert_eq!(s.status(), Status::NotExercised, "{}", r.to_text(false));
    assert_eq!(
        s.not_exercised.as_deref(),
        Some("the agent never called the offered tool")
    );
    assert!(s.findings.is_empty());
    assert_eq!(s.requests, 1, "no tool result to send");
    assert_eq!(
        r.to_json()["scenarios"][0]["status"],
        "not-exercised",
        "never reported as passed"
    );
}

#[tokio::test]
async fn each_mishandled_resume_gets_its_finding_and_nothing_else() {
    use Status::{Failed, Passed};
    let cases = [
        (
            Fault::AcceptsUnknown,
            "interrupts-unknown",
            "interrupts/unknown-resume-refused",
        ),
        (
            Fault::AcceptsReplay,
            "interrupts-replay",
            "interrupts/replay-refused",
        ),
        (
            Fault::RunsWithoutResume,
            "interrupts-no-resume",
            "interrupts/resume-required",
        ),
    ];
    for (fault, broken, rule) in cases {
        let r = check(fault, &INTERRUPTS).await;
        let text = r.to_text(false);
        let (status, findings) = outcome(&r);
        let want: Vec<_> = INTERRUPTS
            .iter()
            .map(|s| (s.id(), if s.id() == broken { Failed } else { Passed }))
            .collect();
        assert_eq!(status, want, "{fault:?}:\n{text}");
        assert_eq!(
            findings,
            [(broken, rule, Level::Error)],
            "{fault:?}:\n{text}"
        );
        let f = &r.scenario(broken).unwrap().findings[0];
        assert!(
            f.message.contains("instead of ending with RUN_ERROR"),
            "{fault:?}: {}",
            f.message
        );
        assert!(!r.passed());
    }
}

#[tokio::test]
async fn a_tool_nobody_offered_is_one_finding_naming_it() {
    let r = check(Fault::CallsUnoffered, &Scenario::ALL).await;
    let text = r.to_text(false);
    let (_, findings) = outcome(&r);
    // Every run the user ends calls `weather`: one finding, in the first scenario.
    assert_eq!(
        findings,
        [("chat", "tools/offered", Level::Warning)],
        "{text}"
    );
    let f = &r.scenario("chat").unwrap().findings[0];
    assert!(f.message.contains("tool 'weather'"), "{}", f.message);
    assert!(
        !text.contains("'lookup'"),
        "a declared tool is no finding: {text}"
    );
    assert_eq!(
        f.also_in,
        [
            "frontend-tool",
            "state",
            "interrupts",
            "interrupts-unknown",
            "interrupts-replay",
            "interrupts-no-resume",
            "content-negotiation",
            "hang-up",
            "protocol-version",
        ],
        "{text}"
    );
    assert_eq!(r.count(Level::Warning), 1);
    // A warning: the check passes, and the scenarios it touched still ran.
    assert!(r.passed(), "{text}");
    assert_eq!(
        r.scenario("frontend-tool").unwrap().status(),
        Status::Passed
    );
}

#[tokio::test]
async fn a_wrong_thread_in_every_run_is_one_finding_naming_the_scenarios() {
    let r = check(Fault::WrongThread, &Scenario::ALL).await;
    let text = r.to_text(false);
    let (status, findings) = outcome(&r);
    assert_eq!(
        findings,
        [("chat", "lifecycle/one-thread-per-stream", Level::Error)],
        "{text}"
    );
    assert_eq!(r.count(Level::Error), 1, "{text}");
    let broke = [
        "frontend-tool",
        "state",
        "interrupts",
        "interrupts-unknown",
        "interrupts-replay",
        "interrupts-no-resume",
        "content-negotiation",
        "hang-up",
        "protocol-version",
    ];
    assert_eq!(r.scenario("chat").unwrap().findings[0].also_in, broke);
    for (id, s) in status {
        let want = match id {
            "chat" => Status::Failed,
            "invalid-input" | "capabilities" => Status::Passed,
            "resumable" => Status::Skipped,
            _ => {
                assert!(broke.contains(&id));
                Status::Failed
            }
        };
        assert_eq!(s, want, "{id}:\n{text}");
    }
    // The other scenarios point to it once each, however many requests they made.
    let pv = r.scenario("protocol-version").unwrap();
    assert_eq!(pv.requests, 2);
    assert_eq!(pv.repeated.len(), 1);
    assert_eq!(pv.repeated[0].reported_in, "chat");
    assert_eq!(text.matches("one-thread-per-stream").count(), 10, "{text}");
    assert!(
        text.contains(&format!("(also in {})", broke.join(", "))),
        "{text}"
    );
}

#[tokio::test]
async fn a_resume_refused_with_a_status_instead_of_run_error_is_a_warning() {
    let r = check(Fault::RefusesWithStatus, &INTERRUPTS).await;
    let text = r.to_text(false);
    let (status, findings) = outcome(&r);
    assert!(status.iter().all(|(_, s)| *s == Status::Passed), "{text}");
    assert_eq!(
        findings,
        [
            (
                "interrupts-unknown",
                "interrupts/unknown-resume-refused",
                Level::Warning
            ),
            (
                "interrupts-replay",
                "interrupts/replay-refused",
                Level::Warning
            ),
            (
                "interrupts-no-resume",
                "interrupts/resume-required",
                Level::Warning
            ),
        ],
        "{text}"
    );
    assert!(
        text.contains("was refused with HTTP 409 rather than with RUN_ERROR"),
        "{text}"
    );
}

/// A resumable agent whose runs are over within two events: `RUN_STARTED` and
/// `RUN_FINISHED`, with SSE ids; a re-attach after them has nothing more (204).
async fn short_resumable() -> TestServer {
    async fn post(body: Bytes) -> Response {
        let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (thread, run) = (&input["threadId"], &input["runId"]);
        let sse = format!(
            "id: 1\ndata: {}\n\nid: 2\ndata: {}\n\n",
            json!({"type": "RUN_STARTED", "threadId": thread, "runId": run,
                   "protocolVersion": agui_sdk_core::PROTOCOL_VERSION}),
            json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run}),
        );
        ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
    }
    async fn caps() -> Response {
        (
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"transport":{"streaming":true,"resumable":true}}"#,
        )
            .into_response()
    }
    let app = axum::Router::new()
        .route("/agent", axum::routing::post(post).get(caps))
        .route(
            "/agent/runs/{run}/events",
            axum::routing::get(|| async { StatusCode::NO_CONTENT }),
        );
    spawn(app).await
}

#[tokio::test]
async fn a_run_over_before_the_hang_up_does_not_exercise_resumable() {
    let server = short_resumable().await;
    let r = Checker::new(server.url("/agent"))
        .timeout(Duration::from_secs(5))
        .scenarios([Scenario::Resumable])
        .run()
        .await
        .unwrap();
    let s = r.scenario("resumable").unwrap();
    assert_eq!(s.status(), Status::NotExercised, "{}", r.to_text(false));
    assert!(
        s.not_exercised
            .as_deref()
            .is_some_and(|w| w.contains("nothing was left to re-attach to")),
        "{s:?}"
    );
    assert!(s.findings.is_empty(), "{s:?}");
}
