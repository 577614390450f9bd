//! The page and its JSON API (documented in `API.md`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::relay::{self, RelayRequest};
use crate::replay::Replay;
use crate::{assets, InspectError, Inspector, RunEntry};
use agui_sdk_core::encoding::Framing;

/// The header that carries the per-start token.
pub(crate) const TOKEN_HEADER: &str = "x-agui-token";

/// Most timeline rows in one feed line.
const ROWS_PER_LINE: usize = 10_000;
/// Least time between two views of a running run.
const VIEW_INTERVAL: Duration = Duration::from_millis(100);

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({ "error": code, "message": message.into() })),
    )
        .into_response()
}

impl From<InspectError> for Response {
    fn from(e: InspectError) -> Self {
        match e {
            InspectError::Full(_) => error(StatusCode::SERVICE_UNAVAILABLE, "full", e.to_string()),
            InspectError::BadUrl(_) => error(StatusCode::BAD_REQUEST, "bad_url", e.to_string()),
            InspectError::BadHeader(_) => {
                error(StatusCode::BAD_REQUEST, "bad_header", e.to_string())
            }
        }
    }
}

impl Inspector {
    /// The page (`/` and its files, `/{file}`) and its API under `/api`. Every API
    /// request needs the `X-Agui-Token` header; any request whose `Origin` is not the
    /// inspector's own is refused.
    pub fn router(&self) -> Router {
        let limits = *self.limits();
        let api = Router::new()
            .route("/info", get(info))
            .route("/runs", get(list_runs).post(start_run))
            .route("/runs/{id}", get(run_summary))
            .route("/runs/{id}/stop", post(stop_run))
            .route("/runs/{id}/feed", get(feed))
            .route("/runs/{id}/events/{index}", get(event_detail))
            .route("/runs/{id}/recording", get(download))
            .route("/recordings", post(upload))
            .layer(DefaultBodyLimit::max(limits.max_body))
            .layer(middleware::from_fn_with_state(self.clone(), require_token))
            .fallback(|| async { error(StatusCode::NOT_FOUND, "not_found", "no such route") });
        Router::new()
            .route("/", get(assets::index))
            .nest("/api", api)
            .route("/{file}", get(assets::file))
            .layer(middleware::from_fn(same_origin))
            .with_state(self.clone())
    }
}

/// Refuses a request whose `Origin` is another site's (a page elsewhere driving the
/// inspector from the user's browser).
pub(crate) async fn same_origin(request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let own = format!("http://{host}");
        if origin.to_str().ok() != Some(own.as_str()) {
            let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            tracing::warn!(origin = %shown, "inspector: refused a foreign origin");
            return error(
                StatusCode::FORBIDDEN,
                "forbidden_origin",
                format!(
                    "requests from {shown} are refused: only the inspector's own page may call it"
                ),
            );
        }
    }
    next.run(request).await
}

async fn require_token(
    State(inspector): State<Inspector>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(TOKEN_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or(b"");
    if !constant_time_eq(given, inspector.token().as_bytes()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong X-Agui-Token: open the address agui inspect printed",
        );
    }
    next.run(request).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn info(State(inspector): State<Inspector>) -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "defaultUrl": inspector.default_url(),
        "proxy": inspector.proxy_info(),
    }))
}

async fn list_runs(State(inspector): State<Inspector>) -> Json<Value> {
    let runs: Vec<Value> = inspector.runs().iter().map(|r| r.summary()).collect();
    Json(json!({ "runs": runs }))
}

fn find(inspector: &Inspector, id: &str) -> Result<Arc<RunEntry>, Box<Response>> {
    id.parse()
        .ok()
        .and_then(|id| inspector.run(id))
        .ok_or_else(|| {
            Box::new(error(
                StatusCode::NOT_FOUND,
                "unknown_run",
                format!("no run {id:?}"),
            ))
        })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    url: String,
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
    input: Value,
    #[serde(default)]
    format: Option<String>,
}

