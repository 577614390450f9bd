//! The runtime's HTTP handlers, multi-route and single-route.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agui_sdk_core::semantics::Downgrade;
use agui_sdk_core::RunAgentInput;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

mod failure;
mod threads;

use super::stream;
use super::CopilotRuntime;
use crate::admission::{is_json_media_type, Admission, Admitted};
use crate::agent::Agent;
use crate::budget::RunPermit;
use crate::engine::STOP_MESSAGE;
use crate::error::ApiError;
use crate::launch::{Launcher, Route, Run, Stored, Target};
use crate::runs::producer::{DetachPolicy, ProducerSettings, Registry, ViewerGuard};
use crate::runs::viewer::ViewerSettings;
use crate::runs::{
    CancelOutcome, Created, Fence, InMemoryRunStore, NewRun, Owner, RunKey, RunLimits, RunStore,
    RunStoreError, ThreadKey, ThreadRecord,
};
use axum::Extension;
use failure::Failure;
use threads::owner_of;

/// The state the handlers share.
struct Runtime {
    agents: Vec<(String, Arc<dyn Agent>)>,
    default_agent: Option<String>,
    store: Arc<dyn RunStore>,
    admission: Admission,
    launcher: Launcher,
    registry: Arc<Registry>,
    replica: String,
    lease: std::time::Duration,
    settings: ProducerSettings,
}

