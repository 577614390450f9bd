use std::time::Duration;

use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::futures_util::StreamExt;
use agui_sdk_server::{Agent, RunContext};
use serde_json::json;

use super::*;

async fn run(agent: &dyn Agent, input: serde_json::Value) -> Vec<Event> {
    let input: RunAgentInput = serde_json::from_value(input).unwrap();
    let ctx = RunContext::detached(input.thread_id.clone(), input.run_id.clone());
    let stream = agent.run(input, ctx);
    stream
        .map(|r| r.unwrap_or_else(|e| Event::run_error(e.message())))
        .collect()
        .await
}

fn reply_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextMessageContent(c) => Some(c.delta.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_huge_tool_result_is_quoted_in_part() {
    let huge = "result ".repeat(40_000);
    let body = |run: &str| {
        json!({
            "threadId": "t", "runId": run,
            "messages": [
                { "id": "a", "role": "assistant", "toolCalls": [
                    { "id": "c", "type": "function", "function": { "name": "f", "arguments": "{}" } }
                ] },
                { "id": "r", "role": "tool", "toolCallId": "c", "content": huge.clone() }
            ],
        })
    };
    for name in ["agentic_chat", "human_in_the_loop"] {
        let agent = agents(Duration::ZERO)
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        let events = run(agent.as_ref(), body(name)).await;
        let text = reply_text(&events);
        assert!(
            text.chars().count() < MAX_QUOTE_CHARS + 100,
            "{name}: {}",
            text.len()
        );
        assert!(text.contains('…'), "{name}");
        assert!(events.len() < 200, "{name}: {} events", events.len());
    }
}

#[tokio::test]
async fn a_state_too_large_to_echo_ends_the_run_with_a_named_error() {
    let big = "x".repeat(MAX_ECHO_BYTES);
    for name in ["shared_state", "predictive_state_updates"] {
        let agent = agents(Duration::ZERO)
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        let events = run(
            agent.as_ref(),
            json!({ "threadId": "t", "runId": "r", "messages": [], "state": { "big": big } }),
        )
        .await;
        assert_eq!(events.len(), 1, "{name}: nothing echoed");
        let Event::RunError(e) = &events[0] else {
            panic!("{name}: {:?}", events[0])
        };
        assert!(e.message.contains("at most 65536 bytes"), "{}", e.message);
        // A state within the bound is read.
        let events = run(
            agent.as_ref(),
            json!({ "threadId": "t", "runId": "r", "messages": [], "state": { "small": 1 } }),
        )
        .await;
        assert!(
            events.iter().all(|e| !matches!(e, Event::RunError(_))),
            "{name}"
        );
    }
}

/// Every demo agent answers CopilotKit's suggestion run (`toolChoice` naming
/// `copilotkitSuggest`) with one call of that tool, whose arguments parse as
/// `{"suggestions": [{"title", "message"}]}`; a run without that choice is its own.
#[tokio::test]
async fn every_agent_answers_a_suggestion_run_with_suggestions() {
    let body = |choice: bool| {
        let mut b = json!({
            "threadId": "t", "runId": "s",
            "tools": [{ "name": SUGGEST_TOOL, "description": "Suggest.", "parameters": { "type": "object" } }],
            // As CopilotKit sends it: the conversation, then its request to suggest.
            "messages": [
                { "id": "u", "role": "user", "content": "the weather in Rome" },
                { "id": "a", "role": "assistant", "content": "It is sunny." },
                { "id": "q", "role": "user", "content": "Suggest what the user could say next. Provide clear, highly relevant suggestions by calling the `copilotkitSuggest` tool." },
            ],
        });
        if choice {
            b["forwardedProps"] = json!({ "toolChoice": { "type": "function", "function": { "name": SUGGEST_TOOL } } });
        }
        b
    };
    for (name, agent) in agents(Duration::ZERO) {
        let events = run(agent.as_ref(), body(true)).await;
        let types: Vec<&str> = events.iter().map(|e| e.event_type().as_str()).collect();
        assert_eq!(
            types,
            ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"],
            "{name}"
        );
        let Event::ToolCallStart(start) = &events[0] else {
            unreachable!()
        };
        assert_eq!(start.tool_call_name, SUGGEST_TOOL);
        let Event::ToolCallArgs(args) = &events[1] else {
            unreachable!()
        };
        let args: serde_json::Value = serde_json::from_str(&args.delta).unwrap();
        let list = args["suggestions"]
            .as_array()
            .expect("a list of suggestions");
        assert!(!list.is_empty(), "{name}");
        for s in list {
            assert!(
                s["title"].is_string() && s["message"].is_string(),
                "{name}: {s}"
            );
        }
        let first = list[0]["message"].as_str().unwrap();
        assert!(
            first.contains("the weather in Rome") && !first.contains("Suggest what"),
            "{name}: the user's last message, not CopilotKit's request: {first}"
        );
        // Without the choice, the agent answers as it always does.
        let plain = run(agent.as_ref(), body(false)).await;
        assert!(
            plain
                .iter()
                .all(|e| !matches!(e, Event::ToolCallStart(s) if s.tool_call_name == SUGGEST_TOOL)),
            "{name}"
        );
    }
}

/// An effect log that remembers what the agent recorded.
#[derive(Default)]
struct Recorded(std::sync::Mutex<Vec<String>>);

impl agui_sdk_server::agui_sdk_agent::interrupts::EffectLog for Recorded {
    fn begin<'a>(
        &'a self,
        interrupt_id: &'a str,
    ) -> agui_sdk_server::agui_sdk_agent::interrupts::EffectFuture<'a> {
        self.0.lock().unwrap().push(format!("begin {interrupt_id}"));
        Box::pin(async { Ok(()) })
    }

    fn record<'a>(
        &'a self,
        interrupt_id: &'a str,
        result: String,
    ) -> agui_sdk_server::agui_sdk_agent::interrupts::EffectFuture<'a> {
        self.0
            .lock()
            .unwrap()
            .push(format!("record {interrupt_id} {result}"));
        Box::pin(async { Ok(()) })
    }
}

