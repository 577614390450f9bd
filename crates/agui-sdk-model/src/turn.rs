//! The AG-UI events of one model turn, the same for every provider: text segments,
//! reasoning messages and tool calls, opened, streamed and closed in an order a
//! verifier accepts. Each adapter's translator reads its own stream and drives this
//! writer; the ids and the order of the events are decided here once. No I/O.

use agui_sdk_core::event::{EncryptedValueSubtype, ReasoningEncryptedValue, ToolCallStart};
use agui_sdk_core::Event;

/// Writes one turn's events (see the module docs).
#[derive(Debug)]
pub(crate) struct TurnWriter {
    message_id: String,
    text_open: bool,
    /// The id of the text segment open (a text after a tool call opens another one).
    text_id: String,
    text_segments: u32,
    reasoning_count: u32,
    any_call: bool,
    /// The turn's text, all segments together.
    text: String,
}

impl TurnWriter {
    /// A writer for a turn whose assistant message is `message_id`.
    pub(crate) fn new(message_id: String) -> Self {
        TurnWriter {
            text_id: message_id.clone(),
            message_id,
            text_open: false,
            text_segments: 0,
            reasoning_count: 0,
            any_call: false,
            text: String::new(),
        }
    }

    /// The turn's assistant message id.
    #[cfg_attr(not(any(feature = "chat", feature = "responses")), allow(dead_code))]
    pub(crate) fn message_id(&self) -> &str {
        &self.message_id
    }

    /// Ends the text segment open, if one is.
    pub(crate) fn close_text(&mut self, out: &mut Vec<Event>) {
        if self.text_open {
            out.push(Event::text_message_end(self.text_id.clone()));
            self.text_open = false;
        }
    }

    /// A piece of the answer's text (nothing for an empty piece). The first text is
    /// the assistant message itself; a text after a tool call or a closed segment is
    /// a message of its own, `{message_id}-text-N`.
    pub(crate) fn text(&mut self, piece: &str, out: &mut Vec<Event>) {
        if piece.is_empty() {
            return;
        }
        if !self.text_open {
            self.text_id = match self.text_segments {
                0 if !self.any_call => self.message_id.clone(),
                n => format!("{}-text-{}", self.message_id, n + 1),
            };
            self.text_segments += 1;
            out.push(Event::text_message_start(self.text_id.clone()));
            self.text_open = true;
        }
        self.text.push_str(piece);
        out.push(Event::text_message_content(
            self.text_id.clone(),
            piece.to_owned(),
        ));
    }

    /// The turn's text so far, all segments together.
    pub(crate) fn take_text(&mut self) -> String {
        std::mem::take(&mut self.text)
    }

    /// The id of the turn's next reasoning message, `{message_id}-reasoning-N`
    /// (counted whether or not the caller uses it).
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "responses")),
        allow(dead_code)
    )]
    pub(crate) fn next_reasoning_id(&mut self) -> String {
        self.reasoning_count += 1;
        format!("{}-reasoning-{}", self.message_id, self.reasoning_count)
    }

    /// Opens reasoning message `id` (the text open, if any, stays open).
    pub(crate) fn open_reasoning(&self, id: &str, out: &mut Vec<Event>) {
        out.push(Event::reasoning_start(id.to_owned()));
        out.push(Event::reasoning_message_start(id.to_owned()));
    }

    /// A piece of reasoning message `id` (nothing for an empty piece).
    pub(crate) fn reasoning(&self, id: &str, piece: &str, out: &mut Vec<Event>) {
        if !piece.is_empty() {
            out.push(Event::reasoning_message_content(
                id.to_owned(),
                piece.to_owned(),
            ));
        }
    }

    /// Reasoning message `id`'s encrypted value, of the provider's `kind`.
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "responses")),
        allow(dead_code)
    )]
    pub(crate) fn encrypted(&self, id: &str, value: &str, kind: &str, out: &mut Vec<Event>) {
        let mut e = ReasoningEncryptedValue::new(EncryptedValueSubtype::Message, id, value);
        e.encrypted_value_type = Some(kind.to_owned());
        out.push(e.into());
    }

    /// Ends reasoning message `id`.
    pub(crate) fn close_reasoning(&self, id: &str, out: &mut Vec<Event>) {
        out.push(Event::reasoning_message_end(id.to_owned()));
        out.push(Event::reasoning_end(id.to_owned()));
    }

    /// The model makes a tool call: the text open ends, and a later text is a
    /// message of its own.
    pub(crate) fn call_seen(&mut self, out: &mut Vec<Event>) {
        self.close_text(out);
        self.any_call = true;
    }

    /// Starts tool call `id` to `name`, as a part of the assistant message.
    pub(crate) fn start_call(&mut self, id: &str, name: &str, out: &mut Vec<Event>) {
        self.call_seen(out);
        let mut start = ToolCallStart::new(id.to_owned(), name.to_owned());
        start.parent_message_id = Some(self.message_id.clone());
        out.push(start.into());
    }

    /// A piece of tool call `id`'s arguments (nothing for an empty piece).
    pub(crate) fn call_args(&self, id: &str, piece: &str, out: &mut Vec<Event>) {
        if !piece.is_empty() {
            out.push(Event::tool_call_args(id.to_owned(), piece.to_owned()));
        }
    }

    /// Ends tool call `id`.
    pub(crate) fn end_call(&self, id: &str, out: &mut Vec<Event>) {
        out.push(Event::tool_call_end(id.to_owned()));
    }
}
