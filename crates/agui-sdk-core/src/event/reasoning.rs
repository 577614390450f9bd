//! Reasoning: spans (`REASONING_START`/`REASONING_END`), streamed reasoning messages
//! (`REASONING_MESSAGE_*`, with the `_CHUNK` shorthand) and `REASONING_ENCRYPTED_VALUE`.

use serde::{Deserialize, Serialize};

event_struct! {
    /// `REASONING_START`: opens a reasoning span.
    pub struct ReasoningStart : attributable {
        /// Span id.
        req message_id: String = "messageId",
    }
}

impl ReasoningStart {
    /// A `REASONING_START`.
    pub fn new(message_id: impl Into<String>) -> Self {
        ReasoningStart {
            message_id: message_id.into(),
            ..ReasoningStart::wire_blank()
        }
    }
}

/// The role of a reasoning message; `reasoning` is the only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ReasoningRole {
    /// `reasoning`.
    #[default]
    #[serde(rename = "reasoning")]
    Reasoning,
}

event_struct! {
    /// `REASONING_MESSAGE_START`: opens a streamed reasoning message.
    pub struct ReasoningMessageStart : attributable {
        /// Message id.
        req message_id: String = "messageId",
        /// Always `reasoning` (required).
        req role: ReasoningRole = "role",
    }
}

impl ReasoningMessageStart {
    /// A `REASONING_MESSAGE_START`.
    pub fn new(message_id: impl Into<String>) -> Self {
        ReasoningMessageStart {
            message_id: message_id.into(),
            ..ReasoningMessageStart::wire_blank()
        }
    }
}

event_struct! {
    /// `REASONING_MESSAGE_CONTENT`: appends to a reasoning message.
    pub struct ReasoningMessageContent : attributable {
        /// Message id.
        req message_id: String = "messageId",
        /// Text fragment (may be empty).
        req delta: String = "delta",
    }
}

impl ReasoningMessageContent {
    /// A `REASONING_MESSAGE_CONTENT`.
    pub fn new(message_id: impl Into<String>, delta: impl Into<String>) -> Self {
        ReasoningMessageContent {
            message_id: message_id.into(),
            delta: delta.into(),
            ..ReasoningMessageContent::wire_blank()
        }
    }
}

event_struct! {
    /// `REASONING_MESSAGE_END`: closes a reasoning message.
    pub struct ReasoningMessageEnd : attributable {
        /// Message id.
        req message_id: String = "messageId",
    }
}

impl ReasoningMessageEnd {
    /// A `REASONING_MESSAGE_END`.
    pub fn new(message_id: impl Into<String>) -> Self {
        ReasoningMessageEnd {
            message_id: message_id.into(),
            ..ReasoningMessageEnd::wire_blank()
        }
    }
}

event_struct! {
    /// `REASONING_MESSAGE_CHUNK`: shorthand for a reasoning message's start, content, end.
    pub struct ReasoningMessageChunk : attributable {
        /// Message id (required on the first chunk).
        opt message_id: String = "messageId",
        /// Text fragment.
        opt delta: String = "delta",
    }
}

event_struct! {
    /// `REASONING_END`: closes a reasoning span.
    pub struct ReasoningEnd : attributable {
        /// Span id.
        req message_id: String = "messageId",
    }
}

impl ReasoningEnd {
    /// A `REASONING_END`.
    pub fn new(message_id: impl Into<String>) -> Self {
        ReasoningEnd {
            message_id: message_id.into(),
            ..ReasoningEnd::wire_blank()
        }
    }
}

/// What a `REASONING_ENCRYPTED_VALUE` is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum EncryptedValueSubtype {
    /// `tool-call`: a tool call id.
    #[serde(rename = "tool-call")]
    ToolCall,
    /// `message`: a text or reasoning message id.
    #[default]
    #[serde(rename = "message")]
    Message,
}

event_struct! {
    /// `REASONING_ENCRYPTED_VALUE`: an opaque, encrypted provider artefact.
    pub struct ReasoningEncryptedValue : attributable {
        /// What `entity_id` names.
        req subtype: EncryptedValueSubtype = "subtype",
        /// Tool call id or message id.
        req entity_id: String = "entityId",
        /// The artefact.
        req encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
    }
}

impl ReasoningEncryptedValue {
    /// A `REASONING_ENCRYPTED_VALUE`.
    pub fn new(
        subtype: EncryptedValueSubtype,
        entity_id: impl Into<String>,
        encrypted_value: impl Into<String>,
    ) -> Self {
        ReasoningEncryptedValue {
            subtype,
            entity_id: entity_id.into(),
            encrypted_value: encrypted_value.into(),
            ..ReasoningEncryptedValue::wire_blank()
        }
    }
}

impl ReasoningMessageChunk {
    /// The first chunk of a reasoning message: its id and a first piece of text.
    pub fn new(message_id: impl Into<String>, delta: impl Into<String>) -> Self {
        ReasoningMessageChunk {
            message_id: Some(message_id.into()),
            delta: Some(delta.into()),
            ..Default::default()
        }
    }
}