pub(super) fn router(rt: CopilotRuntime) -> Router {
    let cors = rt.cors.layer();
    let store = rt
        .store
        .unwrap_or_else(|| Arc::new(InMemoryRunStore::new(RunLimits::default())));
    // This replica's reaper: ends the runs of replicas that died (a shared store).
    if tokio::runtime::Handle::try_current().is_ok() {
        let (store, replica, stop) = (
            store.clone(),
            rt.replica.clone(),
            rt.shutdown.token().clone(),
        );
        let every = rt.lease.max(std::time::Duration::from_millis(10)) / 2;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = tick.tick() => crate::runs::reap(store.as_ref(), &replica).await,
                }
            }
        });
    }
    let interrupts =
        agui_sdk_agent::runs::Interrupts::new(store.clone(), rt.config.interrupts.clone());
    let shared = Arc::new(Runtime {
        agents: rt.agents,
        default_agent: rt.default_agent,
        store,
        admission: Admission::new(rt.config.clone(), rt.shutdown.clone()),
        launcher: Launcher::new(rt.config.clone(), rt.shutdown, rt.verifier, interrupts),
        registry: Arc::new(Registry::default()),
        replica: rt.replica,
        lease: rt.lease,
        settings: ProducerSettings {
            // A page that goes away does not end its run: it connects again.
            detach: DetachPolicy::default(),
            max_run_duration: std::time::Duration::from_secs(3600),
            heartbeat: rt.heartbeat,
        },
    });
    let router = Router::new()
        .route("/", post(single_route))
        .route("/info", get(info))
        .route("/agent/{agent_id}/run", post(run))
        .route("/agent/{agent_id}/connect", post(connect))
        .route("/agent/{agent_id}/stop/{thread_id}", post(stop))
        .route("/agent/{agent_id}/suggest", post(suggest))
        .route("/transcribe", post(transcribe))
        .route("/threads", get(threads::list))
        .route("/threads/clear", post(threads::clear))
        .route("/threads/subscribe", post(threads::hosted_only))
        .route("/threads/{thread_id}/messages", get(threads::messages))
        .route("/threads/{thread_id}/events", get(threads::events))
        .route("/threads/{thread_id}/state", get(threads::state))
        .route("/threads/{thread_id}/archive", post(threads::archive))
        .route(
            "/threads/{thread_id}",
            axum::routing::patch(threads::patch).delete(threads::delete),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(shared);
    match cors {
        Some(layer) => router.layer(layer),
        None => router,
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
        agui_sdk_core::wire::from_json_slice(bytes)
            .map_err(|e| Failure::from(ApiError::from_json_error(&e)))
    }

    /// The failure a store error is at the edge of a route (`what`: the route's
    /// CopilotKit error string).
    fn store_failure(what: &'static str, e: &RunStoreError) -> Failure {
        match e {
            RunStoreError::Full(_) => Failure::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service unavailable",
                "threads_full",
                e.to_string(),
            ),
            other => {
                tracing::error!(error = %other, "run store failed");
                Failure::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    what,
                    "store_error",
                    "the run store failed",
                )
            }
        }
    }

    async fn thread(
        &self,
        owner: &str,
        thread_id: &str,
        what: &'static str,
    ) -> Result<ThreadRecord, Failure> {
        Ok(self
            .store
            .thread(&ThreadKey::derive(owner, thread_id))
            .await
            .map_err(|e| Self::store_failure(what, &e))?
            .unwrap_or_default())
    }

    fn viewer_settings(&self, downgrade: Downgrade) -> ViewerSettings {
        ViewerSettings {
            encoding: agui_sdk_core::encoding::Encoding::Sse,
            keep_alive: self.admission.config().keep_alive,
            retry_ms: None,
            downgrade,
        }
    }

    async fn run(&self, owner: &str, agent_id: &str, bytes: Vec<u8>) -> Result<Response, Failure> {
        let (name, agent) = self
            .find(agent_id)
            .ok_or_else(|| Failure::unknown_agent(agent_id))?;
        let slot = self.admission.open()?;
        let body_hash = crate::runs::sha256_hex(&bytes);
        let Admitted {
            mut input, permit, ..
        } = self.admission.admit_body(slot, bytes)?;
        if super::is_suggestion_run(&input) {
            // CopilotKit's suggestion engine runs on a fresh thread through `/run` when it
            // does not use `/suggest` (single-route mode): such a run is not the user's
            // conversation, and is kept nowhere.
            tracing::debug!(agent = %name, "a suggestion run through /run is kept in no thread");
            return Ok(self.unkept(name, agent, owner, input, permit));
        }
        let thread_id = input.thread_id.clone();
        let run_id = input.run_id.clone();
        // A run id is the client's, unique within its thread; but a page answering
        // interrupts resumes with the paused run's id (CopilotKit's `useInterrupt`), so
        // each resume is a run of its own, and the ledger decides whether it proceeds.
        let attempt = match input.resume.as_deref() {
            Some([_, ..]) => format!("\u{1f}resume\u{1f}{:032x}", Fence::random().0),
            _ => String::new(),
        };
        let key = RunKey::derive(owner, name, &format!("{thread_id}\u{1f}{run_id}{attempt}"));
        let created = self
            .store
            .create(NewRun {
                key: key.clone(),
                run_id: run_id.clone(),
                thread_id: thread_id.clone(),
                agent: name.to_owned(),
                body_hash,
                replica: self.replica.clone(),
                lease: self.lease,
                thread: Some(ThreadKey::derive(owner, &thread_id)),
            })
            .await
            .map_err(|e| match e {
                RunStoreError::Busy { run_id: live } => {
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
                other => Self::store_failure("Failed to run agent", &other),
            })?;
        let downgrade = Downgrade::for_declared(input.protocol_version.as_deref());
        let fence = match created {
            Created::New(fence) => fence,
            Created::Existing(record) if record.status.is_terminal() => {
                return Err(Failure::new(
                    StatusCode::CONFLICT,
                    "Run already exists",
                    "run_exists",
                    format!("run '{run_id}' of thread '{thread_id}' has ended: start a run with a new runId"),
                ));
            }
            Created::Existing(record) => {
                // The running run posted again: its response follows it from its start.
                tracing::info!(run_id = %agui_sdk_core::Escaped(&run_id), "a run posted again follows the run");
                let guard = ViewerGuard::new(self.registry.get(&key));
                let settings = self.viewer_settings(downgrade);
                return Ok(stream::run_response(
                    self.store.clone(),
                    key,
                    record.run_id,
                    settings,
                    guard,
                ));
            }
        };
        // The messages the thread's history holds already (it cannot change while this
        // run is its live one).
        let known_message_ids = match self.thread(owner, &thread_id, "Failed to run agent").await {
            Ok(t) => {
                // What the client dropped of the encrypted reasoning it was sent.
                if super::restore::wants_restore(&input) {
                    let n = super::restore::restore(&mut input, &t.history);
                    if n > 0 {
                        tracing::debug!(
                            restored = n,
                            "encrypted values restored from the thread's history"
                        );
                    }
                }
                t.known_message_ids
            }
            Err(_) => {
                tracing::warn!(
                    "the thread's history is unreadable: its messages may be recorded twice"
                );
                Default::default()
            }
        };
        let target = Target::Stored(Stored {
            store: self.store.clone(),
            registry: self.registry.clone(),
            key,
            fence,
            producer: self.settings.clone(),
            viewer: self.viewer_settings(downgrade),
            seq_headers: false,
            thread: Some(known_message_ids),
        });
        Ok(self
            .launcher
            .launch(Self::admitted(name, agent, owner, input, permit), target))
    }

    /// `/agent/{id}/suggest`: a run that is not kept (no thread, no store), streamed
    /// to the response as a plain run is; cancelled when the client goes away.
    fn suggest(&self, agent_id: &str, bytes: Vec<u8>) -> Result<Response, Failure> {
        let (name, agent) = self
            .find(agent_id)
            .ok_or_else(|| Failure::unknown_agent(agent_id))?;
        let slot = self.admission.open()?;
        let Admitted { input, permit, .. } = self.admission.admit_body(slot, bytes)?;
        // A suggestion is asked on a thread of its own: no owner's interrupts.
        Ok(self.unkept(name, agent, "", input, permit))
    }

    /// A run streamed to the response as a plain run is, kept in no thread and no
    /// store; cancelled when the client goes away.
    fn unkept(
        &self,
        name: &str,
        agent: &Arc<dyn Agent>,
        owner: &str,
        input: RunAgentInput,
        permit: RunPermit,
    ) -> Response {
        let target = Target::Plain(crate::response::StreamSettings {
            encoding: agui_sdk_core::encoding::Encoding::Sse,
            keep_alive: self.admission.config().keep_alive,
            downgrade: Downgrade::for_declared(input.protocol_version.as_deref()),
        });
        self.launcher
            .launch(Self::admitted(name, agent, owner, input, permit), target)
    }

    /// An admitted run of the agent `name`, launched from these routes.
    fn admitted<'a>(
        name: &'a str,
        agent: &'a Arc<dyn Agent>,
        owner: &'a str,
        input: RunAgentInput,
        permit: RunPermit,
    ) -> Run<'a> {
        Run {
            route: Route::CopilotKit,
            name,
            agent,
            owner,
            input,
            permit,
        }
    }

    async fn connect(
        &self,
        owner: &str,
        agent_id: &str,
        bytes: &[u8],
    ) -> Result<Response, Failure> {
        self.find(agent_id)
            .ok_or_else(|| Failure::unknown_agent(agent_id))?;
        // The parsed input is held across the store's await: it is admitted by the
        // memory budget first, as a run's is.
        let _held = self.admission.hold_parsed(bytes)?;
        let input = Self::parse_input(bytes)?;
        let downgrade = Downgrade::for_declared(input.protocol_version.as_deref());
        let thread = self
            .thread(owner, &input.thread_id, "Failed to connect")
            .await?;
        tracing::debug!(
            thread_id = %agui_sdk_core::Escaped(&input.thread_id),
            runs = thread.history.len(),
            live = thread.live.is_some(),
            "connect"
        );
        // CopilotKit's `lastSeenEventId`: where a client that saw the live run stopped.
        let last_seen: Option<String> = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|v| v.get("lastSeenEventId")?.as_str().map(str::to_owned));
        // A history the store copied for this read (Redis; the in-memory store's is
        // shared) is counted in the memory budget until it is written.
        let held = self.admission.hold_bytes(
            threads::unshared_bytes(&thread.history),
            "a thread's history",
        )?;
        let guard = ViewerGuard::new(thread.live.as_ref().and_then(|l| self.registry.get(&l.key)));
        Ok(stream::connect_response(
            self.store.clone(),
            thread,
            last_seen.as_deref(),
            self.viewer_settings(downgrade),
            guard,
            held,
        ))
    }

    /// Stops the thread's run; with `scope`, only when that is the thread's active run.
    async fn stop(
        &self,
        owner: &str,
        agent_id: &str,
        thread_id: &str,
        scope: Option<String>,
    ) -> Result<Response, Failure> {
        self.find(agent_id)
            .ok_or_else(|| Failure::unknown_agent(agent_id))?;
        let no_run = || {
            Json(json!({
                "stopped": false,
                "message": format!("No active run for thread '{thread_id}'."),
            }))
            .into_response()
        };
        let thread = self
            .thread(owner, thread_id, "Failed to stop agent")
            .await?;
        let Some(live) = thread.live else {
            return Ok(no_run());
        };
        if let Some(run) = scope.as_deref().filter(|r| *r != live.run_id) {
            return Ok(Json(json!({
                "stopped": false,
                "message": format!("Run '{run}' is not the active run for thread '{thread_id}'."),
            }))
            .into_response());
        }
        let stopped = match self.registry.get(&live.key) {
            // Produced here: cancelled at once.
            Some(local) if local.cancel.is_cancelled() => false,
            Some(local) => {
                local.cancel.cancel();
                true
            }
            // Produced by another replica: it sees the request at its next heartbeat.
            None => match self.store.request_cancel(&live.key).await {
                Ok(CancelOutcome::Requested) => true,
                Ok(_) => false,
                Err(e) => {
                    tracing::warn!(thread_id = %agui_sdk_core::Escaped(thread_id), error = %e, "could not ask the store to stop the run");
                    false
                }
            },
        };
        if !stopped {
            return Ok(no_run());
        }
        tracing::info!(thread_id = %agui_sdk_core::Escaped(thread_id), run_id = %agui_sdk_core::Escaped(&live.run_id), "stop requested");
        Ok(Json(json!({
            "stopped": true,
            "interrupt": {
                "type": "RUN_ERROR",
                "message": STOP_MESSAGE,
                "code": "STOPPED",
            },
        }))
        .into_response())
    }

    /// `/info` (`single`: as the single-route `info` method answers it, where the
    /// thread routes are not served).
    fn info(&self, single: bool) -> Value {
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
        let mut info = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "agents": agents,
            "audioFileTranscriptionEnabled": false,
            "mode": "sse",
            // Absent would mean "all supported" to the client: say which exist (through
            // the single route, as resource requests).
            "threadEndpoints": {
                "list": !single,
                "inspect": !single,
                "mutations": !single,
                "realtimeMetadata": false,
            },
            "suggestions": true,
            "a2uiEnabled": false,
            "openGenerativeUIEnabled": false,
            "telemetryDisabled": true,
        });
        if single {
            // The single route serves the thread routes as resource requests.
            info["singleRoute"] = json!({
                "resourceOperations": true,
                "threadEndpoints": {
                    "list": true, "inspect": true, "mutations": true, "realtimeMetadata": false,
                },
            });
        }
        info
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
    Json(rt.info(false))
}

