//! The scenarios made of ordinary runs: chat, a frontend tool, state, interrupts, a
//! client that hangs up, protocol versions.

use agui_sdk_core::event::EventFamily;
use agui_sdk_core::semantics::RunOutcome;
use agui_sdk_core::{Interrupt, JsonText, Message, ResumeEntry, RunAgentInput, Tool};
use serde_json::json;

use super::{chat_input, fresh, next_input, run_error};
use crate::exchange::{Ctx, Judged, Send};
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
        let called = first
            .tool_calls
            .iter()
            .any(|(_, name, _)| name == TOOL_NAME);
        cx.not_exercised(if called {
            "the agent's call of the offered tool left no call for the client to answer"
        } else {
            "the agent never called the offered tool"
        });
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
        let state_events = j.types.iter().any(|t| t.family() == EventFamily::State);
        if !state_events {
            cx.not_exercised("the agent sent no state snapshot or delta");
        }
    }
    None
}

/// The interrupts scenarios' first run, which must pause: the input, the judged run
/// and its interrupts. `Err(Some(reason))` when the scenario does not apply (skipped);
/// `Err(None)` when it is over (not exercised, or its findings say why).
async fn pause(
    cx: &mut Ctx<'_>,
    discovery: &Discovery,
) -> Result<(RunAgentInput, Judged, Vec<Interrupt>), Option<String>> {
    let advertised = discovery
        .capabilities
        .as_ref()
        .and_then(|c| c.human_in_the_loop.as_ref())
        .and_then(|h| h.interrupts)
        == Some(true);
    if !advertised {
        return Err(Some(
            "the agent's capabilities do not advertise interrupts (humanInTheLoop.interrupts)"
                .to_owned(),
        ));
    }
    let input = chat_input("Please do something that needs my approval.");
    let first = cx.run(&input, &Send::default()).await.ok_or(None)?;
    run_error(cx, &first, false);
    if !first.clean {
        return Err(None);
    }
    match first.reducer().last_outcome() {
        Some(RunOutcome::Interrupt { interrupts }) if !interrupts.is_empty() => {
            let interrupts = interrupts.clone();
            Ok((input, first, interrupts))
        }
        _ => {
            cx.not_exercised("the first run did not pause");
            Err(None)
        }
    }
}

/// A resolved answer to each interrupt.
fn answers(interrupts: &[Interrupt]) -> Vec<ResumeEntry> {
    interrupts
        .iter()
        .map(|i| ResumeEntry::resolved(&i.id, JsonText::from_value(&json!({"approved": true}))))
        .collect()
}

/// `'a', 'b'`.
fn ids(interrupts: &[Interrupt]) -> String {
    interrupts
        .iter()
        .map(|i| format!("'{}'", i.id))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A run the agent must refuse with `RUN_ERROR`: a finding of `rule` when it ran
/// instead (an error), or was refused with a 4xx rather than `RUN_ERROR` (a warning).
fn must_refuse(cx: &mut Ctx<'_>, judged: Option<Judged>, rule: &'static str, what: &str) {
    match judged {
        Some(j) if j.clean && j.run_error.is_none() => {
            let ended = match j.reducer().last_outcome() {
                Some(RunOutcome::Interrupt { .. }) => "paused",
                Some(RunOutcome::Cancelled) => "was cancelled",
                _ => "finished",
            };
            cx.find(
                rule,
                Level::Error,
                None,
                format!("{what} was run (it {ended}) instead of ending with RUN_ERROR"),
            );
        }
        Some(_) => {}
        None => {
            if let Some((status, body)) = cx.refused.take() {
                cx.find(
                    rule,
                    Level::Warning,
                    None,
                    format!(
                        "{what} was refused with HTTP {status} rather than with RUN_ERROR in an event stream: {body}"
                    ),
                );
            }
        }
    }
}

/// The next run on a thread, with `resume`.
fn resumed(prev: &RunAgentInput, judged: &Judged, resume: Vec<ResumeEntry>) -> RunAgentInput {
    let mut next = next_input(prev, judged);
    next.resume = Some(resume);
    next
}

/// `interrupts`: a valid resume completes.
pub(super) async fn interrupts(cx: &mut Ctx<'_>, discovery: &Discovery) -> Option<String> {
    let (input, first, interrupts) = match pause(cx, discovery).await {
        Ok(paused) => paused,
        Err(skipped) => return skipped,
    };
    let next = resumed(&input, &first, answers(&interrupts));
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

/// `interrupts-unknown`: a resume naming an interrupt the thread never raised.
pub(super) async fn interrupts_unknown(cx: &mut Ctx<'_>, discovery: &Discovery) -> Option<String> {
    let (input, first, interrupts) = match pause(cx, discovery).await {
        Ok(paused) => paused,
        Err(skipped) => return skipped,
    };
    let unknown = fresh("unknown-interrupt");
    let mut resume = answers(&interrupts);
    resume.push(ResumeEntry::resolved(
        &unknown,
        JsonText::from_value(&json!({"approved": true})),
    ));
    let next = resumed(&input, &first, resume);
    let send = Send {
        refusal: true,
        ..Send::default()
    };
    let judged = cx.run(&next, &send).await;
    must_refuse(
        cx,
        judged,
        "interrupts/unknown-resume-refused",
        &format!(
            "a resume answering interrupt {} and also '{unknown}', which the thread never raised,",
            ids(&interrupts)
        ),
    );
    None
}

/// `interrupts-replay`: a resume replayed after it was answered.
pub(super) async fn interrupts_replay(cx: &mut Ctx<'_>, discovery: &Discovery) -> Option<String> {
    let (input, first, interrupts) = match pause(cx, discovery).await {
        Ok(paused) => paused,
        Err(skipped) => return skipped,
    };
    let next = resumed(&input, &first, answers(&interrupts));
    let second = cx.run(&next, &Send::default()).await?;
    run_error(cx, &second, true);
    if !second.clean || second.run_error.is_some() {
        cx.not_exercised("the resume was not accepted, so no answered resume could be replayed");
        return None;
    }
    let replay = resumed(&next, &second, answers(&interrupts));
    let send = Send {
        refusal: true,
        ..Send::default()
    };
    let judged = cx.run(&replay, &send).await;
    must_refuse(
        cx,
        judged,
        "interrupts/replay-refused",
        &format!(
            "a replay of the resume answering interrupt {}, which the run before accepted,",
            ids(&interrupts)
        ),
    );
    None
}

/// `interrupts-no-resume`: a run without `resume` on a paused thread.
pub(super) async fn interrupts_no_resume(
    cx: &mut Ctx<'_>,
    discovery: &Discovery,
) -> Option<String> {
    let (input, first, interrupts) = match pause(cx, discovery).await {
        Ok(paused) => paused,
        Err(skipped) => return skipped,
    };
    let next = next_input(&input, &first);
    let send = Send {
        refusal: true,
        ..Send::default()
    };
    let judged = cx.run(&next, &send).await;
    must_refuse(
        cx,
        judged,
        "interrupts/resume-required",
        &format!(
            "a run without resume on a thread paused on interrupt {}",
            ids(&interrupts)
        ),
    );
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
