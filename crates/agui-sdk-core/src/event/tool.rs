//! Tool calls: `TOOL_CALL_START`, `TOOL_CALL_ARGS`, `TOOL_CALL_END`, the
//! `TOOL_CALL_CHUNK` shorthand and `TOOL_CALL_RESULT`.

use serde::{Deserialize, Serialize};

use crate::types::Content;

event_struct! {
    /// `TOOL_CALL_START`: opens a tool call.
    pub struct ToolCallStart : attributable {
        /// Tool call id.
        req tool_call_id: String = "toolCallId",
        /// Tool name.
        req tool_call_name: String = "toolCallName",
        /// The assistant message holding the call.
        opt parent_message_id: String = "parentMessageId",
    }
}

impl ToolCallStart {
    /// A `TOOL_CALL_START`.
    pub fn new(tool_call_id: impl Into<String>, tool_call_name: impl Into<String>) -> Self {
        ToolCallStart {
            tool_call_id: tool_call_id.into(),
            tool_call_name: tool_call_name.into(),
            ..ToolCallStart::wire_blank()
        }
    }
}

event_struct! {
    /// `TOOL_CALL_ARGS`: appends to a tool call's arguments.
    pub struct ToolCallArgs : attributable {
        /// Tool call id.
        req tool_call_id: String = "toolCallId",
        /// Fragment of the argument text (may be empty).
        req delta: String = "delta",
    }
}

impl ToolCallArgs {
    /// A `TOOL_CALL_ARGS`.
    pub fn new(tool_call_id: impl Into<String>, delta: impl Into<String>) -> Self {
        ToolCallArgs {
            tool_call_id: tool_call_id.into(),
            delta: delta.into(),
            ..ToolCallArgs::wire_blank()
        }
    }
}

event_struct! {
    /// `TOOL_CALL_END`: the call's arguments are complete.
    pub struct ToolCallEnd : attributable {
        /// Tool call id.
        req tool_call_id: String = "toolCallId",
    }
}

impl ToolCallEnd {
    /// A `TOOL_CALL_END`.
    pub fn new(tool_call_id: impl Into<String>) -> Self {
        ToolCallEnd {
            tool_call_id: tool_call_id.into(),
            ..ToolCallEnd::wire_blank()
        }
    }
}

event_struct! {
    /// `TOOL_CALL_CHUNK`: shorthand for start, args and end.
    pub struct ToolCallChunk : attributable {
        /// Tool call id (required on the first chunk).
        opt tool_call_id: String = "toolCallId",
        /// Tool name (required on the first chunk).
        opt tool_call_name: String = "toolCallName",
        /// The assistant message holding the call.
        opt parent_message_id: String = "parentMessageId",
        /// Fragment of the argument text.
        opt delta: String = "delta",
    }
}

/// The role of a tool result; `tool` is the only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ToolRole {
    /// `tool`.
    #[default]
    #[serde(rename = "tool")]
    Tool,
}

event_struct! {
    /// `TOOL_CALL_RESULT`: what a tool returned; mints a tool message.
    pub struct ToolCallResult : attributable {
        /// Id of the tool message this result creates.
        req message_id: String = "messageId",
        /// The call answered.
        req tool_call_id: String = "toolCallId",
        /// Text or parts.
        req content: Content = "content",
        /// Always `tool` when present.
        opt role: ToolRole = "role",
    }
}

impl ToolCallResult {
    /// A `TOOL_CALL_RESULT`.
    pub fn new(
        message_id: impl Into<String>,
        tool_call_id: impl Into<String>,
        content: impl Into<Content>,
    ) -> Self {
        ToolCallResult {
            message_id: message_id.into(),
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            ..ToolCallResult::wire_blank()
        }
    }
}

impl ToolCallChunk {
    /// The first chunk of a tool call: its id, the tool's name and a first piece of the
    /// arguments.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_call_name: impl Into<String>,
        delta: impl Into<String>,
    ) -> Self {
        ToolCallChunk {
            tool_call_id: Some(tool_call_id.into()),
            tool_call_name: Some(tool_call_name.into()),
            delta: Some(delta.into()),
            ..Default::default()
        }
    }
}
