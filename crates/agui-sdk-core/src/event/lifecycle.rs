//! Run and step lifecycle: `RUN_STARTED`, `RUN_FINISHED`, `RUN_ERROR`, `STEP_STARTED`,
//! `STEP_FINISHED`.

use serde_json::Value;

use crate::types::{RunAgentInput, RunFinishedOutcome, TokenUsage};
use crate::wire::de::NotNullValue;

event_struct! {
    /// `RUN_STARTED`: opens a run.
    pub struct RunStarted : run_scoped {
        /// Conversation thread.
        req thread_id: String = "threadId",
        /// This run.
        req run_id: String = "runId",
        /// Protocol version the producer speaks (`"1.1"`).
        opt protocol_version: String = "protocolVersion",
        /// The run that spawned this one.
        opt parent_run_id: String = "parentRunId",
        /// Echo of the request.
        opt input: Box<RunAgentInput> = "input",
    }
}

impl RunStarted {
    /// A `RUN_STARTED` for a thread and run, speaking protocol 1.1 ([`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION)).
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunStarted {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            protocol_version: Some(crate::PROTOCOL_VERSION.to_owned()),
            ..RunStarted::wire_blank()
        }
    }
}

event_struct! {
    /// `RUN_FINISHED`: the run ended without failing.
    pub struct RunFinished : run_scoped {
        /// Conversation thread.
        req thread_id: String = "threadId",
        /// This run.
        req run_id: String = "runId",
        /// The run's result (any JSON but `null`).
        opt result: Value = "result" via NotNullValue,
        /// Why it ended (absent: success).
        opt outcome: RunFinishedOutcome = "outcome",
        /// Tokens used, one entry per provider and model.
        opt usage: Vec<TokenUsage> = "usage",
    }
}

impl RunFinished {
    /// A successful `RUN_FINISHED`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunFinished {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            ..RunFinished::wire_blank()
        }
    }
}

event_struct! {
    /// `RUN_ERROR`: the run failed.
    pub struct RunError : run_scoped {
        /// Human-readable message.
        req message: String = "message",
        /// Open vocabulary error code.
        opt code: String = "code",
        /// Tokens used before the failure.
        opt usage: Vec<TokenUsage> = "usage",
    }
}

impl RunError {
    /// A `RUN_ERROR` with a message.
    pub fn new(message: impl Into<String>) -> Self {
        RunError {
            message: message.into(),
            ..RunError::wire_blank()
        }
    }
}

event_struct! {
    /// `STEP_STARTED`: opens a named step.
    pub struct StepStarted : attributable {
        /// Step name.
        req step_name: String = "stepName",
    }
}

event_struct! {
    /// `STEP_FINISHED`: closes a named step.
    pub struct StepFinished : attributable {
        /// Step name.
        req step_name: String = "stepName",
    }
}

impl StepStarted {
    /// A `STEP_STARTED`.
    pub fn new(step_name: impl Into<String>) -> Self {
        StepStarted {
            step_name: step_name.into(),
            ..StepStarted::wire_blank()
        }
    }
}

impl StepFinished {
    /// A `STEP_FINISHED`.
    pub fn new(step_name: impl Into<String>) -> Self {
        StepFinished {
            step_name: step_name.into(),
            ..StepFinished::wire_blank()
        }
    }
}
