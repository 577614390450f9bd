//! The scenarios made of ordinary runs: chat, a frontend tool, state, interrupts, a
//! client that hangs up, protocol versions.

use agui_sdk_core::semantics::RunOutcome;
use agui_sdk_core::{JsonText, Message, ResumeEntry, Tool};
use serde_json::json;

use super::{chat_input, fresh, next_input, run_error};
use crate::exchange::{Ctx, Send};
use crate::report::Level;
use crate::Discovery;

/// The frontend tool the checker offers.
pub(crate) const TOOL_NAME: &str = "agui_check_echo";

/// `chat`.
pub(super) async fn chat(cx: &mut Ctx<'_>) -> Option<String> {
    let input = chat_input("Hello! This is a conformance check; please answer briefly.");
    if let Some(j) = cx.run(&input, &Send::default()).await {
        run_error(cx, &j, false);
    }
    None
}

/// `frontend-tool`.
pub(super) async fn frontend_tool(cx: &mut Ctx<'_>) -> Option<String> {
    let mut input = chat_input(&format!(
        "Please call the {TOOL_NAME} tool with the text \"ping\"."
    ));
    let tool = Tool::new(
        TOOL_NAME,
        "Echoes its text argument back (offered by agui check).",
        JsonText::from_value(&json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        })),
    );
    input.tools = vec![tool];
    let first = cx.run(&input, &Send::default()).await?;
    run_error(cx, &first, false);
    if !first.clean {
        return None;
    }
    // The calls of the offered tool that got no result: the client's to answer.
    let pending: Vec<(String, String)> = match first.reducer().last_outcome() {
        Some(RunOutcome::Success {
            pending_tool_call_ids,
            ..
        }) => first
            .reducer()
            .messages()
            .iter()
            .filter_map(|m| match m {
                Message::Assistant(a) => a.tool_calls.as_ref(),
                _ => None,
            })
            .flatten()
            .filter(|tc| tc.function.name == TOOL_NAME && pending_tool_call_ids.contains(&tc.id))
            .map(|tc| (tc.id.clone(), tc.function.arguments.clone()))
            .collect(),
        _ => Vec::new(),
    };
    if pending.is_empty() {
        return None;
    }
    let mut next = next_input(&input, &first);
    for (id, args) in pending {
        let text = serde_json::from_str::<serde_json::Value>(&args)
            .ok()
            .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
            .unwrap_or_default();
        next.messages.push(Message::tool(
            fresh("tool-result"),
            id,
            format!("echo: {text}"),
        ));
    }
    if let Some(second) = cx.run(&next, &Send::default()).await {
        run_error(cx, &second, true);
    }
    None
}

/// `state`.
pub(super) async fn state(cx: &mut Ctx<'_>) -> Option<String> {
    let mut input = chat_input("Please update the shared state.");
    input.state = Some(JsonText::from_value(&json!({
        "aguiCheck": {"counter": 1, "items": ["a", "b"]},
    })));
    if let Some(j) = cx.run(&input, &Send::default()).await {
        run_error(cx, &j, false);
    }
    None
}

/// `interrupts`.
pub(super) async fn interrupts(cx: &mut Ctx<'_>, discovery: &Discovery) -> Option<String> {
    let advertised = discovery
        .capabilities
        .as_ref()
        .and_then(|c| c.human_in_the_loop.as_ref())
        .and_then(|h| h.interrupts)
        == Some(true);
    if !advertised {
        return Some(
            "the agent's capabilities do not advertise interrupts (humanInTheLoop.interrupts)"
                .to_owned(),
        );
    }
    let input = chat_input("Please do something that needs my approval.");
    let first = cx.run(&input, &Send::default()).await?;
    run_error(cx, &first, false);
    let interrupts = match first.reducer().last_outcome() {
        Some(RunOutcome::Interrupt { interrupts }) if first.clean => interrupts.clone(),
        _ => return None,
    };
    let mut next = next_input(&input, &first);
    next.resume = Some(
        interrupts
            .iter()
            .map(|i| ResumeEntry::resolved(&i.id, JsonText::from_value(&json!({"approved": true}))))
            .collect(),
    );
    if let Some(second) = cx.run(&next, &Send::default()).await {
        run_error(cx, &second, true);
        if let Some(RunOutcome::Interrupt { interrupts: again }) = second.reducer().last_outcome() {
            if let Some(i) = again
                .iter()
                .find(|a| interrupts.iter().any(|o| o.id == a.id))
            {
                cx.find(
                    "interrupts/resume-answers",
                    Level::Error,
                    None,
                    format!(
                        "the resumed run paused again on interrupt '{}', which the resume answered",
                        i.id
                    ),
                );
            }
        }
    }
    None
}

/// `hang-up`.
pub(super) async fn hang_up(cx: &mut Ctx<'_>) -> Option<String> {
    let input = chat_input("Please tell me a long story.");
    let send = Send {
        stop_after: Some(1),
        ..Send::default()
    };
    // Hang up after the first event; what came before it is still judged.
    cx.run(&input, &send).await?;
    let next = chat_input("Hello again: are you still there?");
    if let Some(j) = cx.run(&next, &Send::default()).await {
        run_error(cx, &j, true);
    }
    None
}

/// `protocol-version`.
pub(super) async fn protocol_version(cx: &mut Ctx<'_>) -> Option<String> {
    for declared in [None, Some("1.0")] {
        let mut input = chat_input("Hello!");
        input.protocol_version = declared.map(str::to_owned);
        let Some(j) = cx.run(&input, &Send::default()).await else {
            continue;
        };
        run_error(cx, &j, false);
        if declared.is_none() {
            if let Some(rs) = &j.run_started {
                if rs.protocol_version.is_none() {
                    cx.find(
                        "versioning/producer-declares",
                        Level::Warning,
                        Some(0),
                        "RUN_STARTED does not declare the producer's protocolVersion (a 1.1 producer declares the version it speaks)".to_owned(),
                    );
                }
            }
        }
    }
    None
}
