//! The refusal every runtime route answers with: CopilotKit's `{"error","message","code"}`
//! body (and `details`), with its status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::error::ApiError;

/// A refused request: `{"error","message","code"}` (and `details`), as CopilotKit's
/// runtime answers.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) status: StatusCode,
    pub(super) error: &'static str,
    pub(super) code: &'static str,
    pub(super) message: String,
    pub(super) details: Option<String>,
}

impl Failure {
    pub(super) fn new(
        status: StatusCode,
        error: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Failure {
            status,
            error,
            code,
            message: message.into(),
            details: None,
        }
    }

    pub(super) fn invalid_request(status: StatusCode, message: impl Into<String>) -> Self {
        Failure::new(status, "invalid_request", "invalid_request", message)
    }

    pub(super) fn invalid_stop(error: &'static str, message: impl Into<String>) -> Self {
        Failure::new(StatusCode::BAD_REQUEST, error, "invalid_request", message)
    }

    pub(super) fn unknown_agent(id: &str) -> Self {
        Failure::new(
            StatusCode::NOT_FOUND,
            "Agent not found",
            "unknown_agent",
            format!("Agent '{id}' does not exist"),
        )
    }
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        let error = match e.code {
            "malformed_json" | "invalid_input" => "Invalid request body",
            "body_too_large" => "Request body too large",
            "unsupported_media_type" => "Unsupported media type",
            "body_timeout" => "Request body timeout",
            "shutting_down" | "too_many_runs" | "memory_budget" => "Service unavailable",
            _ => "Bad request",
        };
        let details = matches!(e.code, "malformed_json" | "invalid_input").then(|| {
            match (&e.field, e.position) {
                (Some(f), _) if !f.is_empty() => format!("{} (at field '{f}')", e.message),
                (_, Some((line, column))) => {
                    format!("{} (line {line}, column {column})", e.message)
                }
                _ => e.message.clone(),
            }
        });
        Failure {
            status: e.status,
            error,
            code: e.code,
            message: e.message,
            details,
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        tracing::debug!(status = %self.status, code = self.code, message = %self.message, "runtime request refused");
        let mut body = Map::new();
        body.insert("error".into(), json!(self.error));
        body.insert("message".into(), json!(self.message));
        body.insert("code".into(), json!(self.code));
        if let Some(d) = self.details {
            body.insert("details".into(), json!(d));
        }
        (self.status, Json(Value::Object(body))).into_response()
    }
}
