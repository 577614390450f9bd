//! Messages of a conversation, discriminated by `role`.

use serde::{Deserialize, Serialize};

use super::{Content, ToolCall};
use crate::{JsonText, ObjectText};

/// Every role a message may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `developer`.
    Developer,
    /// `system`.
    System,
    /// `assistant`.
    Assistant,
    /// `user`.
    User,
    /// `tool`.
    Tool,
    /// `activity`.
    Activity,
    /// `reasoning`.
    Reasoning,
}

impl Role {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Developer => "developer",
            Role::System => "system",
            Role::Assistant => "assistant",
            Role::User => "user",
            Role::Tool => "tool",
            Role::Activity => "activity",
            Role::Reasoning => "reasoning",
        }
    }
}

/// The roles a streamed text message may take (`tool` is not one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextMessageRole {
    /// `developer`.
    Developer,
    /// `system`.
    System,
    /// `assistant` (what an absent role means).
    #[default]
    Assistant,
    /// `user`.
    User,
}

impl From<TextMessageRole> for Role {
    fn from(r: TextMessageRole) -> Role {
        match r {
            TextMessageRole::Developer => Role::Developer,
            TextMessageRole::System => Role::System,
            TextMessageRole::Assistant => Role::Assistant,
            TextMessageRole::User => Role::User,
        }
    }
}

wire_struct! {
    /// Instructions from the application developer.
    pub struct DeveloperMessage {
        /// The subagent invocation that owns the message (absent: the parent agent).
        opt subagent_run_id: String = "subagentRunId",
        /// Message id.
        req id: String = "id",
        /// Author display name.
        opt name: String = "name",
        /// Opaque provider artefact.
        opt encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
        /// The text.
        req content: String = "content",
    }
}

wire_struct! {
    /// Instructions from the system.
    pub struct SystemMessage {
        /// Owning subagent invocation.
        opt subagent_run_id: String = "subagentRunId",
        /// Message id.
        req id: String = "id",
        /// Author display name.
        opt name: String = "name",
        /// Opaque provider artefact.
        opt encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
        /// The text.
        req content: String = "content",
    }
}

wire_struct! {
    /// A message from the agent; content is optional because a turn may be only tool calls.
    pub struct AssistantMessage {
        /// Owning subagent invocation.
        opt subagent_run_id: String = "subagentRunId",
        /// Message id.
        req id: String = "id",
        /// Author display name.
        opt name: String = "name",
        /// Opaque provider artefact.
        opt encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
        /// The text.
        opt content: String = "content",
        /// Tool calls the message made.
        opt tool_calls: Vec<ToolCall> = "toolCalls",
    }
}

wire_struct! {
    /// A message from the person using the application.
    pub struct UserMessage {
        /// Owning subagent invocation.
        opt subagent_run_id: String = "subagentRunId",
        /// Message id.
        req id: String = "id",
        /// Author display name.
        opt name: String = "name",
        /// Opaque provider artefact.
        opt encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
        /// Text or parts.
        req content: Content = "content",
    }
}

wire_struct! {
    /// What a tool returned.
    pub struct ToolMessage {
        /// Owning subagent invocation.
        opt subagent_run_id: String = "subagentRunId",
        /// Message id.
        req id: String = "id",
        /// Text or parts.
        req content: Content = "content",
        /// The call this answers.
        req tool_call_id: String = "toolCallId",
        /// An error the tool reported (alongside content).
        opt error: String = "error",
        /// Opaque provider artefact.
        opt encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
    }
}

wire_struct! {
    /// Structured progress that is not conversation content.
    pub struct ActivityMessage {
        /// Owning subagent invocation.
        opt subagent_run_id: String = "subagentRunId",
        /// Message id.
        req id: String = "id",
        /// Open vocabulary naming the kind of activity.
        req activity_type: String = "activityType",
        /// The activity's content (a JSON object), kept as text.
        req content: JsonText = "content" via ObjectText,
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
    }
}

wire_struct! {
    /// A span of the agent's reasoning.
    pub struct ReasoningMessage {
        /// Owning subagent invocation.
        opt subagent_run_id: String = "subagentRunId",
        /// Message id.
        req id: String = "id",
        /// The reasoning text.
        req content: String = "content",
        /// Opaque provider artefact.
        opt encrypted_value: String = "encryptedValue",
        /// What kind of artefact `encrypted_value` is (open vocabulary, new in 1.1).
        opt encrypted_value_type: String = "encryptedValueType",
        /// Extra information.
        opt metadata: JsonText = "metadata" via ObjectText,
    }
}