async fn start_run(State(inspector): State<Inspector>, body: Bytes) -> Response {
    let body: StartBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("the body is not {{url, headers, input, format}}: {e}"),
            )
        }
    };
    let format = match body.format.as_deref() {
        None | Some("sse") => Framing::Sse,
        Some("proto") => Framing::Proto,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("format {other:?}: expected sse or proto"),
            )
        }
    };
    if !body.input.is_object() {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "input must be a JSON object (a RunAgentInput)",
        );
    }
    let mut headers = Vec::new();
    for (name, value) in body.headers {
        match value {
            Value::String(v) => headers.push((name, v)),
            other => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "bad_header",
                    format!("header {name:?}: the value must be a string, not {other}"),
                )
            }
        }
    }
    let req = RelayRequest {
        url: body.url,
        headers,
        input: body.input,
        format,
    };
    match relay::start(&inspector, req) {
        Ok(run) => (
            StatusCode::CREATED,
            Json(json!({ "id": run.id().to_string() })),
        )
            .into_response(),
        Err(e) => e.into(),
    }
}

async fn run_summary(State(inspector): State<Inspector>, Path(id): Path<String>) -> Response {
    match find(&inspector, &id) {
        Ok(run) => Json(run.summary()).into_response(),
        Err(r) => *r,
    }
}

async fn stop_run(State(inspector): State<Inspector>, Path(id): Path<String>) -> Response {
    match find(&inspector, &id) {
        Ok(run) => {
            run.stop();
            StatusCode::NO_CONTENT.into_response()
        }
        Err(r) => *r,
    }
}

/// Where one feed is in its run.
struct Cursor {
    run: Arc<RunEntry>,
    changes: tokio::sync::watch::Receiver<u64>,
    rows: usize,
    findings: usize,
    view_version: Option<u64>,
    view_at: Option<Instant>,
    done: bool,
}

impl Cursor {
    /// The lines due now (empty when nothing changed).
    fn lines(&mut self) -> Vec<u8> {
        let version = *self.changes.borrow_and_update();
        let r = self.run.recording();
        let mut out = Vec::new();
        let rows = r.rows();
        while self.rows < rows.len() {
            let end = (self.rows + ROWS_PER_LINE).min(rows.len());
            line(
                &mut out,
                &json!({ "kind": "events", "items": &rows[self.rows..end] }),
            );
            self.rows = end;
        }
        let findings = r.findings();
        if self.findings < findings.len() {
            line(
                &mut out,
                &json!({ "kind": "findings", "items": &findings[self.findings..] }),
            );
            self.findings = findings.len();
        }
        let ended = r.end().is_some();
        let due = self.view_at.is_none_or(|at| at.elapsed() >= VIEW_INTERVAL) || ended;
        if self.view_version != Some(version) && due {
            let reducer = r.reducer();
            line(
                &mut out,
                &json!({
                    "kind": "view",
                    "messages": reducer.messages(),
                    "state": reducer.state(),
                    "interrupts": reducer.pending_interrupts(),
                    "stateChange": r.state_change(),
                    "summary": self.run.summary_of(&r),
                }),
            );
            self.view_version = Some(version);
            self.view_at = Some(Instant::now());
        }
        if ended && self.view_version == Some(version) {
            line(
                &mut out,
                &json!({ "kind": "end", "summary": self.run.summary_of(&r) }),
            );
            self.done = true;
        }
        out
    }
}

fn line(out: &mut Vec<u8>, value: &Value) {
    agui_sdk_core::wire::write_canonical(value, out);
    out.push(b'\n');
}

