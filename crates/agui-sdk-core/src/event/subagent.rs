//! Subagent invocations: `SUBAGENT_STARTED`, `SUBAGENT_FINISHED`, `SUBAGENT_ERROR`.
//! On these three events `subagentRunId` is required and is the invocation's identity.

use serde_json::Value;

use crate::types::SubagentFinishedOutcome;
use crate::wire::de::NotNullValue;

event_struct! {
    /// `SUBAGENT_STARTED`: a subagent invocation began.
    pub struct SubagentStarted : subagent {
        /// Reusable subagent name.
        req name: String = "name",
        /// What it does.
        opt description: String = "description",
        /// The enclosing subagent invocation (nesting).
        opt parent_subagent_run_id: String = "parentSubagentRunId",
        /// The tool call that spawned it.
        opt parent_tool_call_id: String = "parentToolCallId",
        /// The message holding that tool call.
        opt parent_message_id: String = "parentMessageId",
    }
}

impl SubagentStarted {
    /// A `SUBAGENT_STARTED`.
    pub fn new(subagent_run_id: impl Into<String>, name: impl Into<String>) -> Self {
        SubagentStarted {
            subagent_run_id: subagent_run_id.into(),
            name: name.into(),
            ..SubagentStarted::wire_blank()
        }
    }
}

event_struct! {
    /// `SUBAGENT_FINISHED`: a subagent's segment of the run ended.
    pub struct SubagentFinished : subagent {
        /// Its result (any JSON but `null`).
        opt result: Value = "result" via NotNullValue,
        /// Why it ended (absent: success).
        opt outcome: SubagentFinishedOutcome = "outcome",
    }
}

impl SubagentFinished {
    /// A successful `SUBAGENT_FINISHED`.
    pub fn new(subagent_run_id: impl Into<String>) -> Self {
        SubagentFinished {
            subagent_run_id: subagent_run_id.into(),
            ..SubagentFinished::wire_blank()
        }
    }
}

event_struct! {
    /// `SUBAGENT_ERROR`: a subagent invocation failed (the run may continue).
    pub struct SubagentError : subagent {
        /// Human-readable message.
        req message: String = "message",
        /// Error code.
        opt code: String = "code",
    }
}

impl SubagentError {
    /// A `SUBAGENT_ERROR`.
    pub fn new(subagent_run_id: impl Into<String>, message: impl Into<String>) -> Self {
        SubagentError {
            subagent_run_id: subagent_run_id.into(),
            message: message.into(),
            ..SubagentError::wire_blank()
        }
    }
}