wire_union! {
    /// Any message of a conversation, discriminated by `role`.
    pub enum Message : tag "role", after "id", expecting "a message object with a `role` of developer, system, assistant, user, tool, activity or reasoning" {
        /// `developer`.
        Developer(DeveloperMessage) = "developer",
        /// `system`.
        System(SystemMessage) = "system",
        /// `assistant`.
        Assistant(AssistantMessage) = "assistant",
        /// `user`.
        User(UserMessage) = "user",
        /// `tool`.
        Tool(ToolMessage) = "tool",
        /// `activity`.
        Activity(ActivityMessage) = "activity",
        /// `reasoning`.
        Reasoning(ReasoningMessage) = "reasoning",
    }
}

macro_rules! message_accessors {
    ($($variant:ident),*) => {
        impl Message {
            /// The message id.
            pub fn id(&self) -> &str {
                match self { $(Message::$variant(m) => &m.id,)* }
            }
            /// The message id, mutably.
            pub fn id_mut(&mut self) -> &mut String {
                match self { $(Message::$variant(m) => &mut m.id,)* }
            }
            /// The owning subagent invocation, if any.
            pub fn subagent_run_id(&self) -> Option<&str> {
                match self { $(Message::$variant(m) => m.subagent_run_id.as_deref(),)* }
            }
            /// The owning subagent invocation, mutably.
            pub fn subagent_run_id_mut(&mut self) -> &mut Option<String> {
                match self { $(Message::$variant(m) => &mut m.subagent_run_id,)* }
            }
            /// The message metadata, if any.
            pub fn metadata(&self) -> Option<&JsonText> {
                match self { $(Message::$variant(m) => m.metadata.as_ref(),)* }
            }
            /// The message metadata, mutably.
            pub fn metadata_mut(&mut self) -> &mut Option<JsonText> {
                match self { $(Message::$variant(m) => &mut m.metadata,)* }
            }
        }
    };
}
message_accessors!(Developer, System, Assistant, User, Tool, Activity, Reasoning);

impl Message {
    /// The message role.
    pub fn role(&self) -> Role {
        match self {
            Message::Developer(_) => Role::Developer,
            Message::System(_) => Role::System,
            Message::Assistant(_) => Role::Assistant,
            Message::User(_) => Role::User,
            Message::Tool(_) => Role::Tool,
            Message::Activity(_) => Role::Activity,
            Message::Reasoning(_) => Role::Reasoning,
        }
    }

    /// A user message with text content.
    pub fn user(id: impl Into<String>, content: impl Into<Content>) -> Self {
        Message::User(UserMessage::new(id, content))
    }

    /// An assistant message with text content.
    pub fn assistant(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Assistant(AssistantMessage::new(id, content))
    }

    /// A system message.
    pub fn system(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::System(SystemMessage {
            id: id.into(),
            content: content.into(),
            ..SystemMessage::wire_blank()
        })
    }

    /// A developer message.
    pub fn developer(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Developer(DeveloperMessage {
            id: id.into(),
            content: content.into(),
            ..DeveloperMessage::wire_blank()
        })
    }

    /// A tool message answering `tool_call_id`.
    pub fn tool(
        id: impl Into<String>,
        tool_call_id: impl Into<String>,
        content: impl Into<Content>,
    ) -> Self {
        Message::Tool(ToolMessage {
            id: id.into(),
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            ..ToolMessage::wire_blank()
        })
    }
}

impl UserMessage {
    /// A user message.
    pub fn new(id: impl Into<String>, content: impl Into<Content>) -> Self {
        UserMessage {
            id: id.into(),
            content: content.into(),
            ..UserMessage::wire_blank()
        }
    }
}

impl AssistantMessage {
    /// An assistant message with text content.
    pub fn new(id: impl Into<String>, content: impl Into<String>) -> Self {
        AssistantMessage {
            id: id.into(),
            content: Some(content.into()),
            ..AssistantMessage::wire_blank()
        }
    }
}
