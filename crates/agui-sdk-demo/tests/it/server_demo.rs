//! The ten demo agents, each run over loopback HTTP: every stream is well formed (the
//! server verifies it, and these tests check the lifecycle and the ids), and each agent
//! shows its feature.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use agui_sdk_core::{Event, RunFinishedOutcome};
use agui_sdk_server::Shutdown;
use common::{start, types, Client, TestServer};
use serde_json::{json, Value};

async fn demo() -> TestServer {
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::ZERO)
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}

async fn run(srv: &TestServer, agent: &str, body: Value) -> Vec<Event> {
    let mut c = Client::post_json(srv.addr, &format!("/{agent}"), &body).await;
    assert_eq!(c.status, 200, "{agent}");
    c.events().await
}

fn body(thread: &str, run: &str, messages: Value) -> Value {
    json!({ "threadId": thread, "runId": run, "messages": messages })
}

fn user(text: &str) -> Value {
    json!([{ "id": "u1", "role": "user", "content": text }])
}

/// Checks the lifecycle and the ids of one successful run; returns the ids it minted.
fn check_run(events: &[Event]) -> HashSet<String> {
    assert!(
        matches!(events.first(), Some(Event::RunStarted(_))),
        "{:?}",
        types(events)
    );
    assert!(
        matches!(events.last(), Some(Event::RunFinished(_))),
        "{:?}",
        types(events)
    );
    assert!(!events.iter().any(|e| matches!(e, Event::RunError(_))));
    // The reference client's verification rules, applied here too.
    agui_sdk_core::semantics::verify::verify_events(events).unwrap_or_else(|e| panic!("{e}"));
    let mut ids = HashSet::new();
    let mut started_calls = HashSet::new();
    for e in events {
        let minted = match e {
            Event::TextMessageStart(m) => Some(m.message_id.clone()),
            Event::ReasoningMessageStart(m) => Some(m.message_id.clone()),
            Event::ToolCallResult(r) => {
                assert!(
                    started_calls.contains(&r.tool_call_id),
                    "result for a call not started in this run"
                );
                assert!(
                    matches!(r.content, agui_sdk_core::Content::Text(_)),
                    "result content is a string"
                );
                Some(r.message_id.clone())
            }
            Event::ToolCallStart(t) => {
                started_calls.insert(t.tool_call_id.clone());
                Some(t.tool_call_id.clone())
            }
            _ => None,
        };
        if let Some(id) = minted {
            assert!(ids.insert(id.clone()), "id {id} used twice");
        }
    }
    // Tool arguments are valid JSON once complete.
    for call in &started_calls {
        let args = tool_args(events, call);
        serde_json::from_str::<Value>(&args)
            .unwrap_or_else(|e| panic!("args of {call}: {e}: {args}"));
    }
    ids
}

fn tool_args(events: &[Event], call: &str) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallArgs(a) if a.tool_call_id == call => Some(a.delta.as_str()),
            _ => None,
        })
        .collect()
}

fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextMessageContent(c) => Some(c.delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The state after applying the run's state events to `state`.
fn apply_state(mut state: Value, events: &[Event]) -> Value {
    for e in events {
        match e {
            Event::StateSnapshot(s) => state = s.snapshot.clone(),
            Event::StateDelta(d) => {
                let patch: json_patch::Patch =
                    serde_json::from_value(serde_json::to_value(&d.delta).unwrap()).unwrap();
                json_patch::patch(&mut state, &patch).expect("delta applies");
            }
            _ => {}
        }
    }
    state
}

#[tokio::test]
async fn every_demo_agent_streams_a_well_formed_run_with_fresh_ids() {
    let srv = demo().await;
    for name in agui_sdk_demo::NAMES {
        // Separate threads: the interrupt agent expects an answer on the same thread.
        let a = run(&srv, name, body("t1", "r1", user("hi"))).await;
        let b = run(&srv, name, body("t2", "r2", user("hi"))).await;
        let (ia, ib) = (check_run(&a), check_run(&b));
        assert!(!ia.is_empty(), "{name} minted nothing");
        assert!(ia.is_disjoint(&ib), "{name} reuses ids across runs");
    }
}

#[tokio::test]
async fn agentic_chat_replies_and_answers_a_tool_result() {
    let srv = demo().await;
    let ev = run(
        &srv,
        "agentic_chat",
        body("t", "r1", user("tell me a joke")),
    )
    .await;
    assert!(text_of(&ev).contains("tell me a joke"));
    let contents = ev
        .iter()
        .filter(|e| matches!(e, Event::TextMessageContent(_)))
        .count();
    assert!(contents > 3, "the reply streams in pieces");

    let msgs = json!([
        { "id": "u1", "role": "user", "content": "change the background" },
        { "id": "a1", "role": "assistant", "toolCalls": [{ "id": "c1", "type": "function", "function": { "name": "change_background", "arguments": "{}" } }] },
        { "id": "t1", "role": "tool", "toolCallId": "c1", "content": "background is blue" }
    ]);
    let ev = run(&srv, "agentic_chat", body("t", "r2", msgs)).await;
    check_run(&ev);
    assert!(text_of(&ev).contains("background is blue"));
}

#[tokio::test]
async fn backend_tool_rendering_calls_and_answers_its_tool() {
    let srv = demo().await;
    let ev = run(
        &srv,
        "backend_tool_rendering",
        body("t", "r", user("Berlin")),
    )
    .await;
    check_run(&ev);
    let Some(Event::ToolCallStart(start)) =
        ev.iter().find(|e| matches!(e, Event::ToolCallStart(_)))
    else {
        panic!("no tool call")
    };
    assert_eq!(start.tool_call_name, "get_weather");
    let args: Value = serde_json::from_str(&tool_args(&ev, &start.tool_call_id)).unwrap();
    assert_eq!(args, json!({ "location": "Berlin" }));
    let result = ev
        .iter()
        .find_map(|e| match e {
            Event::ToolCallResult(r) => Some(r),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.tool_call_id, start.tool_call_id);
    let value: Value = serde_json::from_str(&result.content.to_text()).unwrap();
    assert_eq!(value["location"], "Berlin");
    assert!(text_of(&ev).contains("Berlin"));
}

#[tokio::test]
async fn human_in_the_loop_streams_partial_arguments_then_answers_the_review() {
    let srv = demo().await;
    let ev = run(
        &srv,
        "human_in_the_loop",
        body("t", "r1", user("plan a cake")),
    )
    .await;
    check_run(&ev);
    let pieces: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallArgs(a) => Some(a.delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(pieces.len() >= 10, "arguments stream in many pieces");
    // Every proper prefix is partial JSON.
    let mut acc = String::new();
    for p in &pieces[..pieces.len() - 1] {
        acc.push_str(p);
        assert!(serde_json::from_str::<Value>(&acc).is_err());
    }
    let call = match ev.iter().find(|e| matches!(e, Event::ToolCallStart(_))) {
        Some(Event::ToolCallStart(s)) => s.clone(),
        _ => panic!("no tool call"),
    };
    assert_eq!(call.tool_call_name, "generate_task_steps");
    // The call belongs to the intro message, which exists in the stream.
    let parent = call.parent_message_id.clone().unwrap();
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::TextMessageStart(m) if m.message_id == parent)));
    // The run ends with the call unanswered (a frontend tool).
    assert!(!ev.iter().any(|e| matches!(e, Event::ToolCallResult(_))));

    let mut args: Value = serde_json::from_str(&tool_args(&ev, &call.tool_call_id)).unwrap();
    args["steps"][1]["status"] = json!("disabled");
    let msgs = json!([
        { "id": "u1", "role": "user", "content": "plan a cake" },
        { "id": parent, "role": "assistant", "toolCalls": [{ "id": call.tool_call_id, "type": "function", "function": { "name": "generate_task_steps", "arguments": tool_args(&ev, &call.tool_call_id) } }] },
        { "id": "tr1", "role": "tool", "toolCallId": call.tool_call_id, "content": args.to_string() }
    ]);
    let ev = run(&srv, "human_in_the_loop", body("t", "r2", msgs)).await;
    check_run(&ev);
    assert!(
        text_of(&ev).contains("Executing the 3 steps"),
        "{}",
        text_of(&ev)
    );
}

