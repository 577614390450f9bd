//! The HTTP surface of resumable runs: opting in on `POST {agent}`, re-attaching,
//! status, cancel; owners; the reaper.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agui_sdk_core::encoding::Encoding;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::producer::{DetachPolicy, ProducerSettings, Registry, ViewerGuard};
use super::viewer::{self, ViewerSettings};
use super::{
    sha256_hex, CancelOutcome, Created, InMemoryRunStore, NewRun, Owner, RunKey, RunLimits,
    RunStore, RunStoreError,
};
use crate::error::ApiError;

/// The request header a client opts in with: `AGUI-Resumable: 1`.
pub const RESUMABLE_HEADER: &str = "agui-resumable";
/// The request header carrying a client-generated owner token.
pub const RESUME_TOKEN_HEADER: &str = "agui-resume-token";

/// Which runs are resumable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ResumeMode {
    /// Runs whose request carries `AGUI-Resumable: 1` and an owner (the default).
    #[default]
    OptIn,
    /// Every run with an owner. The reference client then gets `id:` lines (which it
    /// ignores), and closing its connection no longer stops the run.
    Always,
}

/// Resumable runs: where their logs live and how they behave. Every field has a
/// documented default.
#[derive(Clone)]
#[non_exhaustive]
pub struct Resumable {
    /// The run store (default: an [`InMemoryRunStore`] with default [`RunLimits`]).
    pub store: Arc<dyn RunStore>,
    /// Which runs are resumable (default [`ResumeMode::OptIn`]).
    pub mode: ResumeMode,
    /// What happens when nobody watches (default: continue, cancel after 10 minutes).
    pub detach: DetachPolicy,
    /// Longest a resumable run may last (default 1 hour); then `RUN_ERROR` code
    /// `run_timeout`.
    pub max_run_duration: Duration,
    /// How long a producer's lease lasts without a heartbeat (default 10 s).
    pub lease: Duration,
    /// How often a producer renews its lease and checks for a cancel (default 3 s).
    pub heartbeat: Duration,
    /// How often the reaper looks for runs whose producer died (default 5 s).
    pub reaper_interval: Duration,
    /// This replica's name (default: a random id).
    pub replica: String,
    /// The SSE `retry:` hint sent to clients, in milliseconds (default 1000).
    pub retry_ms: u64,
}

impl std::fmt::Debug for Resumable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumable")
            .field("mode", &self.mode)
            .field("detach", &self.detach)
            .field("max_run_duration", &self.max_run_duration)
            .field("lease", &self.lease)
            .field("heartbeat", &self.heartbeat)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl Default for Resumable {
    fn default() -> Self {
        Resumable::new(Arc::new(InMemoryRunStore::new(RunLimits::default())))
    }
}

impl Resumable {
    /// Resumable runs kept in `store`, with the defaults.
    pub fn new(store: Arc<dyn RunStore>) -> Self {
        Resumable {
            store,
            mode: ResumeMode::OptIn,
            detach: DetachPolicy::default(),
            max_run_duration: Duration::from_secs(3600),
            lease: Duration::from_secs(10),
            heartbeat: Duration::from_secs(3),
            reaper_interval: Duration::from_secs(5),
            replica: format!(
                "replica-{}",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
            retry_ms: 1000,
        }
    }

    /// Sets [`mode`](Self::mode).
    pub fn mode(mut self, mode: ResumeMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets [`detach`](Self::detach).
    pub fn detach(mut self, policy: DetachPolicy) -> Self {
        self.detach = policy;
        self
    }

    /// Sets [`max_run_duration`](Self::max_run_duration).
    pub fn max_run_duration(mut self, d: Duration) -> Self {
        self.max_run_duration = d;
        self
    }

    /// Sets [`lease`](Self::lease) and [`heartbeat`](Self::heartbeat).
    pub fn lease(mut self, lease: Duration, heartbeat: Duration) -> Self {
        self.lease = lease;
        self.heartbeat = heartbeat.max(Duration::from_millis(1));
        self
    }

    /// Sets [`reaper_interval`](Self::reaper_interval).
    pub fn reaper_interval(mut self, d: Duration) -> Self {
        self.reaper_interval = d.max(Duration::from_millis(1));
        self
    }

    /// Sets [`replica`](Self::replica).
    pub fn replica(mut self, name: impl Into<String>) -> Self {
        self.replica = name.into();
        self
    }
}

/// The resumable-run state a router holds.
pub(crate) struct ResumeState {
    pub config: Resumable,
    pub registry: Arc<Registry>,
    reaper: OnceLock<()>,
}

impl ResumeState {
    pub(crate) fn new(config: Resumable) -> Self {
        ResumeState {
            config,
            registry: Arc::new(Registry::default()),
            reaper: OnceLock::new(),
        }
    }

    /// Starts this replica's reaper (once, on the first resumable request).
    pub(crate) fn ensure_reaper(&self, shutdown: tokio_util::sync::CancellationToken) {
        self.reaper.get_or_init(|| {
            let store = self.config.store.clone();
            let replica = self.config.replica.clone();
            let every = self.config.reaper_interval;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                loop {
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        _ = tick.tick() => super::reap(store.as_ref(), &replica).await,
                    }
                }
            });
        });
    }

    pub(crate) fn producer_settings(&self) -> ProducerSettings {
        ProducerSettings {
            detach: self.config.detach,
            max_run_duration: self.config.max_run_duration,
            heartbeat: self.config.heartbeat,
        }
    }
}

