//! Errors: what an agent reports when it fails ([`AgentError`]), and the JSON error body
//! the server answers a rejected request with ([`ApiError`]).
//!
//! # The HTTP error body
//!
//! Every request the server refuses before a run starts (a 4xx or 5xx status) carries a
//! JSON body of this shape, with `Content-Type: application/json`:
//!
//! ```json
//! { "error": { "code": "invalid_input", "message": "missing field `runId`", "field": "", "line": 1, "column": 42 } }
//! ```
//!
//! * `code` (always): a stable, machine-readable string: `malformed_json` (the body is not
//!   JSON), `invalid_input` (JSON, but not a valid `RunAgentInput`), `body_too_large`,
//!   `unsupported_media_type`, `unknown_agent`, `method_not_allowed`, `not_found`,
//!   `shutting_down`, `too_many_runs`, `unreadable_body`, `body_timeout`,
//!   `invalid_resume_token` (a resumable opt-in whose `AGUI-Resume-Token` breaks the
//!   rule), `unauthorized` (used by the bearer-token example).
//! * `message` (always): what was wrong, for a human.
//! * `field` (when known): the `/`-separated path of the offending field inside the
//!   request body, e.g. `messages/0/role`; the empty string names the body itself.
//! * `line`, `column` (when known): 1-based position in the body where parsing stopped.
//!
//! Once a run has started (status 200 sent), failures are reported in-band as a
//! `RUN_ERROR` event instead.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

pub use agui_sdk_agent::AgentError;

/// A request the server refused, rendered as the JSON error body described in the
/// [module documentation](self).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status}: {code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable code.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
    /// Path of the offending field in the request body, when known.
    pub field: Option<String>,
    /// 1-based line and column in the body, when known.
    pub position: Option<(usize, usize)>,
    /// More members of the error object, when the error has data of its own (such as
    /// the retained range of a run's log).
    pub extra: Option<Box<Map<String, Value>>>,
}

impl ApiError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            position: None,
            extra: None,
        }
    }

    /// Adds a member to the error object.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra
            .get_or_insert_with(Default::default)
            .insert(key.to_owned(), value.into());
        self
    }

    /// The error body as JSON.
    pub fn body(&self) -> Value {
        let mut inner = Map::new();
        inner.insert("code".into(), Value::from(self.code));
        inner.insert("message".into(), Value::from(self.message.clone()));
        if let Some(f) = &self.field {
            inner.insert("field".into(), Value::from(f.clone()));
        }
        if let Some((line, column)) = self.position {
            inner.insert("line".into(), Value::from(line));
            inner.insert("column".into(), Value::from(column));
        }
        if let Some(extra) = &self.extra {
            for (k, v) in extra.iter() {
                inner.insert(k.clone(), v.clone());
            }
        }
        json!({ "error": inner })
    }

    /// The error for a body that is not a valid `RunAgentInput`.
    pub fn from_json_error(e: &agui_sdk_core::JsonError) -> Self {
        let (code, msg) = if e.syntax {
            (
                "malformed_json",
                format!("request body is not JSON: {}", e.message),
            )
        } else {
            (
                "invalid_input",
                format!("invalid RunAgentInput: {}", e.message),
            )
        };
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code,
            message: msg,
            field: Some(e.path.clone()),
            position: (e.line > 0).then_some((e.line, e.column)),
            extra: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}
