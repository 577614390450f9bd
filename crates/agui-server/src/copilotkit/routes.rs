//! The runtime's HTTP handlers, multi-route and single-route.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agui_core::semantics::Downgrade;
use agui_core::RunAgentInput;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::runner::{self, Job, Registry, Stop, STOP_MESSAGE};
use super::stream::{self, Writer};
use super::CopilotRuntime;
use crate::admission::{is_json_media_type, Admission, Admitted};
use crate::agent::Agent;
use crate::error::ApiError;
use crate::threads::{InMemoryThreadStore, StoreError, ThreadLimits, ThreadStore};

/// The state the handlers share.
struct Runtime {
    agents: Vec<(String, Arc<dyn Agent>)>,
    default_agent: Option<String>,
    store: Arc<dyn ThreadStore>,
    admission: Admission,
    registry: Arc<Registry>,
}

pub(super) fn router(rt: CopilotRuntime) -> Router {
    let cors = rt.cors.layer();
    let shared = Arc::new(Runtime {
        agents: rt.agents,
        default_agent: rt.default_agent,
        store: rt
            .store
            .unwrap_or_else(|| Arc::new(InMemoryThreadStore::new(ThreadLimits::default()))),
        admission: Admission::new(rt.config, rt.shutdown, rt.verifier),
        registry: Arc::new(Registry::default()),
    });
    let router = Router::new()
        .route("/", post(single_route))
        .route("/info", get(info))
        .route("/agent/{agent_id}/run", post(run))
        .route("/agent/{agent_id}/connect", post(connect))
        .route("/agent/{agent_id}/stop/{thread_id}", post(stop))
        .route("/transcribe", post(transcribe))
        .route("/threads", any(threads))
        .route("/threads/{*rest}", any(threads))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(shared);
    match cors {
        Some(layer) => router.layer(layer),
        None => router,
    }
}

/// A refused request: `{"error","message","code"}` (and `details`), as CopilotKit's
/// runtime answers.
#[derive(Debug)]
struct Failure {
    status: StatusCode,
    error: &'static str,
    code: &'static str,
    message: String,
    details: Option<String>,
}