/// The shortest `AGUI-Resume-Token` accepted: 22 characters (128 bits of a base64url
/// random value), so that a token is hard to guess.
pub const MIN_RESUME_TOKEN: usize = 22;
/// The longest `AGUI-Resume-Token` accepted.
pub const MAX_RESUME_TOKEN: usize = 512;

/// The owner of a request: the application's [`Owner`], else the hash of the
/// `AGUI-Resume-Token`; `None` when there is neither. A token that breaks the rule
/// ([`MIN_RESUME_TOKEN`] to [`MAX_RESUME_TOKEN`] characters of `A-Z a-z 0-9 - _ = . ~`)
/// is refused with a 400 `invalid_resume_token` that states the rule.
pub(crate) fn owner_of(
    headers: &HeaderMap,
    extension: Option<&Owner>,
) -> Result<Option<String>, ApiError> {
    if let Some(Owner(p)) = extension {
        return Ok(Some(format!("principal:{p}")));
    }
    let Some(value) = headers.get(RESUME_TOKEN_HEADER) else {
        return Ok(None);
    };
    let token = value.to_str().unwrap_or("");
    let chars_ok = token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'=' | b'.' | b'~'));
    let len = value.len();
    if !(MIN_RESUME_TOKEN..=MAX_RESUME_TOKEN).contains(&len) || !chars_ok || token.len() != len {
        let got = if chars_ok && token.len() == len {
            format!("{len} characters")
        } else {
            "a character outside that set".to_owned()
        };
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_resume_token",
            format!(
                "AGUI-Resume-Token must be {MIN_RESUME_TOKEN} to {MAX_RESUME_TOKEN} characters of A-Z a-z 0-9 - _ = . ~ (a random secret of at least 128 bits); this one has {got}"
            ),
        )
        .with("field", "AGUI-Resume-Token"));
    }
    Ok(Some(format!("token:{}", sha256_hex(token.as_bytes()))))
}

/// Whether the request asks for a resumable run.
pub(crate) fn opted_in(headers: &HeaderMap, mode: ResumeMode) -> bool {
    mode == ResumeMode::Always
        || headers
            .get(RESUMABLE_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() == "1")
}

/// Whether a run id may name a resumable run: `[A-Za-z0-9._~-]{1,128}`.
pub(crate) fn resumable_run_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

/// The header a response carries when a run that asked to be resumable is not.
pub(crate) fn not_resumable_header(reason: &'static str) -> (&'static str, HeaderValue) {
    (
        RESUMABLE_HEADER,
        HeaderValue::from_str(&format!("0; reason=\"{reason}\""))
            .unwrap_or(HeaderValue::from_static("0")),
    )
}

