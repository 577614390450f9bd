//! Tools the agent may call, and the calls an assistant message makes.

use serde::{Deserialize, Serialize};

use crate::{JsonText, NotNullText, ObjectText};

wire_struct! {
    /// A tool the agent may call.
    pub struct Tool {
        /// Tool name.
        req name: String = "name",
        /// What the tool does (required by the protocol).
        req description: String = "description",
        /// JSON Schema of the arguments (opaque; any JSON but `null`), kept as text.
        opt parameters: JsonText = "parameters" via NotNullText,
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
    }
}

impl Tool {
    /// A tool with a name, a description and a JSON Schema for its arguments.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: impl Into<JsonText>,
    ) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters: Some(parameters.into()),
            ..Tool::wire_blank()
        }
    }
}

/// The type of a tool call; `function` is the only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ToolCallType {
    /// `function`.
    #[default]
    #[serde(rename = "function")]
    Function,
}

wire_struct! {
    /// The name and arguments of a tool call.
    pub struct FunctionCall {
        /// Tool name.
        req name: String = "name",
        /// The arguments as raw text, conventionally JSON (never parsed by the protocol).
        req arguments: String = "arguments",
    }
}

wire_struct! {
    /// A call an assistant message made. It inherits its message's attribution.
    pub struct ToolCall {
        /// Tool call id.
        req id: String = "id",
        /// Always `function`.
        req r#type: ToolCallType = "type",
        /// Name and arguments.
        req function: FunctionCall = "function",
        /// Opaque provider artefact.
        opt encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
    }
}

impl ToolCall {
    /// A function call with its arguments as JSON text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
                ..FunctionCall::wire_blank()
            },
            ..ToolCall::wire_blank()
        }
    }
}
