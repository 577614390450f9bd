//! The one way a request is admitted as a run, for every route that starts one (the
//! agent routes, resumable or not, and the CopilotKit runtime's).
//!
//! In order: the server is not shutting down; a run slot is free
//! ([`ServerConfig::max_runs`]); the body is JSON by its content type (required: see
//! [`require_json`]), within
//! [`ServerConfig::body_limit`] (by its declared length, then as it arrives) and
//! [`ServerConfig::body_timeout`]; the memory budget has room for it
//! ([`ServerConfig::memory_budget`]); it parses as a `RunAgentInput`. The admitted run
//! is then started by [`crate::launch`], the same way for every route.
//!
//! Refusals are [`ApiError`]s; each route maps them to its documented body at its
//! edge (the agent routes' `{"error":{code,message,…}}`, the CopilotKit runtime's
//! `{error,message,code}`).

use std::sync::Arc;

use agui_sdk_core::RunAgentInput;
use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode};
use futures_util::StreamExt;

use crate::budget::RunPermit;
use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::shutdown::Shutdown;

/// A request admitted as a run: its body, its input and the limits it holds.
pub(crate) struct Admitted {
    /// The request body (hashed by resumable runs).
    pub body: Vec<u8>,
    /// The parsed input.
    pub input: RunAgentInput,
    /// The run slot and memory the run holds until it ends.
    pub permit: RunPermit,
}

/// What admits requests of one router: its limits and switch.
pub(crate) struct Admission {
    config: ServerConfig,
    shutdown: Shutdown,
    runs: Option<Arc<tokio::sync::Semaphore>>,
    /// The memory budget, in KiB permits.
    memory: Option<Arc<tokio::sync::Semaphore>>,
}

impl Admission {
    pub(crate) fn new(config: ServerConfig, shutdown: Shutdown) -> Self {
        let runs = config.max_runs.map(|n| {
            Arc::new(tokio::sync::Semaphore::new(
                n.min(tokio::sync::Semaphore::MAX_PERMITS),
            ))
        });
        let memory = crate::budget::memory_semaphore(config.memory_budget);
        Admission {
            config,
            shutdown,
            runs,
            memory,
        }
    }

    #[cfg(feature = "copilotkit")]
    pub(crate) fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Admits the request whose `headers` and `body` these are: every check, in the
    /// order of the [module docs](self).
    pub(crate) async fn admit(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Admitted, ApiError> {
        let slot = self.open()?;
        let body = self.read_body(headers, body).await?;
        self.admit_body(slot, body)
    }

    /// The first checks: not shutting down, a run slot free.
    pub(crate) fn open(&self) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, ApiError> {
        if self.shutdown.is_triggered() {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down",
            ));
        }
        match &self.runs {
            Some(sem) => sem.clone().try_acquire_owned().map(Some).map_err(|_| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too_many_runs",
                    "the server is running as many runs as it is configured to; retry later",
                )
            }),
            None => Ok(None),
        }
    }

    /// The body: JSON by its content type, within the size limit and the time limit.
    pub(crate) async fn read_body(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Vec<u8>, ApiError> {
        require_json(headers)?;
        let limit = self.config.body_limit;
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large(limit));
        }
        let timeout = self.config.body_timeout;
        // Room for the declared length at once, up to a small bound: a client that
        // declares a large body and sends it slowly reserves no more than it sent.
        let room = declared.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        tokio::time::timeout(timeout, read_limited(body, limit, room))
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body_timeout",
                    format!(
                        "the request body did not arrive within {} ms",
                        timeout.as_millis()
                    ),
                )
            })?
    }

    /// The last checks, on a body already read: the memory budget, then the parse.
    pub(crate) fn admit_body(
        &self,
        slot: Option<tokio::sync::OwnedSemaphorePermit>,
        body: Vec<u8>,
    ) -> Result<Admitted, ApiError> {
        let permit = crate::budget::run_permit(slot, self.memory.as_ref(), &body)?;
        let mut input: RunAgentInput = agui_sdk_core::wire::from_json_slice(&body)
            .map_err(|e| ApiError::from_json_error(&e))?;
        // The agent may hold its input for the whole run: no spare capacity (a `Message`
        // is several hundred bytes, and a decoded list holds room for four).
        input.messages.shrink_to_fit();
        Ok(Admitted {
            body,
            input,
            permit,
        })
    }

    /// What a request that starts no run holds of the memory budget while it is
    /// handled, when it parses `body` as a `RunAgentInput` (a CopilotKit `connect`):
    /// the estimated cost of that parse.
    #[cfg(feature = "copilotkit")]
    pub(crate) fn hold_parsed(&self, body: &[u8]) -> Result<RunPermit, ApiError> {
        let cost = agui_sdk_core::RunAgentInput::parsed_cost_estimate(body);
        crate::budget::request_permit(self.memory.as_ref(), body, cost)
    }

    /// `cost` bytes of the memory budget, held by a response while it is alive (a
    /// CopilotKit thread read); `what` names it in the refusal.
    #[cfg(feature = "copilotkit")]
    pub(crate) fn hold_bytes(&self, cost: usize, what: &str) -> Result<RunPermit, ApiError> {
        crate::budget::held_permit(self.memory.as_ref(), cost, what)
    }

    /// What a request holds of the memory budget while it is handled, when it keeps
    /// `body` as text and one copy of a part of it (the single-route envelope, whose
    /// inner body is handed on): twice its length.
    #[cfg(feature = "copilotkit")]
    pub(crate) fn hold_text(&self, body: &[u8]) -> Result<RunPermit, ApiError> {
        crate::budget::request_permit(self.memory.as_ref(), body, body.len().saturating_mul(2))
    }
}