/// Parses the cursor of a re-attach: `Last-Event-ID: {runId}:{seq}` and/or
/// `?after={seq}`.
pub(crate) fn cursor(
    headers: &HeaderMap,
    after: Option<&str>,
    run_id: &str,
) -> Result<u64, ApiError> {
    let bad = |code: &'static str, msg: String| ApiError::new(StatusCode::BAD_REQUEST, code, msg);
    let from_header = match headers.get("last-event-id") {
        None => None,
        Some(v) => {
            if v.len() > 256 {
                return Err(bad(
                    "malformed_cursor",
                    "Last-Event-ID is longer than 256 bytes".into(),
                ));
            }
            let v = v
                .to_str()
                .map_err(|_| bad("malformed_cursor", "Last-Event-ID is not text".into()))?;
            let (rid, seq) = v.rsplit_once(':').ok_or_else(|| {
                bad(
                    "malformed_cursor",
                    format!("Last-Event-ID {v:?} is not {{runId}}:{{seq}}"),
                )
            })?;
            if rid != run_id {
                return Err(bad(
                    "cursor_mismatch",
                    format!("Last-Event-ID names run '{rid}', not '{run_id}'"),
                ));
            }
            Some(seq.parse::<u64>().map_err(|_| {
                bad(
                    "malformed_cursor",
                    format!("Last-Event-ID {v:?}: '{seq}' is not a sequence number"),
                )
            })?)
        }
    };
    let from_query = match after {
        None => None,
        Some(a) => Some(a.parse::<u64>().map_err(|_| {
            bad(
                "malformed_cursor",
                format!("after={a:?} is not a sequence number"),
            )
        })?),
    };
    match (from_header, from_query) {
        (Some(h), Some(q)) if h != q => Err(bad(
            "malformed_cursor",
            format!("Last-Event-ID (seq {h}) and after={q} disagree"),
        )),
        (h, q) => Ok(h.or(q).unwrap_or(0)),
    }
}

/// A cursor past the head: the store lost events the client had.
fn cursor_ahead(cursor: u64, head: u64) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "cursor_ahead",
        format!("the cursor (seq {cursor}) is past the run's last event (seq {head})"),
    )
    .with("headSeq", head)
}

fn unknown_run(run_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_run",
        format!("no resumable run '{run_id}' of yours here"),
    )
}

fn store_failed(e: &RunStoreError) -> ApiError {
    tracing::error!(error = %e, "run store failed");
    match e {
        RunStoreError::Full(why) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "run_store_full",
            format!("no room for another resumable run: {why}"),
        ),
        _ => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            "the run store is unavailable; retry later",
        ),
    }
}

