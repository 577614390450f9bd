//! Middleware: transformers over a run's event stream, between the transport and the
//! conversation. They see whole events (chunks already expanded), in order.

use std::collections::HashSet;

use agui_sdk_core::{Event, RunAgentInput};
use futures_util::StreamExt;

use crate::http::EventStream;

/// A transformer over a run's event stream. Middlewares run in the order they were added
/// (the first added sees the transport's events first).
pub trait Middleware: Send + Sync {
    /// Wraps `events`, the stream of the run started with `input`.
    fn transform(&self, input: &RunAgentInput, events: EventStream) -> EventStream;
}

/// Drops the tool calls of some tools from the stream: their `TOOL_CALL_START`, then
/// the `TOOL_CALL_ARGS`, `TOOL_CALL_END` and `TOOL_CALL_RESULT` of the same call ids.
/// Either an allow list or a deny list (as the reference's filter-tool-calls middleware).
#[derive(Debug, Clone)]
pub struct FilterToolCalls {
    names: HashSet<String>,
    allow: bool,
}

impl FilterToolCalls {
    /// Keeps only the calls of these tools.
    pub fn allow<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Self {
        FilterToolCalls {
            names: names.into_iter().map(Into::into).collect(),
            allow: true,
        }
    }

    /// Drops the calls of these tools.
    pub fn deny<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Self {
        FilterToolCalls {
            names: names.into_iter().map(Into::into).collect(),
            allow: false,
        }
    }

    fn blocks(&self, name: &str) -> bool {
        self.names.contains(name) != self.allow
    }
}

impl Middleware for FilterToolCalls {
    fn transform(&self, _input: &RunAgentInput, events: EventStream) -> EventStream {
        let filter = self.clone();
        let mut blocked: HashSet<String> = HashSet::new();
        let inner = events.filter_map(move |item| {
            let keep = match &item {
                Ok(Event::RunStarted(_)) => {
                    blocked.clear();
                    true
                }
                Ok(Event::ToolCallStart(e)) if filter.blocks(&e.tool_call_name) => {
                    tracing::debug!(tool = %e.tool_call_name, id = %e.tool_call_id, "filtered tool call");
                    blocked.insert(e.tool_call_id.clone());
                    false
                }
                Ok(Event::ToolCallArgs(e)) => !blocked.contains(&e.tool_call_id),
                Ok(Event::ToolCallEnd(e)) => !blocked.contains(&e.tool_call_id),
                Ok(Event::ToolCallResult(e)) => !blocked.contains(&e.tool_call_id),
                _ => true,
            };
            std::future::ready(keep.then_some(item))
        });
        EventStream::from_stream(inner)
    }
}