/// Runs the interrupt agent on a resume answering `ask` with `approved`, as the runtime
/// hands it over with `effect` recorded by an earlier attempt: its reply, and what it
/// recorded.
async fn resume_interrupt(
    status: agui_sdk_core::ResumeStatus,
    approved: bool,
    effect: agui_sdk_server::agui_sdk_agent::interrupts::Effect,
) -> (String, Vec<String>) {
    use agui_sdk_server::agui_sdk_agent::{Answer, Answers};
    let agent = InterruptAgent::new(Duration::ZERO);
    let input: RunAgentInput = serde_json::from_value(json!({
        "threadId": "t", "runId": "r2", "messages": [],
        "resume": [{ "interruptId": "r1-approval", "status": "resolved", "payload": { "approved": approved } }],
    }))
    .unwrap();
    let ask = agui_sdk_core::Interrupt::new("r1-approval", interrupt::REASON);
    let log = std::sync::Arc::new(Recorded::default());
    let answers = Answers::new(
        vec![Answer::new(
            ask,
            status,
            Some(json!({ "approved": approved })),
            effect,
        )],
        Some(log.clone()),
    );
    let ctx = RunContext::detached("t", "r2");
    ctx.set_answers(answers);
    let events: Vec<Event> = agent
        .run(input, ctx)
        .map(|r| r.unwrap_or_else(|e| Event::run_error(e.message())))
        .collect()
        .await;
    assert!(
        events.iter().all(|e| !matches!(e, Event::RunError(_))),
        "{events:?}"
    );
    let recorded = log.0.lock().unwrap().clone();
    (reply_text(&events), recorded)
}

#[tokio::test]
async fn the_interrupt_agent_sends_the_email_at_most_once() {
    use agui_sdk_core::ResumeStatus::{Cancelled, Resolved};
    use agui_sdk_server::agui_sdk_agent::interrupts::Effect;

    // Nothing recorded: it records the start, sends, records the result.
    let (text, recorded) = resume_interrupt(Resolved, true, Effect::None).await;
    assert_eq!(text, "Sending the email…Approved: the email is sent.");
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(recorded[0], "begin r1-approval");
    assert!(
        recorded[1].starts_with("record r1-approval {\"sent\":true"),
        "{recorded:?}"
    );

    // An earlier attempt sent it: not again, and it says so.
    let done = Effect::Done(r#"{"sent":true}"#.into());
    let (text, recorded) = resume_interrupt(Resolved, true, done).await;
    assert_eq!(text, interrupt::ALREADY_SENT);
    assert!(text.contains("already sent"));
    assert!(recorded.is_empty(), "{recorded:?}");

    // An earlier attempt stopped while sending: not again either.
    let (text, recorded) = resume_interrupt(Resolved, true, Effect::Started).await;
    assert_eq!(text, interrupt::SENDING_STOPPED);
    assert!(recorded.is_empty(), "{recorded:?}");

    // Not approved, or cancelled: nothing sent, nothing recorded.
    for (status, approved) in [(Resolved, false), (Cancelled, true)] {
        let (text, recorded) = resume_interrupt(status, approved, Effect::None).await;
        assert_eq!(text, interrupt::NOT_SENT, "{status:?}");
        assert!(recorded.is_empty(), "{recorded:?}");
    }
}

/// Outside a runtime that keeps interrupts, a resume reaches the agent unchecked: it
/// says so instead of asking again as if nothing had been answered.
#[tokio::test]
async fn the_interrupt_agent_refuses_a_resume_no_runtime_checked() {
    let agent = InterruptAgent::new(Duration::ZERO);
    let input: RunAgentInput = serde_json::from_value(json!({
        "threadId": "t", "runId": "r2", "messages": [],
        "resume": [{ "interruptId": "r1-approval", "status": "cancelled" }],
    }))
    .unwrap();
    let ctx = RunContext::detached("t", "r2");
    let results: Vec<_> = agent.run(input, ctx).collect().await;
    let err = results
        .iter()
        .find_map(|r| r.as_ref().err())
        .expect("the run fails");
    assert_eq!(err.code(), Some("interrupt_unknown"));
    assert!(err.message().contains("r1-approval"), "{}", err.message());
}
