//! Interrupts: what a paused run needs from outside before it can continue.

use crate::JsonObject;

wire_struct! {
    /// Something a run needs from outside (an approval, a missing value).
    pub struct Interrupt {
        /// The subagent that raised it (absent: the parent agent).
        opt subagent_run_id: String = "subagentRunId",
        /// Id answered by `ResumeEntry.interruptId`.
        req id: String = "id",
        /// Open vocabulary (`tool_approval`, ...).
        req reason: String = "reason",
        /// Prompt for a human.
        opt message: String = "message",
        /// The tool call it concerns.
        opt tool_call_id: String = "toolCallId",
        /// JSON Schema of the expected answer (an object).
        opt response_schema: JsonObject = "responseSchema",
        /// Expiry, ISO 8601 by convention.
        opt expires_at: String = "expiresAt",
        /// Extra information.
        opt metadata: JsonObject = "metadata",
    }
}

impl Interrupt {
    /// An interrupt with an id and a reason.
    pub fn new(id: impl Into<String>, reason: impl Into<String>) -> Self {
        Interrupt {
            id: id.into(),
            reason: reason.into(),
            ..Interrupt::wire_blank()
        }
    }
}
