//! The verifier's memo of the last streamed-content event it accepted.

use crate::event::{Event, EventType};

/// The last streamed-content event accepted (text, reasoning or tool-call arguments):
/// its type, id and subagent tag, while no other event has come since. Such an event
/// changes nothing the checks read, so the same type, id and tag again would pass the
/// same checks: it is accepted without looking its id up again.
#[derive(Debug, Default, Clone)]
pub(super) struct Repeat {
    event_type: Option<EventType>,
    id: String,
    tag: Option<String>,
    /// Tests only: never take this way (its oracle is the full check).
    #[cfg(test)]
    pub(super) off: bool,
}

impl Repeat {
    /// The id of a streamed-content event.
    #[inline]
    pub(super) fn content_id(event: &Event) -> Option<&str> {
        match event {
            Event::TextMessageContent(e) => Some(&e.message_id),
            Event::ReasoningMessageContent(e) => Some(&e.message_id),
            Event::ToolCallArgs(e) => Some(&e.tool_call_id),
            _ => None,
        }
    }

    /// Whether this content event repeats the last one accepted.
    #[inline]
    pub(super) fn matches(&self, event_type: EventType, id: &str, tag: Option<&str>) -> bool {
        #[cfg(test)]
        if self.off {
            return false;
        }
        self.event_type == Some(event_type) && self.id == id && self.tag.as_deref() == tag
    }

    /// Remembers an accepted content event.
    #[inline]
    pub(super) fn set(&mut self, event_type: EventType, id: &str, tag: Option<&str>) {
        self.event_type = Some(event_type);
        self.id.clear();
        self.id.push_str(id);
        if self.tag.as_deref() != tag {
            self.tag = tag.map(str::to_owned);
        }
    }

    /// Another event came: the next content event is checked in full.
    #[inline]
    pub(super) fn forget(&mut self) {
        self.event_type = None;
    }
}
