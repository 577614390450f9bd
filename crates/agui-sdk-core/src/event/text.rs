//! Streamed text messages: `TEXT_MESSAGE_START`, `TEXT_MESSAGE_CONTENT`,
//! `TEXT_MESSAGE_END` and the `TEXT_MESSAGE_CHUNK` shorthand.

use crate::types::TextMessageRole;

event_struct! {
    /// `TEXT_MESSAGE_START`: opens a streamed text message.
    pub struct TextMessageStart : attributable {
        /// Message id.
        req message_id: String = "messageId",
        /// Role (absent means `assistant`; the parser does not fill it in).
        opt role: TextMessageRole = "role",
        /// Author display name.
        opt name: String = "name",
    }
}

impl TextMessageStart {
    /// A `TEXT_MESSAGE_START` with role `assistant`.
    pub fn new(message_id: impl Into<String>) -> Self {
        TextMessageStart {
            message_id: message_id.into(),
            role: Some(TextMessageRole::Assistant),
            ..TextMessageStart::wire_blank()
        }
    }
}

event_struct! {
    /// `TEXT_MESSAGE_CONTENT`: appends to a streamed text message.
    pub struct TextMessageContent : attributable {
        /// Message id.
        req message_id: String = "messageId",
        /// Text fragment (may be empty).
        req delta: String = "delta",
    }
}

impl TextMessageContent {
    /// A `TEXT_MESSAGE_CONTENT`.
    pub fn new(message_id: impl Into<String>, delta: impl Into<String>) -> Self {
        TextMessageContent {
            message_id: message_id.into(),
            delta: delta.into(),
            ..TextMessageContent::wire_blank()
        }
    }
}

event_struct! {
    /// `TEXT_MESSAGE_END`: closes a streamed text message.
    pub struct TextMessageEnd : attributable {
        /// Message id.
        req message_id: String = "messageId",
    }
}

impl TextMessageEnd {
    /// A `TEXT_MESSAGE_END`.
    pub fn new(message_id: impl Into<String>) -> Self {
        TextMessageEnd {
            message_id: message_id.into(),
            ..TextMessageEnd::wire_blank()
        }
    }
}

event_struct! {
    /// `TEXT_MESSAGE_CHUNK`: shorthand for start, content and end.
    pub struct TextMessageChunk : attributable {
        /// Message id (required on the first chunk of a message).
        opt message_id: String = "messageId",
        /// Role.
        opt role: TextMessageRole = "role",
        /// Text fragment.
        opt delta: String = "delta",
        /// Author display name.
        opt name: String = "name",
    }
}

impl TextMessageStart {
    /// The role, with the protocol's meaning of an absent role (`assistant`). The parser
    /// keeps the field as it came, as the 1.0 reference does.
    pub fn role_or_default(&self) -> TextMessageRole {
        self.role.unwrap_or_default()
    }
}

impl TextMessageChunk {
    /// The first chunk of a message: its id and a first piece of text (later chunks of
    /// the same message may leave the id out: `TextMessageChunk { delta: …, ..Default::default() }`).
    pub fn new(message_id: impl Into<String>, delta: impl Into<String>) -> Self {
        TextMessageChunk {
            message_id: Some(message_id.into()),
            delta: Some(delta.into()),
            ..Default::default()
        }
    }
}