async fn feed(State(inspector): State<Inspector>, Path(id): Path<String>) -> Response {
    let run = match find(&inspector, &id) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let cursor = Cursor {
        changes: run.subscribe(),
        run,
        rows: 0,
        findings: 0,
        view_version: None,
        view_at: None,
        done: false,
    };
    let stream = futures_util::stream::unfold(cursor, |mut c| async move {
        loop {
            if c.done {
                return None;
            }
            let out = c.lines();
            if !out.is_empty() {
                return Some((Ok::<_, std::convert::Infallible>(Bytes::from(out)), c));
            }
            // Nothing new: wait for a change, or for a throttled view to fall due.
            let _ = tokio::time::timeout(VIEW_INTERVAL, c.changes.changed()).await;
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn event_detail(
    State(inspector): State<Inspector>,
    Path((id, index)): Path<(String, u64)>,
) -> Response {
    let run = match find(&inspector, &id) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    // Copy what the replay needs (the events from where the kept replay stands), then
    // replay without holding the lock.
    let i = index as usize;
    let (row, pending, findings, mut replay) = {
        let r = run.recording();
        let Some(row) = r.rows().get(i).cloned() else {
            return error(
                StatusCode::NOT_FOUND,
                "unknown_event",
                format!("run {id} has {} events, no event {index}", r.rows().len()),
            );
        };
        let replay = run
            .take_replay(i)
            .unwrap_or_else(|| Replay::new(r.seed_input()));
        let pending: Vec<Box<[u8]>> = r.raw_events()[replay.next_index()..=i].to_vec();
        let findings: Vec<_> = r
            .findings()
            .iter()
            .filter(|f| f.index == index)
            .cloned()
            .collect();
        (row, pending, findings, replay)
    };
    let result = tokio::task::spawn_blocking(move || {
        // `pending` ends with the event itself (the replay stands at or before it).
        let Some((last, earlier)) = pending.split_last() else {
            return (Value::Null, replay);
        };
        replay.advance(earlier);
        let event = serde_json::from_slice::<Value>(last)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(last).into_owned()));
        let (before, after, messages) = replay.step(last);
        let patch = if row.event_type == "STATE_DELTA" {
            event.get("delta").cloned().unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        let diff = serde_json::to_value(json_patch::diff(&before, &after)).unwrap_or(Value::Null);
        let detail = json!({
            "index": row.index,
            "type": row.event_type,
            "t": row.t,
            "size": row.size,
            "event": event,
            "patch": patch,
            "diff": diff,
            "stateBefore": before,
            "state": after,
            "messages": messages,
            "findings": findings,
        });
        (detail, replay)
    })
    .await;
    let result = result.map(|(detail, replay)| {
        run.keep_replay(replay);
        detail
    });
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("replaying the run failed: {e}"),
        ),
    }
}

#[derive(Deserialize)]
struct DownloadQuery {
    format: Option<String>,
}

async fn download(
    State(inspector): State<Inspector>,
    Path(id): Path<String>,
    Query(q): Query<DownloadQuery>,
) -> Response {
    let run = match find(&inspector, &id) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let sse = match q.format.as_deref() {
        None | Some("jsonl") => false,
        Some("sse") => true,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("format {other:?}: expected jsonl or sse"),
            )
        }
    };
    let body = {
        let r = run.recording();
        let mut out = Vec::with_capacity(r.raw_events().iter().map(|e| e.len() + 8).sum());
        for e in r.raw_events() {
            if sse {
                agui_sdk_core::encoding::sse::encode_data(e, &mut out);
            } else {
                out.extend_from_slice(e);
                out.push(b'\n');
            }
        }
        out
    };
    let (ty, ext) = if sse {
        ("text/event-stream", "sse")
    } else {
        ("application/x-ndjson", "jsonl")
    };
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
    if let Ok(v) = format!("attachment; filename=\"run-{id}.{ext}\"").parse() {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    (headers, body).into_response()
}

#[derive(Deserialize)]
struct UploadQuery {
    name: Option<String>,
}

async fn upload(
    State(inspector): State<Inspector>,
    Query(q): Query<UploadQuery>,
    body: Bytes,
) -> Response {
    let name = q.name.unwrap_or_else(|| "recording".into());
    let name: String = name.chars().take(200).collect();
    let result = tokio::task::spawn_blocking(move || inspector.add_recording(&name, &body)).await;
    match result {
        Ok(Ok(run)) => (
            StatusCode::CREATED,
            Json(json!({ "id": run.id().to_string() })),
        )
            .into_response(),
        Ok(Err(e)) => e.into(),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("reading the recording failed: {e}"),
        ),
    }
}