#[tokio::test]
async fn agentic_generative_ui_publishes_a_snapshot_then_deltas() {
    let srv = demo().await;
    let ev = run(&srv, "agentic_generative_ui", body("t", "r", user("go"))).await;
    check_run(&ev);
    let kinds: Vec<&str> = types(&ev)
        .into_iter()
        .filter(|t| t.starts_with("STATE"))
        .collect();
    assert_eq!(
        kinds,
        [
            "STATE_SNAPSHOT",
            "STATE_DELTA",
            "STATE_DELTA",
            "STATE_DELTA",
            "STATE_DELTA"
        ]
    );
    let state = apply_state(Value::Null, &ev);
    let steps = state["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    assert!(steps.iter().all(|s| s["status"] == "completed"));
}

#[tokio::test]
async fn tool_based_generative_ui_calls_a_frontend_tool() {
    let srv = demo().await;
    let ev = run(
        &srv,
        "tool_based_generative_ui",
        body("t", "r", user("a haiku")),
    )
    .await;
    check_run(&ev);
    let call = ev
        .iter()
        .find_map(|e| match e {
            Event::ToolCallStart(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.tool_call_name, "generate_haiku");
    let args: Value = serde_json::from_str(&tool_args(&ev, &call.tool_call_id)).unwrap();
    assert_eq!(args["english"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn shared_state_reads_and_updates_the_clients_state() {
    let srv = demo().await;
    let sent = json!({ "title": "Soup", "ingredients": [{ "name": "Water" }], "instructions": ["Boil"], "servings": 2 });
    let mut b = body("t", "r1", user("improve it"));
    b["state"] = sent.clone();
    let ev = run(&srv, "shared_state", b).await;
    check_run(&ev);
    assert!(
        !ev.iter().any(|e| matches!(e, Event::StateSnapshot(_))),
        "a delta suffices"
    );
    let state = apply_state(sent.clone(), &ev);
    assert_eq!(state["title"], "Soup");
    assert_eq!(state["servings"], 2);
    assert_eq!(
        state["instructions"],
        json!(["Boil", "Step 2: taste and adjust"])
    );
    assert_eq!(state["updatedBy"], "agent");

    // Without state: a snapshot first, then the update.
    let ev = run(&srv, "shared_state", body("t", "r2", user("start"))).await;
    check_run(&ev);
    assert!(matches!(ev[1], Event::StateSnapshot(_)));
    let state = apply_state(Value::Null, &ev);
    assert_eq!(state["instructions"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn predictive_state_updates_predicts_then_confirms() {
    let srv = demo().await;
    let mut b = body("t", "r", user("write"));
    b["state"] = json!({ "document": "" });
    let ev = run(&srv, "predictive_state_updates", b).await;
    check_run(&ev);
    let custom_at = ev
        .iter()
        .position(|e| matches!(e, Event::Custom(c) if c.name == "PredictState"))
        .unwrap();
    let call_at = ev
        .iter()
        .position(|e| matches!(e, Event::ToolCallStart(_)))
        .unwrap();
    assert!(custom_at < call_at);
    let call = match &ev[call_at] {
        Event::ToolCallStart(s) => s.tool_call_id.clone(),
        _ => unreachable!(),
    };
    let args: Value = serde_json::from_str(&tool_args(&ev, &call)).unwrap();
    let state = apply_state(json!({ "document": "" }), &ev);
    assert_eq!(state["document"], args["document"]);
}

#[tokio::test]
async fn reasoning_streams_a_span_with_an_encrypted_value() {
    let srv = demo().await;
    let ev = run(&srv, "reasoning", body("t", "r", user("why?"))).await;
    check_run(&ev);
    let t: Vec<&str> = types(&ev)
        .into_iter()
        .filter(|t| t.starts_with("REASONING"))
        .collect();
    assert_eq!(t.first(), Some(&"REASONING_START"));
    assert_eq!(t.last(), Some(&"REASONING_END"));
    assert!(t.contains(&"REASONING_MESSAGE_CONTENT"));
    let msg = ev
        .iter()
        .find_map(|e| match e {
            Event::ReasoningMessageStart(m) => Some(m.message_id.clone()),
            _ => None,
        })
        .unwrap();
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::ReasoningEncryptedValue(v) if v.entity_id == msg)));
}

#[tokio::test]
async fn subagents_attribute_their_events() {
    let srv = demo().await;
    let ev = run(&srv, "subagents", body("t", "r", user("owls"))).await;
    check_run(&ev);
    let start = ev
        .iter()
        .position(|e| matches!(e, Event::SubagentStarted(_)))
        .unwrap();
    let end = ev
        .iter()
        .position(|e| matches!(e, Event::SubagentFinished(_)))
        .unwrap();
    let sub = ev[start].subagent_run_id().unwrap().to_owned();
    assert!(start + 1 < end);
    for e in &ev[start + 1..end] {
        assert_eq!(
            e.subagent_run_id(),
            Some(sub.as_str()),
            "{}",
            e.event_type()
        );
    }
    // The parent's own messages carry no attribution.
    for e in ev[..start].iter().chain(&ev[end + 1..]) {
        if let Event::TextMessageContent(_) = e {
            assert_eq!(e.subagent_run_id(), None);
        }
    }
    match &ev[start] {
        Event::SubagentStarted(s) => {
            let call = ev.iter().find_map(|e| match e {
                Event::ToolCallStart(c) => Some(c.tool_call_id.clone()),
                _ => None,
            });
            assert_eq!(s.parent_tool_call_id, call);
        }
        _ => unreachable!(),
    }
}

/// The interrupt id of a run that paused.
fn paused_on(ev: &[Event]) -> String {
    match ev.last() {
        Some(Event::RunFinished(f)) => match &f.outcome {
            Some(RunFinishedOutcome::Interrupt(i)) => i.interrupts[0].id.clone(),
            other => panic!("expected an interrupt outcome, got {other:?}"),
        },
        _ => panic!("{:?}", types(ev)),
    }
}

/// The code of a run refused with `RUN_ERROR` before the agent started.
fn refused(ev: &[Event]) -> (Option<String>, String) {
    assert_eq!(types(ev), ["RUN_STARTED", "RUN_ERROR"]);
    match &ev[1] {
        Event::RunError(e) => (e.code.clone(), e.message.clone()),
        _ => unreachable!(),
    }
}

fn resumed(thread: &str, run: &str, resume: Value) -> Value {
    let mut b = body(thread, run, user("x"));
    b["resume"] = resume;
    b
}

#[tokio::test]
async fn interrupt_pauses_and_resume_completes_it() {
    let srv = demo().await;
    let ev = run(&srv, "interrupt", body("th", "r1", user("send the email"))).await;
    check_run(&ev);
    let interrupt_id = paused_on(&ev);
    match ev.last() {
        Some(Event::RunFinished(f)) => match &f.outcome {
            Some(RunFinishedOutcome::Interrupt(i)) => {
                let ask = &i.interrupts[0];
                assert!(ask.message.is_some());
                let schema = serde_json::to_value(&ask.response_schema).unwrap();
                assert_eq!(schema["properties"]["approved"]["type"], "boolean");
            }
            _ => unreachable!(),
        },
        _ => unreachable!(),
    }

    // A run that leaves it unanswered is refused by the runtime.
    let ev = run(&srv, "interrupt", body("th", "r2", user("and now?"))).await;
    let (code, message) = refused(&ev);
    assert_eq!(code.as_deref(), Some("interrupt_resume_required"));
    assert!(message.contains(&interrupt_id), "{message}");

    // Answering an interrupt that is not open is refused too.
    let bogus = json!([{ "interruptId": "bogus", "status": "resolved" }]);
    let ev = run(&srv, "interrupt", resumed("th", "r3", bogus)).await;
    assert_eq!(refused(&ev).0.as_deref(), Some("interrupt_unknown"));

    // A payload that does not match the responseSchema is refused.
    let wrong = json!([{ "interruptId": interrupt_id, "status": "resolved", "payload": { "approved": "yes" } }]);
    let ev = run(&srv, "interrupt", resumed("th", "r3b", wrong)).await;
    assert_eq!(refused(&ev).0.as_deref(), Some("interrupt_invalid_payload"));

    // The resume completes it: the email is sent.
    let answer = json!([{ "interruptId": interrupt_id, "status": "resolved", "payload": { "approved": true } }]);
    let ev = run(&srv, "interrupt", resumed("th", "r4", answer)).await;
    check_run(&ev);
    assert!(matches!(ev.last(), Some(Event::RunFinished(f)) if f.outcome.is_none()));
    let text = text_of(&ev);
    assert!(text.contains("Sending the email"), "{text}");
    assert!(text.contains("Approved: the email is sent."), "{text}");

    // A cancelled answer completes it too, without approval.
    let ev = run(&srv, "interrupt", body("th2", "r5", user("send"))).await;
    let id = paused_on(&ev);
    let cancel = json!([{ "interruptId": id, "status": "cancelled" }]);
    let ev = run(&srv, "interrupt", resumed("th2", "r6", cancel)).await;
    check_run(&ev);
    let text = text_of(&ev);
    assert!(text.contains("Not approved: nothing was sent."), "{text}");
    assert!(!text.contains("Sending"), "{text}");

    // So does `approved: false`.
    let ev = run(&srv, "interrupt", body("th3", "r7", user("send"))).await;
    let id = paused_on(&ev);
    let no = json!([{ "interruptId": id, "status": "resolved", "payload": { "approved": false } }]);
    let ev = run(&srv, "interrupt", resumed("th3", "r8", no)).await;
    check_run(&ev);
    assert!(text_of(&ev).contains("Not approved"));
}

/// The email is sent at most once: the answer that sent it is consumed by the run that
/// succeeded, and the same answer sent again (a retry, a second tab) is refused with
/// `interrupt_answered` before the agent runs; the thread is then free again.
#[tokio::test]
async fn an_approved_email_is_sent_once_and_a_replay_is_refused() {
    let srv = demo().await;
    let id = paused_on(&run(&srv, "interrupt", body("once", "r1", user("send"))).await);
    let answer =
        json!([{ "interruptId": id, "status": "resolved", "payload": { "approved": true } }]);
    let ev = run(&srv, "interrupt", resumed("once", "r2", answer.clone())).await;
    check_run(&ev);
    assert!(text_of(&ev).contains("Approved: the email is sent."));

    for replay in ["r3", "r4"] {
        let ev = run(&srv, "interrupt", resumed("once", replay, answer.clone())).await;
        let (code, message) = refused(&ev);
        assert_eq!(code.as_deref(), Some("interrupt_answered"), "{message}");
        assert!(message.contains(&id), "{message}");
        assert!(!text_of(&ev).contains("Sending"));
    }

    // Nothing is open any more: a new run asks again, with a new interrupt.
    let ev = run(&srv, "interrupt", body("once", "r5", user("send another"))).await;
    check_run(&ev);
    assert_ne!(paused_on(&ev), id);
}

/// The agent's declared capabilities say `humanInTheLoop.interrupts`, in its shape.
#[tokio::test]
async fn the_interrupt_agent_declares_interrupts_under_human_in_the_loop() {
    use agui_sdk_server::Agent;
    let caps = agui_sdk_demo::InterruptAgent::new(Duration::ZERO).capabilities();
    let caps = serde_json::to_value(&caps).unwrap();
    assert_eq!(caps["humanInTheLoop"]["interrupts"], true);
    assert_eq!(caps["humanInTheLoop"]["supported"], true);
    assert_eq!(caps["humanInTheLoop"]["approvals"], true);
    assert!(caps.get("interrupts").is_none(), "{caps}");
}

/// A resumed run cut off while the email is being sent (its client goes away) releases
/// the answer, and the retry with the same answer does not send the email again: the
/// runtime kept what the cut-off attempt recorded.
#[tokio::test]
async fn a_retry_after_an_attempt_cut_off_while_sending_does_not_send_again() {
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::from_millis(50))
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let id = paused_on(&run(&srv, "interrupt", body("cut", "r1", user("send"))).await);
    let answer =
        json!([{ "interruptId": id, "status": "resolved", "payload": { "approved": true } }]);

    // The first attempt: gone once the email is being sent.
    let mut c = Client::post_json(
        srv.addr,
        "/interrupt",
        &resumed("cut", "r2", answer.clone()),
    )
    .await;
    assert_eq!(c.status, 200);
    loop {
        match c.next_event_within(10).await {
            Some(Event::TextMessageContent(t)) if t.delta.contains("Sending the email") => break,
            Some(Event::RunFinished(_) | Event::RunError(_)) | None => {
                panic!("the attempt ended before it sent")
            }
            Some(_) => {}
        }
    }
    drop(c);

    // The retry: refused while the cut-off attempt still holds the answer, then run.
    let mut retries = 0;
    let ev = loop {
        let ev = run(
            &srv,
            "interrupt",
            resumed("cut", &format!("r3-{retries}"), answer.clone()),
        )
        .await;
        match ev.get(1) {
            Some(Event::RunError(e))
                if e.code.as_deref() == Some("interrupt_answered") && retries < 100 =>
            {
                retries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            _ => break ev,
        }
    };
    check_run(&ev);
    let text = text_of(&ev);
    assert!(text.contains("not sent again"), "{text}");
    assert!(!text.contains("Sending"), "{text}");

    // It succeeded: the answer is consumed.
    let ev = run(&srv, "interrupt", resumed("cut", "r4", answer)).await;
    assert_eq!(refused(&ev).0.as_deref(), Some("interrupt_answered"));
}