async fn run(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let bytes = rt.body(&headers, body).await?;
    rt.run(owner_of(&owner), &agent_id, bytes).await
}

async fn suggest(
    State(rt): State<Arc<Runtime>>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let bytes = rt.body(&headers, body).await?;
    rt.suggest(&agent_id, bytes)
}

async fn connect(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let bytes = rt.body(&headers, body).await?;
    rt.connect(owner_of(&owner), &agent_id, &bytes).await
}

async fn stop(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
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
    rt.stop(owner_of(&owner), &agent_id, &thread_id, scope)
        .await
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
    owner_ext: Option<Extension<Owner>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let owner = owner_of(&owner_ext).to_owned();
    let owner = owner.as_str();
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
        "info" => Ok(Json(rt.info(true)).into_response()),
        "agent/run" => {
            let agent_id = param("agentId")?;
            rt.run(owner, &agent_id, inner_body()?).await
        }
        "agent/suggest" => {
            let agent_id = param("agentId")?;
            rt.suggest(&agent_id, inner_body()?)
        }
        "agent/connect" => {
            let agent_id = param("agentId")?;
            rt.connect(owner, &agent_id, &inner_body()?).await
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
            rt.stop(owner, &agent_id, &thread_id, scope).await
        }
        "transcribe" => Err(transcribe().await),
        "resource/request" => {
            let (path, method) = (param("path")?, param("httpMethod")?.to_ascii_uppercase());
            let inner = body_text.is_some().then(inner_body).transpose()?;
            threads::resource(rt.clone(), owner_ext, &path, &method, inner).await
        }
        other => Err(Failure::invalid_request(
            StatusCode::BAD_REQUEST,
            format!("Unsupported method '{other}'"),
        )),
    }
}
