//! What can go wrong when running an agent.

use std::time::Duration;

use serde_json::Value;

/// An error of a client run. Each variant says what happened, with the details a caller
/// needs to act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The agent answered with a non-2xx status.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The body as text.
        body: String,
        /// The body parsed, when the response said it is JSON and it parsed.
        json: Option<Value>,
    },
    /// The request could not be sent, or the connection failed while streaming.
    #[error("transport error: {0}")]
    Transport(#[from] reqwest::Error),
    /// No response, or no bytes of the stream, arrived within the configured time.
    #[error("timed out after {after:?} waiting for {waiting_for}")]
    Timeout {
        /// The limit that ran out.
        after: Duration,
        /// What was awaited (`the response`, `the next event`).
        waiting_for: &'static str,
    },
    /// The stream is malformed.
    #[error("malformed stream: {0}")]
    Decode(#[from] agui_core::encoding::DecodeError),
    /// The stream ended before the run's terminal event (`RUN_FINISHED` or `RUN_ERROR`).
    #[error("the stream ended after {events} events without RUN_FINISHED or RUN_ERROR")]
    Truncated {
        /// Events received before the end.
        events: u64,
    },
    /// The inbound pipeline rejected the stream: a malformed event, a chunk that cannot
    /// be expanded, a lifecycle rule broken. The source names the stage, the event
    /// index and the rule.
    #[error("{source}{}", .byte_offset.map(|o| format!(" (frame at byte offset {o})")).unwrap_or_default())]
    Inbound {
        /// Where the offending event's frame starts in the response body, when the
        /// failure was found while decoding it (verification runs after middleware, where
        /// frames are no longer known).
        byte_offset: Option<u64>,
        /// The rejection.
        source: agui_core::semantics::InboundError,
    },
    /// The run failed: the agent sent `RUN_ERROR`.
    #[error("the run failed: {message}{}", code.as_ref().map(|c| format!(" (code {c})")).unwrap_or_default())]
    RunFailed {
        /// The agent's message.
        message: String,
        /// The agent's error code.
        code: Option<String>,
    },
    /// The run was refused before sending: the thread has interrupts the run does not
    /// answer, or answers an expired interrupt with anything but `cancelled`.
    #[error("{0}")]
    Interrupts(String),
    /// The input could not be encoded or was refused before sending.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A subscriber or the caller stopped the run.
    #[error("the run was stopped")]
    Stopped,
    /// A frontend tool failed.
    #[error("tool {name} failed: {message}")]
    Tool {
        /// The tool name.
        name: String,
        /// Its error.
        message: String,
    },
}
