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

    /// With the prompt shown to a human.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// With the JSON Schema the answer's payload must match (an object; any other value
    /// clears the field, as the wire carries only an object).
    pub fn with_response_schema(mut self, schema: serde_json::Value) -> Self {
        self.response_schema = match schema {
            serde_json::Value::Object(o) => Some(o),
            _ => None,
        };
        self
    }

    /// Bound to the tool call `tool_call_id` (an approval of that call).
    pub fn with_tool_call_id(mut self, tool_call_id: impl Into<String>) -> Self {
        self.tool_call_id = Some(tool_call_id.into());
        self
    }

    /// Expiring at `expires_at` (ISO 8601, e.g. `2026-12-06T10:00:00Z`).
    pub fn with_expires_at(mut self, expires_at: impl Into<String>) -> Self {
        self.expires_at = Some(expires_at.into());
        self
    }

    /// Expiring at `at`, written as ISO 8601 in UTC with milliseconds.
    pub fn with_expiry(self, at: std::time::SystemTime) -> Self {
        let ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        self.with_expires_at(crate::time::format_iso8601_millis(ms))
    }

    /// With extra information for the client.
    pub fn with_metadata(mut self, metadata: JsonObject) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Raised by the subagent run `subagent_run_id`.
    pub fn with_subagent_run_id(mut self, subagent_run_id: impl Into<String>) -> Self {
        self.subagent_run_id = Some(subagent_run_id.into());
        self
    }
}