/// `GET {agent}/runs/{runId}/events`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn events(
    state: &ResumeState,
    agent: &str,
    run_id: &str,
    owner: Option<String>,
    headers: &HeaderMap,
    after: Option<&str>,
    encoding: Encoding,
    keep_alive: Option<Duration>,
) -> Result<Response, ApiError> {
    let owner = owner.ok_or_else(|| unknown_run(run_id))?;
    let cursor = cursor(headers, after, run_id)?;
    let key = RunKey::derive(&owner, agent, run_id);
    let store = &state.config.store;
    let record = store
        .record(&key)
        .await
        .map_err(|e| store_failed(&e))?
        .ok_or_else(|| unknown_run(run_id))?;
    if cursor > record.head {
        return Err(cursor_ahead(cursor, record.head));
    }
    if record.status.is_terminal() && cursor >= record.head {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if cursor + 1 < record.oldest {
        return Err(ApiError::new(
            StatusCode::GONE,
            "cursor_expired",
            format!(
                "events before seq {} are no longer kept; the cursor is seq {cursor}",
                record.oldest
            ),
        )
        .with("oldestSeq", record.oldest)
        .with("headSeq", record.head));
    }
    tracing::info!(run_id, cursor, head = record.head, "re-attach");
    Ok(viewer::response(
        store.clone(),
        key.clone(),
        run_id.to_owned(),
        cursor,
        Some(record.head),
        ViewerSettings {
            encoding,
            keep_alive,
            retry_ms: Some(state.config.retry_ms),
            downgrade: agui_sdk_core::semantics::Downgrade::none(),
        },
        ViewerGuard::new(state.registry.get(&key)),
    ))
}

/// `GET {agent}/runs/{runId}`.
pub(crate) async fn status(
    state: &ResumeState,
    agent: &str,
    run_id: &str,
    owner: Option<String>,
) -> Result<Response, ApiError> {
    let owner = owner.ok_or_else(|| unknown_run(run_id))?;
    let key = RunKey::derive(&owner, agent, run_id);
    let r = state
        .config
        .store
        .record(&key)
        .await
        .map_err(|e| store_failed(&e))?
        .ok_or_else(|| unknown_run(run_id))?;
    let viewers = state
        .registry
        .get(&key)
        .map(|l| l.viewers.load(std::sync::atomic::Ordering::SeqCst));
    Ok(Json(json!({
        "runId": r.run_id,
        "threadId": r.thread_id,
        "status": r.status.as_str(),
        "headSeq": r.head,
        "oldestSeq": r.oldest,
        "createdAt": r.created_at_ms,
        "finishedAt": r.finished_at_ms,
        "viewers": viewers,
    }))
    .into_response())
}

/// `POST {agent}/runs/{runId}/cancel`.
pub(crate) async fn cancel(
    state: &ResumeState,
    agent: &str,
    run_id: &str,
    owner: Option<String>,
) -> Result<Response, ApiError> {
    let owner = owner.ok_or_else(|| unknown_run(run_id))?;
    let key = RunKey::derive(&owner, agent, run_id);
    let outcome = state.config.store.request_cancel(&key).await;
    match outcome {
        Ok(CancelOutcome::Requested) => {
            // A local producer is told at once; a remote one at its next heartbeat.
            if let Some(local) = state.registry.get(&key) {
                local.cancel.cancel();
            }
            tracing::info!(run_id, "cancel requested");
            Ok((
                StatusCode::ACCEPTED,
                Json(json!({ "runId": run_id, "status": "cancelling" })),
            )
                .into_response())
        }
        Ok(CancelOutcome::AlreadyEnded) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "run_ended",
            format!("run '{run_id}' has already ended"),
        )),
        Err(RunStoreError::NotFound) => Err(unknown_run(run_id)),
        Err(e) => Err(store_failed(&e)),
    }
}

/// Everything the start of a resumable run needs from the router.
pub(crate) struct Start<'a> {
    pub state: &'a ResumeState,
    pub agent_name: &'a str,
    pub owner: String,
    pub body: &'a [u8],
    pub headers: &'a HeaderMap,
    pub input: &'a agui_sdk_core::RunAgentInput,
    pub encoding: Encoding,
    pub keep_alive: Option<Duration>,
}

/// What a resumable start decided.
pub(crate) enum Started {
    /// A new run: the caller launches it with this fence (its response is a viewer
    /// with these settings, from the start).
    New {
        key: RunKey,
        fence: super::Fence,
        viewer: ViewerSettings,
    },
    /// The run existed with the same body: this response attaches to it.
    Attached(Response),
}

/// `POST {agent}` for a resumable run: idempotent on (owner, runId).
pub(crate) async fn start(s: Start<'_>) -> Result<Started, ApiError> {
    let run_id = &s.input.run_id;
    let key = RunKey::derive(&s.owner, s.agent_name, run_id);
    let body_hash = sha256_hex(s.body);
    let store = &s.state.config.store;
    let created = store
        .create(NewRun {
            key: key.clone(),
            run_id: run_id.clone(),
            thread_id: s.input.thread_id.clone(),
            agent: s.agent_name.to_owned(),
            body_hash: body_hash.clone(),
            replica: s.state.config.replica.clone(),
            lease: s.state.config.lease,
            thread: None,
        })
        .await
        .map_err(|e| store_failed(&e))?;
    let settings = ViewerSettings {
        encoding: s.encoding,
        keep_alive: s.keep_alive,
        retry_ms: Some(s.state.config.retry_ms),
        downgrade: agui_sdk_core::semantics::Downgrade::none(),
    };
    match created {
        Created::New(fence) => Ok(Started::New {
            key,
            fence,
            viewer: settings,
        }),
        Created::Existing(record) => {
            if record.body_hash != body_hash {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "run_id_conflict",
                    format!("run '{run_id}' exists with another request body; use a new runId"),
                ));
            }
            let cursor = cursor(s.headers, None, run_id)?;
            if cursor > record.head {
                return Err(cursor_ahead(cursor, record.head));
            }
            tracing::info!(run_id = %agui_sdk_core::Escaped(run_id), cursor, "a retried start attaches to its run");
            Ok(Started::Attached(viewer::response(
                store.clone(),
                key.clone(),
                run_id.clone(),
                cursor,
                Some(record.head),
                settings,
                ViewerGuard::new(s.state.registry.get(&key)),
            )))
        }
    }
}

