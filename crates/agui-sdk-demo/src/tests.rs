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