impl Failure {
    fn new(
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

    fn invalid_request(status: StatusCode, message: impl Into<String>) -> Self {
        Failure::new(status, "invalid_request", "invalid_request", message)
    }

    fn invalid_stop(error: &'static str, message: impl Into<String>) -> Self {
        Failure::new(StatusCode::BAD_REQUEST, error, "invalid_request", message)
    }

    fn unknown_agent(id: &str) -> Self {
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

impl Runtime {
    fn find(&self, id: &str) -> Option<(&str, &Arc<dyn Agent>)> {
        let hit = |want: &str| {
            self.agents
                .iter()
                .find(|(n, _)| n == want)
                .map(|(n, a)| (n.as_str(), a))
        };
        hit(id).or_else(|| match (id, &self.default_agent) {
            ("default", Some(d)) => hit(d),
            _ => None,
        })
    }

    fn description(&self, id: &str, agent: &dyn Agent) -> Option<String> {
        std::panic::catch_unwind(AssertUnwindSafe(|| agent.capabilities()))
            .map_err(|_| tracing::error!(agent = %id, "Agent::capabilities panicked"))
            .ok()
            .and_then(|c| c.identity)
            .and_then(|i| i.description)
    }

    /// The request body, within the configured size and time.
    async fn body(&self, headers: &HeaderMap, body: Body) -> Result<Vec<u8>, Failure> {
        Ok(self.admission.read_body(headers, body).await?)
    }

    fn parse_input(bytes: &[u8]) -> Result<RunAgentInput, Failure> {
        agui_core::wire::from_json_slice(bytes)
            .map_err(|e| Failure::from(ApiError::from_json_error(&e)))
    }

    async fn run(&self, agent_id: &str, bytes: Vec<u8>) -> Result<Response, Failure> {
        let (name, agent) = self
            .find(agent_id)
            .ok_or_else(|| Failure::unknown_agent(agent_id))?;
        let slot = self.admission.open()?;
        let Admitted { input, permit, .. } = self.admission.admit_body(slot, bytes)?;
        let thread_id = input.thread_id.clone();
        let run_id = input.run_id.clone();
        let begun = self
            .store
            .begin_run(&thread_id, &run_id)
            .await
            .map_err(|e| match e {
                StoreError::Busy { run_id: live, .. } => {
                    let mut f = Failure::new(
                        StatusCode::CONFLICT,
                        "Thread already running",
                        "thread_running",
                        format!(
                            "thread '{thread_id}' is already running run '{live}': stop it, or connect to it to follow it"
                        ),
                    );
                    f.details = Some(live);
                    f
                }
                StoreError::Full { .. } | StoreError::OverBudget { .. } => Failure::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service unavailable",
                    "threads_full",
                    e.to_string(),
                ),
                other => {
                    tracing::error!(error = %other, "thread store failed");
                    Failure::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "Failed to run agent",
                        "store_error",
                        "the thread store failed",
                    )
                }
            })?;

        let span = tracing::info_span!(
            "copilotkit_run",
            agent = %name,
            thread_id = %thread_id,
            run_id = %run_id,
        );
        let downgrade = Downgrade::for_declared(input.protocol_version.as_deref());
        let (ctx, guard) = self.admission.prepare(name, &input);
        let run = self
            .admission
            .start(agent.as_ref(), input.clone(), ctx, guard, &span);
        runner::spawn(
            Job {
                store: self.store.clone(),
                registry: self.registry.clone(),
                input,
                known_message_ids: begun.known_message_ids,
                permit,
                span,
            },
            run,
        );
        Ok(stream::run_response(
            self.store.clone(),
            thread_id,
            run_id,
            Writer::new(downgrade),
            self.admission.config().keep_alive,
        ))
    }

    async fn connect(&self, agent_id: &str, bytes: &[u8]) -> Result<Response, Failure> {
        self.find(agent_id)
            .ok_or_else(|| Failure::unknown_agent(agent_id))?;
        // The parsed input is held across the store's await: it is admitted by the
        // memory budget first, as a run's is.
        let _held = self.admission.hold_parsed(bytes)?;
        let input = Self::parse_input(bytes)?;
        let downgrade = Downgrade::for_declared(input.protocol_version.as_deref());
        let snapshot = self
            .store
            .snapshot(&input.thread_id)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "thread store failed");
                Failure::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Failed to connect",
                    "store_error",
                    "the thread store failed",
                )
            })?
            .unwrap_or_default();
        tracing::debug!(
            thread_id = %input.thread_id,
            runs = snapshot.history.len(),
            live = snapshot.live.is_some(),
            "connect"
        );
        // CopilotKit's `lastSeenEventId`: where a client that saw the live run stopped.
        let last_seen: Option<String> = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|v| v.get("lastSeenEventId")?.as_str().map(str::to_owned));
        Ok(stream::connect_response(
            self.store.clone(),
            input.thread_id,
            snapshot.history,
            snapshot.live,
            last_seen.as_deref(),
            Writer::new(downgrade),
            self.admission.config().keep_alive,
        ))
    }

    /// Stops the thread's run; with `scope`, only when that is the thread's active run.
    async fn stop(
        &self,
        agent_id: &str,
        thread_id: &str,
        scope: Option<String>,
    ) -> Result<Response, Failure> {
        self.find(agent_id)
            .ok_or_else(|| Failure::unknown_agent(agent_id))?;
        let not_active = |run: &str| {
            json!({
                "stopped": false,
                "message": format!("Run '{run}' is not the active run for thread '{thread_id}'."),
            })
        };
        let mut stopped = match self.registry.stop(thread_id, scope.as_deref()) {
            Stop::Stopped(run) => Some(run),
            Stop::OtherRun => {
                let run = scope.as_deref().unwrap_or_default();
                return Ok(Json(not_active(run)).into_response());
            }
            Stop::NotHere => None,
        };
        if stopped.is_none() {
            // Not running here: in a shared store, another process may run it.
            if let Some(run) = scope.as_deref() {
                let live = self
                    .store
                    .snapshot(thread_id)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|t| t.live);
                if live.as_deref().is_some_and(|l| l != run) {
                    return Ok(Json(not_active(run)).into_response());
                }
            }
            stopped = match self.store.request_stop(thread_id).await {
                Ok(run) => run,
                Err(e) => {
                    tracing::warn!(%thread_id, error = %e, "could not ask the store to stop the run");
                    None
                }
            };
        }
        let body = match stopped {
            Some(run_id) => {
                tracing::info!(%thread_id, %run_id, "stop requested");
                json!({
                    "stopped": true,
                    "interrupt": {
                        "type": "RUN_ERROR",
                        "message": STOP_MESSAGE,
                        "code": "STOPPED",
                    },
                })
            }
            None => json!({
                "stopped": false,
                "message": format!("No active run for thread '{thread_id}'."),
            }),
        };
        Ok(Json(body).into_response())
    }

    fn info(&self) -> Value {
        let mut agents = Map::new();
        for (id, agent) in &self.agents {
            agents.insert(id.clone(), self.agent_info(id, agent.as_ref()));
        }
        if let Some((_, agent)) = self
            .default_agent
            .as_deref()
            .filter(|_| !agents.contains_key("default"))
            .and_then(|d| self.find(d))
        {
            agents.insert("default".into(), self.agent_info("default", agent.as_ref()));
        }
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "agents": agents,
            "audioFileTranscriptionEnabled": false,
            "mode": "sse",
            "a2uiEnabled": false,
        })
    }

    fn agent_info(&self, id: &str, agent: &dyn Agent) -> Value {
        let mut o = Map::new();
        o.insert("name".into(), json!(id));
        if let Some(d) = self.description(id, agent) {
            o.insert("description".into(), json!(d));
        }
        o.insert("className".into(), json!("AgUiRustAgent"));
        Value::Object(o)
    }
}