/// Adds `Vary`-free informational headers to a non-resumable response whose request
/// asked for resumption.
pub(crate) fn mark_not_resumable(mut res: Response, reason: &'static str) -> Response {
    let (k, v) = not_resumable_header(reason);
    res.headers_mut().insert(k, v);
    res.headers_mut()
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-cache"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert("last-event-id", HeaderValue::from_str(v).unwrap());
            m
        };
        assert_eq!(cursor(&HeaderMap::new(), None, "r").unwrap(), 0);
        assert_eq!(cursor(&h("r:7"), None, "r").unwrap(), 7);
        assert_eq!(cursor(&h("a:b:9"), None, "a:b").unwrap(), 9);
        assert_eq!(cursor(&HeaderMap::new(), Some("5"), "r").unwrap(), 5);
        assert_eq!(cursor(&h("r:5"), Some("5"), "r").unwrap(), 5);
        assert_eq!(
            cursor(&h("r:5"), Some("6"), "r").unwrap_err().code,
            "malformed_cursor"
        );
        assert_eq!(
            cursor(&h("other:5"), None, "r").unwrap_err().code,
            "cursor_mismatch"
        );
        assert_eq!(
            cursor(&h("r:x"), None, "r").unwrap_err().code,
            "malformed_cursor"
        );
        assert_eq!(
            cursor(&h("r5"), None, "r").unwrap_err().code,
            "malformed_cursor"
        );
        assert_eq!(
            cursor(&h(&format!("r:{}", "1".repeat(300))), None, "r")
                .unwrap_err()
                .code,
            "malformed_cursor"
        );
        assert_eq!(
            cursor(&HeaderMap::new(), Some("-1"), "r").unwrap_err().code,
            "malformed_cursor"
        );
    }

    #[test]
    fn owners_and_run_ids() {
        let mut h = HeaderMap::new();
        assert_eq!(owner_of(&h, None).unwrap(), None);
        h.insert(RESUME_TOKEN_HEADER, HeaderValue::from_static("short"));
        let e = owner_of(&h, None).unwrap_err();
        assert_eq!(
            (e.status, e.code),
            (StatusCode::BAD_REQUEST, "invalid_resume_token")
        );
        assert!(
            e.message.contains("22 to 512") && e.message.contains("has 5 characters"),
            "{}",
            e.message
        );
        h.insert(
            RESUME_TOKEN_HEADER,
            HeaderValue::from_static("0123456789abcdefABCDEF:x"),
        );
        let e = owner_of(&h, None).unwrap_err();
        assert!(e.message.contains("outside that set"), "{}", e.message);
        h.insert(RESUME_TOKEN_HEADER, HeaderValue::from_static("short"));
        assert_eq!(
            owner_of(&h, Some(&Owner("bob".into()))).unwrap().as_deref(),
            Some("principal:bob"),
            "the application's owner wins over a client header"
        );
        h.insert(
            RESUME_TOKEN_HEADER,
            HeaderValue::from_static("0123456789abcdefABCDEF_-xyz"),
        );
        let a = owner_of(&h, None).unwrap().unwrap();
        assert!(
            a.starts_with("token:") && !a.contains("0123456789abcdef"),
            "only the hash is kept"
        );
        assert_eq!(
            owner_of(&h, Some(&Owner("alice".into()))).unwrap().unwrap(),
            "principal:alice"
        );
        assert!(resumable_run_id("2f1c0c1e-aa.b_c~d"));
        assert!(!resumable_run_id("has:colon"));
        assert!(!resumable_run_id(""));
        assert!(!resumable_run_id(&"x".repeat(129)));
    }
}
