//! The request body of a run, and what it carries besides messages.

use super::{Message, Tool};
use crate::{JsonText, NotNullText, ObjectText};
use serde::{Deserialize, Serialize};

wire_struct! {
    /// A named piece of ambient information given to the agent for the run.
    pub struct Context {
        /// What the value is.
        req description: String = "description",
        /// The value.
        req value: String = "value",
    }
}

impl Context {
    /// A context entry.
    pub fn new(description: impl Into<String>, value: impl Into<String>) -> Self {
        Context {
            description: description.into(),
            value: value.into(),
            ..Context::wire_blank()
        }
    }
}

/// How an interrupt was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeStatus {
    /// `resolved`: answered, with an optional payload.
    #[default]
    Resolved,
    /// `cancelled`: declined.
    Cancelled,
}

wire_struct! {
    /// An answer to one interrupt, sent on the run that continues from it.
    pub struct ResumeEntry {
        /// The interrupt answered.
        req interrupt_id: String = "interruptId",
        /// Resolved or cancelled.
        req status: ResumeStatus = "status",
        /// The answer (any JSON but `null`), kept as text.
        opt payload: JsonText = "payload" via NotNullText,
        /// Envelope data (signatures, routing).
        opt metadata: JsonText = "metadata" via ObjectText,
    }
}

impl ResumeEntry {
    /// A resolved answer with a payload.
    pub fn resolved(interrupt_id: impl Into<String>, payload: impl Into<JsonText>) -> Self {
        ResumeEntry {
            interrupt_id: interrupt_id.into(),
            status: ResumeStatus::Resolved,
            payload: Some(payload.into()),
            ..ResumeEntry::wire_blank()
        }
    }
    /// A cancelled answer.
    pub fn cancelled(interrupt_id: impl Into<String>) -> Self {
        ResumeEntry {
            interrupt_id: interrupt_id.into(),
            status: ResumeStatus::Cancelled,
            ..ResumeEntry::wire_blank()
        }
    }
}

wire_struct! {
    /// A request to run an agent (the HTTP request body); also echoed in
    /// `RUN_STARTED.input`.
    pub struct RunAgentInput {
        /// Conversation thread.
        req thread_id: String = "threadId",
        /// This run.
        req run_id: String = "runId",
        /// Protocol version the consumer speaks (`"1.1"`).
        opt protocol_version: String = "protocolVersion",
        /// The run that spawned this one.
        opt parent_run_id: String = "parentRunId",
        /// Agent state (any JSON; `null` is read as absent), kept as text: read it
        /// with [`JsonText::deserialize`] or [`JsonText::to_value`].
        nullable state: JsonText = "state",
        /// The conversation so far.
        req messages: Vec<Message> = "messages",
        /// Tools the agent may call (absent means none).
        dflt tools: Vec<Tool> = "tools",
        /// Ambient context (absent means none).
        dflt context: Vec<Context> = "context",
        /// Application-defined properties passed through (any JSON but `null`), kept as
        /// text.
        opt forwarded_props: JsonText = "forwardedProps" via NotNullText,
        /// Answers to the previous run's interrupts.
        opt resume: Vec<ResumeEntry> = "resume",
    }
}

impl RunAgentInput {
    /// The text of the last user message (its text parts, concatenated), if any.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages.iter().rev().find_map(|m| match m {
            crate::types::Message::User(u) => Some(u.content.to_text()),
            _ => None,
        })
    }

    /// The state the client sent, parsed, or `{}` when it sent none.
    pub fn state_or_empty(&self) -> serde_json::Value {
        match &self.state {
            Some(state) => state.to_value(),
            None => serde_json::Value::Object(Default::default()),
        }
    }

    /// An input with ids and messages, speaking this crate's protocol version.
    pub fn new(
        thread_id: impl Into<String>,
        run_id: impl Into<String>,
        messages: Vec<Message>,
    ) -> Self {
        RunAgentInput {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            protocol_version: Some(crate::PROTOCOL_VERSION.to_owned()),
            messages,
            ..RunAgentInput::wire_blank()
        }
    }
}