async fn info(State(rt): State<Arc<Runtime>>) -> Json<Value> {
    Json(rt.info())
}

async fn run(
    State(rt): State<Arc<Runtime>>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let bytes = rt.body(&headers, body).await?;
    rt.run(&agent_id, bytes).await
}

async fn connect(
    State(rt): State<Arc<Runtime>>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let bytes = rt.body(&headers, body).await?;
    rt.connect(&agent_id, &bytes).await
}

async fn stop(
    State(rt): State<Arc<Runtime>>,
    Path((agent_id, thread_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    // CopilotKit's client sends `Content-Type: application/json` (with `{runId}` or no
    // body); a cross-site page cannot, without a preflight this runtime's CORS refuses.
    let bytes = rt.body(&headers, body).await?;
    let scope = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|_| Failure::invalid_stop("Invalid stop request", "the body is not JSON"))?;
        stop_scope(Some(&value))?
    };
    rt.stop(&agent_id, &thread_id, scope).await
}

/// The run a stop request is scoped to: an absent body or `{}` is the thread's active
/// run, whatever it is; `{"runId": …}` only that run. Any other key, or a `runId`
/// that is not a non-empty string, is refused with 400, as CopilotKit's runtime does.
fn stop_scope(body: Option<&Value>) -> Result<Option<String>, Failure> {
    let Some(body) = body else {
        return Ok(None);
    };
    let Value::Object(o) = body else {
        return Err(Failure::invalid_stop(
            "Invalid stop request",
            "the body must be an object: {} or {\"runId\": …}",
        ));
    };
    if let Some(key) = o.keys().find(|k| *k != "runId") {
        return Err(Failure::invalid_stop(
            "Invalid stop request",
            format!("unknown key '{key}': a stop body is {{}} or {{\"runId\": …}}"),
        ));
    }
    match o.get("runId") {
        None => Ok(None),
        Some(Value::String(run)) if !run.trim().is_empty() => Ok(Some(run.clone())),
        Some(_) => Err(Failure::invalid_stop(
            "Invalid runId",
            "runId must be a non-empty string",
        )),
    }
}

