//! What can go wrong when running an agent.

use std::time::Duration;

use serde_json::Value;

/// An error of a client run. Each variant says what happened, with the details a caller
/// needs to act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The agent answered with a non-2xx status. The message quotes the body's first
    /// [`SHOWN_BODY`] bytes and says how long it is when it is longer; `body` holds all
    /// that was read.
    #[error("HTTP {status}: {}", shown_body(body))]
    Http {
        /// The status code.
        status: u16,
        /// The body as text.
        body: String,
        /// The body parsed, when the response said it is JSON and it parsed.
        json: Option<Value>,
    },
    /// The request could not be sent, or the connection failed while streaming. The
    /// message includes the causes (`connection refused`, a TLS failure, …).
    #[error("transport error: {}", crate::endpoint::error_chain(.0))]
    Transport(#[source] reqwest::Error),
    /// The agent's URL redirected to another origin (scheme, host or port): the
    /// redirect was not followed, so the request's headers and token went nowhere else.
    /// Same-origin redirects are followed
    /// ([`HttpAgentBuilder::max_redirects`](crate::HttpAgentBuilder::max_redirects)).
    #[error("{0}")]
    CrossOriginRedirect(crate::endpoint::CrossOriginRedirect),
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
    Decode(#[from] agui_sdk_core::encoding::DecodeError),
    /// The stream ended before the run's terminal event (`RUN_FINISHED` or `RUN_ERROR`).
    #[error("the stream ended without a terminal event (RUN_FINISHED or RUN_ERROR) after {events} events")]
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
        source: agui_sdk_core::semantics::InboundError,
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
    Interrupts(#[from] agui_sdk_core::semantics::ResumeCheckError),
    /// The input could not be encoded or was refused before sending.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The agent answered 2xx with a body that is not an event stream (an HTML error
    /// page from a proxy, a JSON document).
    #[error("the response is {content_type:?}, not an event stream (text/event-stream or application/vnd.ag-ui.event+proto)")]
    ContentType {
        /// The `Content-Type` received.
        content_type: String,
    },
    /// A resumable run's stream dropped and could not be resumed: the server no longer
    /// has the run or the missed events (`status` 404 or 410), refused the cursor, or
    /// the retries ran out. Everything received before is delivered.
    #[error("cannot resume the run after event seq {after_seq}: {reason}")]
    Resume {
        /// The last event received.
        after_seq: u64,
        /// The status of the last re-attach, when one answered.
        status: Option<u16>,
        /// The error code the server gave (`cursor_expired`, `unknown_run`, …).
        code: Option<String>,
        /// Why, for a human.
        reason: String,
    },
    /// A ceiling on what one run may send was reached: one message's text
    /// ([`Conversation`](crate::Conversation)'s `max_message_bytes`), one tool call's
    /// arguments (`max_tool_args_bytes`), or the run's bytes in all
    /// ([`HttpAgentBuilder::max_run_bytes`](crate::HttpAgentBuilder::max_run_bytes)). The
    /// run is cancelled; what was applied before the event that crossed it is kept.
    #[error("{what} passed the limit {limit} of {max} bytes at event {event_index}")]
    LimitExceeded {
        /// The ceiling's name: `max_message_bytes`, `max_tool_args_bytes` or
        /// `max_run_bytes`.
        limit: &'static str,
        /// The ceiling, in bytes.
        max: u64,
        /// The index (from 0) of the event that crossed it, among the run's events.
        event_index: u64,
        /// What crossed it (`message "m1"`, `tool call "c1"'s arguments`, `the run's
        /// stream`), with its size.
        what: String,
    },
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

impl From<reqwest::Error> for ClientError {
    /// A failed request, or [`ClientError::CrossOriginRedirect`] when a redirect to
    /// another origin stopped it.
    fn from(e: reqwest::Error) -> Self {
        match crate::endpoint::cross_origin_redirect(&e) {
            Some(r) => ClientError::CrossOriginRedirect(r.clone()),
            None => ClientError::Transport(e),
        }
    }
}

impl ClientError {
    /// Whether the agent could not be reached at all (connection refused, no route, DNS
    /// failure): nothing was sent.
    pub fn is_connect(&self) -> bool {
        matches!(self, ClientError::Transport(e) if e.is_connect())
    }

    /// Whether a time limit ran out ([`ClientError::Timeout`], or the HTTP client's own).
    pub fn is_timeout(&self) -> bool {
        match self {
            ClientError::Timeout { .. } => true,
            ClientError::Transport(e) => e.is_timeout(),
            _ => false,
        }
    }

    /// The stable id of the protocol rule the stream broke, when the error is such a
    /// verdict (the ids `agui verify` and `agui check` use, listed in
    /// `docs/check-rules.md`): the inbound pipeline's rule, `lifecycle/terminal-event`
    /// for a stream that ended with its run open, `transport/framing` for a stream
    /// that cannot be decoded, `transport/content-type` for a body that is not an
    /// event stream.
    pub fn rule_id(&self) -> Option<&'static str> {
        match self {
            ClientError::Inbound { source, .. } => Some(source.rule_id()),
            ClientError::Truncated { .. } => Some("lifecycle/terminal-event"),
            ClientError::Decode(_) => Some("transport/framing"),
            ClientError::ContentType { .. } => Some("transport/content-type"),
            _ => None,
        }
    }

    /// The HTTP status of a non-2xx answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The error code of a non-2xx answer's JSON body, when it has one (`{"error":{"code":
    /// "…"}}`, the shape this workspace's server answers with; or a top-level `code`).
    pub fn server_error_code(&self) -> Option<&str> {
        let ClientError::Http {
            json: Some(json), ..
        } = self
        else {
            return None;
        };
        json.pointer("/error/code")
            .or_else(|| json.get("code"))
            .and_then(Value::as_str)
    }

    /// The code of the agent's `RUN_ERROR`, when the run failed with one.
    pub fn run_error_code(&self) -> Option<&str> {
        match self {
            ClientError::RunFailed { code, .. } => code.as_deref(),
            _ => None,
        }
    }
}

/// How much of an error body [`ClientError::Http`]'s message quotes.
pub const SHOWN_BODY: usize = 1024;

/// An error body as a message quotes it: whole up to [`SHOWN_BODY`] bytes, else its
/// start (cut on a character boundary) and its length.
fn shown_body(body: &str) -> std::borrow::Cow<'_, str> {
    if body.len() <= SHOWN_BODY {
        return body.into();
    }
    let mut cut = SHOWN_BODY;
    while !body.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &body[..cut], body.len()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_error_body_is_quoted_cut_with_its_length() {
        let short = ClientError::Http {
            status: 500,
            body: "oops".into(),
            json: None,
        };
        assert_eq!(short.to_string(), "HTTP 500: oops");
        let body = format!("{}é{}", "a".repeat(SHOWN_BODY - 1), "b".repeat(60_000));
        let long = ClientError::Http {
            status: 502,
            body: body.clone(),
            json: None,
        };
        let text = long.to_string();
        assert!(text.len() < SHOWN_BODY + 64, "{} bytes shown", text.len());
        assert!(text.starts_with("HTTP 502: aaa"));
        assert!(
            text.ends_with(&format!("… ({} bytes in all)", body.len())),
            "{}",
            &text[text.len() - 40..]
        );
    }
}
