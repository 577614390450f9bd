//! Suggestions: CopilotKit asks an agent for follow-up suggestions with a run that
//! offers the tool `copilotkitSuggest` and names it in `forwardedProps.toolChoice`
//! (`{"type": "function", "function": {"name": "copilotkitSuggest"}}`, the shape of
//! OpenAI's `tool_choice`). Every demo agent answers such a run with one call of that
//! tool, whose arguments are `{"suggestions": [{"title", "message"}]}`: deterministic,
//! from the user's last message (the one before CopilotKit's own request to suggest).

use std::sync::Arc;

use agui_sdk_core::types::Message;
use agui_sdk_core::{AgentCapabilities, Event, RunAgentInput};
use agui_sdk_server::RunContext;
use agui_sdk_server::{Agent, AgentStream};
use serde_json::json;

pub use agui_sdk_server::copilotkit::SUGGEST_TOOL;

/// An agent that answers suggestion runs itself and hands every other run to the
/// agent it wraps.
pub(crate) struct Suggesting(pub Arc<dyn Agent>);

/// The conversation's last user text: CopilotKit's suggestion run ends with a user
/// message of its own (the instruction to suggest), which is not the user's.
fn topic(input: &RunAgentInput) -> Option<String> {
    let before_request = match input.messages.split_last() {
        Some((Message::User(_), rest)) => rest,
        _ => &input.messages[..],
    };
    before_request.iter().rev().find_map(|m| match m {
        Message::User(u) => Some(u.content.to_text()),
        _ => None,
    })
}

/// The suggestions for `input`, as the events of one tool call.
fn suggestions(input: &RunAgentInput) -> Vec<Event> {
    let topic = topic(input)
        .map(|t| super::quote(t.trim()))
        .filter(|t| !t.is_empty());
    let list = match topic {
        Some(t) => json!([
            { "title": "Tell me more", "message": format!("Tell me more about \"{t}\".") },
            { "title": "Summarize", "message": "Summarize our conversation so far." },
            { "title": "Start over", "message": "Let's talk about something else." },
        ]),
        None => json!([
            { "title": "Say hello", "message": "Hello!" },
            { "title": "What can you do?", "message": "What can you do?" },
        ]),
    };
    let call = super::id(input, "suggestions");
    let mut start = Event::tool_call_start(&call, SUGGEST_TOOL);
    if let Event::ToolCallStart(s) = &mut start {
        s.parent_message_id = Some(super::id(input, "suggestions-message"));
    }
    vec![
        start,
        Event::tool_call_args(&call, json!({ "suggestions": list }).to_string()),
        Event::tool_call_end(&call),
    ]
}

impl Agent for Suggesting {
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream {
        if !agui_sdk_server::copilotkit::is_suggestion_run(&input) {
            return self.0.run(input, ctx);
        }
        let events = suggestions(&input);
        Box::pin(agui_sdk_server::futures_util::stream::iter(
            events.into_iter().map(Ok),
        ))
    }

    fn capabilities(&self) -> AgentCapabilities {
        self.0.capabilities()
    }
}