async fn transcribe() -> Failure {
    Failure::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "Transcription not configured",
        "transcription_unavailable",
        "this runtime has no transcription service",
    )
}

async fn threads() -> Failure {
    Failure::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Threads not available",
        "threads_unavailable",
        "listing threads needs CopilotKit's hosted (intelligence) mode; this runtime serves SSE mode",
    )
}

async fn not_found() -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        "Not found",
        "not_found",
        "no such runtime route",
    )
}

async fn method_not_allowed() -> Failure {
    Failure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "Method not allowed",
        "method_not_allowed",
        "use GET for /info and POST for everything else",
    )
}

/// The single-route envelope, as spans of the request body.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    method: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    body: Option<&'a serde_json::value::RawValue>,
}

/// `POST {base}` with `{"method","params","body"}`.
async fn single_route(
    State(rt): State<Arc<Runtime>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json_media_type);
    if !json_type {
        return Err(Failure::invalid_request(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Single-route endpoint expects JSON payloads",
        ));
    }
    let bytes = rt.body(&headers, body).await?;
    // The envelope is held while its request is handled: admitted by the memory budget.
    let _held = rt.admission.hold_text(&bytes)?;
    // Read as text spans of the body, not as a tree (which costs tens of times the
    // body): the inner body is handed on as its own text.
    let envelope: Envelope<'_> = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::invalid_request(
            StatusCode::BAD_REQUEST,
            format!("Invalid JSON payload: {e}"),
        )
    })?;
    let method: Option<String> = envelope
        .method
        .and_then(|m| serde_json::from_str(m.get()).ok());
    let method = method
        .ok_or_else(|| Failure::invalid_request(StatusCode::BAD_REQUEST, "Missing method field"))?;
    let method = method.as_str();
    type Params<'a> =
        std::collections::HashMap<std::borrow::Cow<'a, str>, &'a serde_json::value::RawValue>;
    let params: Option<Params<'_>> = envelope
        .params
        .and_then(|p| serde_json::from_str(p.get()).ok());
    let param = |key: &str| -> Result<String, Failure> {
        params
            .as_ref()
            .and_then(|p| p.get(key))
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                Failure::invalid_request(
                    StatusCode::BAD_REQUEST,
                    format!("Missing or invalid parameter '{key}'"),
                )
            })
    };
    let body_text = envelope.body.filter(|b| b.get() != "null");
    let inner_body = || -> Result<Vec<u8>, Failure> {
        let Some(raw) = body_text else {
            return Err(Failure::invalid_request(
                StatusCode::BAD_REQUEST,
                "Missing request body for JSON handler",
            ));
        };
        // A body sent as a JSON string is the text of the request body.
        Ok(match serde_json::from_str::<String>(raw.get()) {
            Ok(text) => text.into_bytes(),
            Err(_) => raw.get().as_bytes().to_vec(),
        })
    };
    match method {
        "info" => Ok(Json(rt.info()).into_response()),
        "agent/run" => {
            let agent_id = param("agentId")?;
            rt.run(&agent_id, inner_body()?).await
        }
        "agent/connect" => {
            let agent_id = param("agentId")?;
            rt.connect(&agent_id, &inner_body()?).await
        }
        "agent/stop" => {
            let agent_id = param("agentId")?;
            let thread_id = param("threadId")?;
            let body: Option<Value> = match body_text {
                Some(raw) => Some(serde_json::from_str(raw.get()).map_err(|_| {
                    Failure::invalid_stop("Invalid stop request", "the body is not JSON")
                })?),
                None => None,
            };
            let scope = stop_scope(body.as_ref())?;
            rt.stop(&agent_id, &thread_id, scope).await
        }
        "transcribe" => Err(transcribe().await),
        other => Err(Failure::invalid_request(
            StatusCode::BAD_REQUEST,
            format!("Unsupported method '{other}'"),
        )),
    }
}