/// Refuses a request whose `Content-Type` is missing or not JSON: a page on another
/// site can send a body-less or `text/plain` POST without asking (a CORS-simple
/// request), never one that declares JSON, so no such page starts or stops a run.
pub(crate) fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|ct| ct.to_str().ok())
        .is_some_and(is_json_media_type);
    if json {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "the request body must be JSON (Content-Type: application/json)",
    ))
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("request body exceeds the limit of {limit} bytes"),
    )
}

/// The most a body's buffer is given before its bytes arrive (most run requests are
/// smaller; a larger one grows as it arrives).
const PREALLOCATE_AT_MOST: usize = 64 * 1024;

/// Reads `body` whole, refusing it as soon as it passes `limit` bytes; `room` is its
/// declared length.
async fn read_limited(body: Body, limit: usize, room: usize) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(room.min(limit).min(PREALLOCATE_AT_MOST));
    let mut frames = body.into_data_stream();
    while let Some(chunk) = frames.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "unreadable_body",
                format!("cannot read the request body: {e}"),
            )
        })?;
        if out.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Whether a `Content-Type` value names JSON (`application/json` or `+json`).
pub(crate) fn is_json_media_type(v: &str) -> bool {
    // Compared in place, without a lower-cased copy.
    let essence = v.split(';').next().unwrap_or("").trim();
    const TYPE: &str = "application/";
    const SUFFIX: &[u8] = b"+json";
    let Some(sub) = essence
        .get(..TYPE.len())
        .filter(|t| t.eq_ignore_ascii_case(TYPE))
        .map(|_| &essence[TYPE.len()..])
    else {
        return false;
    };
    let n = sub.len();
    sub.eq_ignore_ascii_case("json")
        || (n >= SUFFIX.len() && sub.as_bytes()[n - SUFFIX.len()..].eq_ignore_ascii_case(SUFFIX))
}

#[cfg(test)]
mod tests {
    use super::{is_json_media_type, read_limited, PREALLOCATE_AT_MOST};
    use futures_util::FutureExt;

    #[test]
    fn a_declared_length_reserves_at_most_a_small_bound_before_the_bytes_arrive() {
        let read = |body: &'static [u8], declared: usize| {
            read_limited(axum::body::Body::from(body), 1 << 30, declared)
                .now_or_never()
                .expect("a body already there")
                .expect("within the limit")
        };
        let small = read(b"{}", 2);
        assert_eq!((small.as_slice(), small.capacity()), (&b"{}"[..], 2));
        // A gigabyte declared, two bytes sent: the buffer did not take the gigabyte.
        let lied = read(b"{}", 1 << 30);
        assert_eq!(lied, b"{}");
        assert!(
            lied.capacity() <= PREALLOCATE_AT_MOST,
            "{}",
            lied.capacity()
        );
    }

    #[test]
    fn json_media_types_in_any_case_with_parameters() {
        for yes in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "  application/json  ",
            "application/vnd.api+json",
            "APPLICATION/LD+JSON;q=1",
        ] {
            assert!(is_json_media_type(yes), "{yes}");
        }
        for no in [
            "",
            "text/plain",
            "application/jsonx",
            "application/",
            "text/json",
            "application/xml+jso",
            "appl\u{e9}cation/json",
            "json",
        ] {
            assert!(!is_json_media_type(no), "{no}");
        }
    }
}
