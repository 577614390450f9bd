//! Suggestions: CopilotKit asks an agent for follow-up suggestions with a run that
//! offers the tool `copilotkitSuggest` and names it in `forwardedProps.toolChoice`
//! (`{"type": "function", "function": {"name": "copilotkitSuggest"}}`, the shape of
//! OpenAI's `tool_choice`). Every demo agent answers such a run with one call of that
//! tool, whose arguments are `{"suggestions": [{"title", "message"}]}`: deterministic,
//! from the last user message.

use std::sync::Arc;

use agui_core::{AgentCapabilities, Event, RunAgentInput};
use agui_server::agent::{Agent, AgentStream};
use agui_server::RunContext;
use serde_json::json;

/// The tool CopilotKit's suggestion engine offers and asks for: a run naming it in
/// `forwardedProps.toolChoice` gets one call of it, with arguments
/// `{"suggestions": [{"title", "message"}]}` made from the last user message.
pub const SUGGEST_TOOL: &str = "copilotkitSuggest";

/// An agent that answers suggestion runs itself and hands every other run to the
/// agent it wraps.
pub(crate) struct Suggesting(pub Arc<dyn Agent>);

/// Whether the run asks for suggestions: `forwardedProps.toolChoice` names
/// [`SUGGEST_TOOL`].
pub(crate) fn asks_for_suggestions(input: &RunAgentInput) -> bool {
    let Some(props) = &input.forwarded_props else {
        return false;
    };
    // Most runs carry no such props: a look at the text before parsing.
    if !props.as_str().contains(SUGGEST_TOOL) {
        return false;
    }
    props
        .to_value()
        .pointer("/toolChoice/function/name")
        .and_then(|n| n.as_str())
        == Some(SUGGEST_TOOL)
}

/// The suggestions for `input`, as the events of one tool call.
fn suggestions(input: &RunAgentInput) -> Vec<Event> {
    let topic = super::last_user_text(input)
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
        if !asks_for_suggestions(&input) {
            return self.0.run(input, ctx);
        }
        let events = suggestions(&input);
        Box::pin(agui_server::futures_util::stream::iter(
            events.into_iter().map(Ok),
        ))
    }

    fn capabilities(&self) -> AgentCapabilities {
        self.0.capabilities()
    }
}
