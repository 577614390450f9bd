//! axum integration: mount one or many named agents.
//!
//! Routes made by [`AgentRouter::into_router`]:
//!
//! | method and path | answer |
//! |---|---|
//! | `POST /{name}` | runs the agent: body `RunAgentInput` (JSON), response the event stream, SSE or protobuf as the `Accept` header asks (SSE when there is none) |
//! | `GET /{name}` | the agent's capabilities (the 1.0 `AgentCapabilities` object) as JSON |
//! | `GET /agents` | `{"agents":[{"name","path","capabilities"}]}` for every mounted agent (unless turned off) |
//! | anything else | `404` (unknown agent or path) or `405`, with the JSON error body |
//!
//! Negotiation ([`Negotiation`](crate::Negotiation)): by default protobuf goes only to
//! a request that names `application/vnd.ag-ui.event+proto` (with a quality above zero,
//! and not below the one it gives `text/event-stream`); everything else, `*/*` included
//! (what `curl` and a browser's `fetch` send), gets SSE.
//! [`Negotiation::Reference`](crate::Negotiation::Reference) is the reference encoder's
//! exact rule, under which any wildcard selects protobuf.
//!
//! Refused requests get the JSON error body described in [`crate::error`]. The router
//! is a plain [`axum::Router`]: nest it under a prefix, add tower layers (CORS,
//! authentication, tracing) as usual.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, TransportCapabilities};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
#[cfg(feature = "resumable")]
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::admission::{Admission, Admitted};
use crate::agent::Agent;
use crate::config::Owner;
use crate::config::{ServerConfig, VerifierFactory};
use crate::error::ApiError;
#[cfg(feature = "resumable")]
use crate::launch::Stored;
use crate::launch::{Launcher, Route, Run, Target};
use crate::lifecycle::EventVerifier;
use crate::response::StreamSettings;
#[cfg(feature = "resumable")]
use crate::runs::http::{self as runs_http, Resumable};
use crate::shutdown::Shutdown;
use agui_sdk_agent::runs::{InMemoryLedger, InterruptLedger, Interrupts};

/// Builds an [`axum::Router`] serving named agents.
///
/// ```
/// use std::time::Duration;
/// use agui_sdk_server::{agent_fn, AgentError, AgentRouter};
///
/// let echo = agent_fn(|input, _ctx, tx| async move {
///     let id = format!("{}-reply", input.run_id);
///     tx.text_message(&id, ["Hi!"], Duration::ZERO).await?;
///     Ok(())
/// });
/// let app: axum::Router = AgentRouter::new().agent("echo", echo).into_router();
/// # let _ = app;
/// ```
pub struct AgentRouter {
    agents: Vec<(String, Arc<dyn Agent>)>,
    config: ServerConfig,
    shutdown: Shutdown,
    verifier: Option<VerifierFactory>,
    #[cfg(feature = "resumable")]
    resumable: Option<Resumable>,
    ledger: Option<Arc<dyn InterruptLedger>>,
}

impl std::fmt::Debug for AgentRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRouter")
            .field(
                "agents",
                &self.agents.iter().map(|a| &a.0).collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Default for AgentRouter {
    fn default() -> Self {
        AgentRouter::new()
    }
}

impl AgentRouter {
    /// A router with no agents and the default [`ServerConfig`].
    pub fn new() -> Self {
        AgentRouter {
            agents: Vec::new(),
            config: ServerConfig::default(),
            shutdown: Shutdown::new(),
            verifier: None,
            #[cfg(feature = "resumable")]
            resumable: None,
            ledger: None,
        }
    }

    /// Keeps the interrupts of this router's runs in `ledger` (default: the resumable
    /// runs' store when [`resumable`](Self::resumable) is set, else this process's
    /// memory). Replicas that serve the same threads share one. How they are kept is
    /// [`ServerConfig::interrupts`].
    pub fn interrupt_ledger(mut self, ledger: Arc<dyn InterruptLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Makes runs resumable (see [`crate::runs`]; feature `resumable`): a request with
    /// `AGUI-Resumable: 1` and an owner gets a run that outlives its connection, with
    /// sequence numbers on its events, and the routes `GET /{name}/runs/{runId}/events`,
    /// `GET /{name}/runs/{runId}` and `POST /{name}/runs/{runId}/cancel` serve it.
    #[cfg(feature = "resumable")]
    pub fn resumable(mut self, config: Resumable) -> Self {
        self.resumable = Some(config);
        self
    }

    /// Mounts `agent` at `/{name}`. A later agent with the same name replaces an
    /// earlier one.
    ///
    /// # Panics
    ///
    /// If `name` is empty, is `agents` while the listing is on, or holds a character
    /// other than ASCII letters, digits, `_`, `-` and `.` (a programming error, never
    /// caused by a request).
    pub fn agent(self, name: &str, agent: impl Agent) -> Self {
        self.shared_agent(name, Arc::new(agent))
    }

    /// Mounts an agent shared with other routers (such as a
    /// [`CopilotRuntime`](crate::copilotkit::CopilotRuntime)) at `/{name}`; see
    /// [`agent`](Self::agent).
    pub fn shared_agent(mut self, name: &str, agent: Arc<dyn Agent>) -> Self {
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')),
            "agent name {name:?} must be non-empty ASCII letters, digits, '_', '-' or '.'"
        );
        self.agents.retain(|(n, _)| n != name);
        self.agents.push((name.to_owned(), agent));
        self
    }

    /// Replaces the whole configuration.
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets [`ServerConfig::body_limit`].
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.config.body_limit = bytes;
        self
    }

    /// Sets [`ServerConfig::keep_alive`].
    pub fn keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.config.keep_alive = interval;
        self
    }

    /// Sets [`ServerConfig::verify`].
    pub fn verify(mut self, on: bool) -> Self {
        self.config.verify = on;
        self
    }

    /// Sets [`ServerConfig::shutdown_grace`].
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.config.shutdown_grace = grace;
        self
    }

    /// Sets [`ServerConfig::body_timeout`].
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.config.body_timeout = timeout;
        self
    }

    /// Sets [`ServerConfig::max_runs`].
    pub fn max_runs(mut self, limit: Option<usize>) -> Self {
        self.config.max_runs = limit;
        self
    }

    /// Uses `factory` to make the per-run verifier (when verification is on).
    pub fn verifier(
        mut self,
        factory: impl Fn() -> Box<dyn EventVerifier> + Send + Sync + 'static,
    ) -> Self {
        self.verifier = Some(Arc::new(factory));
        self
    }

    /// Uses `shutdown` as the shutdown switch (pass the same one to
    /// [`serve`](crate::serve)).
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// The shutdown switch in use.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Serves the agents on `listener` with [`serve`](crate::serve): until the router's
    /// shutdown switch is triggered (by SIGINT/SIGTERM, or by anyone holding
    /// [`shutdown_handle`](Self::shutdown_handle)), then lets in-flight runs finish
    /// within [`ServerConfig::shutdown_grace`]. The switch is the router's own, so the
    /// runs and the server stop together. For other bounds, or to leave signals to the
    /// application, pass [`into_router`](Self::into_router) and the handle to
    /// [`serve_with`](crate::serve_with).
    ///
    /// ```no_run
    /// # async fn main_() -> std::io::Result<()> {
    /// use agui_sdk_server::{agent_fn, AgentRouter};
    /// let hello = agent_fn(|input, _ctx, tx| async move {
    ///     let id = format!("{}-reply", input.run_id);
    ///     tx.text_message(&id, ["Hello"], std::time::Duration::ZERO).await?;
    ///     Ok(())
    /// });
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    /// AgentRouter::new().agent("hello", hello).serve(listener).await
    /// # }
    /// ```
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let shutdown = self.shutdown.clone();
        crate::shutdown::serve(listener, self.into_router(), shutdown).await
    }

    /// The axum router.
    ///
    /// # Panics
    ///
    /// If an agent is named `agents` while the listing is on (see
    /// [`ServerConfig::list_agents`]).
    pub fn into_router(self) -> Router {
        let list = self.config.list_agents;
        assert!(
            !(list && self.agents.iter().any(|(n, _)| n == "agents")),
            "an agent named 'agents' conflicts with the GET /agents listing"
        );
        #[cfg(feature = "resumable")]
        let store_ledger = self
            .resumable
            .as_ref()
            .map(|r| -> Arc<dyn InterruptLedger> { r.store.clone() });
        #[cfg(not(feature = "resumable"))]
        let store_ledger = None;
        let ledger = self
            .ledger
            .or(store_ledger)
            .unwrap_or_else(|| Arc::new(InMemoryLedger::default()));
        let interrupts = Interrupts::new(ledger, self.config.interrupts.clone());
        let shared = Arc::new(Shared {
            admission: Admission::new(self.config.clone(), self.shutdown.clone()),
            launcher: Launcher::new(
                self.config.clone(),
                self.shutdown.clone(),
                self.verifier,
                interrupts,
            ),
            agents: self.agents,
            config: self.config,
            #[cfg(feature = "resumable")]
            shutdown: self.shutdown,
            #[cfg(feature = "resumable")]
            resume: self.resumable.map(runs_http::ResumeState::new),
        });
        // The reaper starts with the router when a runtime is at hand (else with the
        // first resumable request): a replica reaps even before it serves anything.
        #[cfg(feature = "resumable")]
        if let (Some(rs), Ok(_)) = (&shared.resume, tokio::runtime::Handle::try_current()) {
            rs.ensure_reaper(shared.shutdown.token().clone());
        }
        let mut router = Router::new();
        if list {
            router = router.route("/agents", get(list_agents));
        }
        router = router.route("/{name}", get(capabilities).post(run));
        #[cfg(feature = "resumable")]
        {
            router = router
                .route("/{name}/runs/{run_id}", get(run_status))
                .route("/{name}/runs/{run_id}/events", get(run_events))
                .route("/{name}/runs/{run_id}/cancel", post(run_cancel));
        }
        router
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed)
            .with_state(shared)
    }
}

struct Shared {
    admission: Admission,
    launcher: Launcher,
    agents: Vec<(String, Arc<dyn Agent>)>,
    config: ServerConfig,
    #[cfg(feature = "resumable")]
    shutdown: Shutdown,
    #[cfg(feature = "resumable")]
    resume: Option<runs_http::ResumeState>,
}

impl Shared {
    fn find(&self, name: &str) -> Option<(&str, &Arc<dyn Agent>)> {
        self.agents
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, a)| (n.as_str(), a))
    }

    fn unknown(&self, name: &str) -> ApiError {
        let known: Vec<&str> = self.agents.iter().map(|(n, _)| n.as_str()).collect();
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_agent",
            format!("no agent named '{name}' (known: {})", known.join(", ")),
        )
    }

    fn capabilities_of(&self, name: &str, agent: &dyn Agent) -> AgentCapabilities {
        // A panicking `capabilities` is the agent's bug: serve what the router knows.
        let mut caps = std::panic::catch_unwind(AssertUnwindSafe(|| agent.capabilities()))
            .unwrap_or_else(|_| {
                tracing::error!(agent = %name, "Agent::capabilities panicked");
                AgentCapabilities::default()
            });
        let identity = caps.identity.get_or_insert_with(Default::default);
        if identity.name.is_none() {
            identity.name = Some(name.to_owned());
        }
        if caps.transport.is_none() {
            caps.transport = Some(TransportCapabilities {
                streaming: Some(true),
                // Every route serves the protobuf encoding as well as SSE.
                http_binary: Some(true),
                ..Default::default()
            });
        }
        // Resumable runs are the router's to offer: say so unless the agent said.
        #[cfg(feature = "resumable")]
        if self.resume.is_some() {
            if let Some(t) = caps.transport.as_mut() {
                t.resumable.get_or_insert(true);
            }
        }
        caps
    }
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such path")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "use POST to run an agent, GET to read its capabilities",
    )
}

/// `GET /agents`. Each agent's `path` is the one a client calls: under a
/// [`Router::nest`](axum::Router::nest) prefix, the prefix is part of it.
async fn list_agents(
    State(s): State<Arc<Shared>>,
    axum::extract::OriginalUri(original): axum::extract::OriginalUri,
    uri: axum::http::Uri,
) -> Json<Value> {
    let prefix = mount_prefix(original.path(), uri.path());
    let agents: Vec<Value> = s
        .agents
        .iter()
        .map(|(name, agent)| {
            json!({
                "name": name,
                "path": format!("{prefix}/{name}"),
                "capabilities": s.capabilities_of(name, agent.as_ref()),
            })
        })
        .collect();
    Json(json!({ "agents": agents }))
}

/// The prefix the router is nested under: what the request's original path has before
/// the path the router saw (`/agents/agents` seen as `/agents` gives `/agents`).
fn mount_prefix<'a>(original: &'a str, seen: &str) -> &'a str {
    original
        .strip_suffix(seen)
        .map_or("", |p| p.trim_end_matches('/'))
}

async fn capabilities(
    State(s): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Result<Json<AgentCapabilities>, ApiError> {
    let (name, agent) = s.find(&name).ok_or_else(|| s.unknown(&name))?;
    Ok(Json(s.capabilities_of(name, agent.as_ref())))
}

async fn run(
    State(s): State<Arc<Shared>>,
    Path(name): Path<String>,
    req: axum::extract::Request,
) -> Response {
    let (parts, body) = req.into_parts();
    match start_run(&s, &name, &parts, body).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(agent = %agui_sdk_core::Escaped(&name), code = e.code, message = %agui_sdk_core::Escaped(&e.message), "request refused");
            e.into_response()
        }
    }
}

/// Reads the request, admits it and chooses its target: a resumable run when the
/// request asks for one and may have it, else a plain run.
async fn start_run(
    s: &Arc<Shared>,
    name: &str,
    parts: &axum::http::request::Parts,
    body: Body,
) -> Result<Response, ApiError> {
    let headers = &parts.headers;
    let (name, agent) = s.find(name).ok_or_else(|| s.unknown(name))?;
    #[cfg_attr(not(feature = "resumable"), allow(unused_variables))]
    let Admitted {
        body: bytes,
        input,
        permit,
    } = s.admission.admit(headers, body).await?;

    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let encoding = s.config.negotiation.pick(accept);
    let owner = parts.extensions.get::<Owner>().map_or("", |o| o.0.as_str());
    let run = Run {
        route: Route::Agent,
        name,
        agent,
        owner,
        input,
        permit,
    };
    let plain = Target::Plain(StreamSettings {
        encoding,
        keep_alive: s.config.keep_alive,
        // The agent routes write every event as it is.
        downgrade: agui_sdk_core::semantics::Downgrade::none(),
    });

    // A resumable run: produced on a task of its own, served from the run store.
    #[cfg(feature = "resumable")]
    if let Some(rs) = s.resume.as_ref() {
        if runs_http::opted_in(headers, rs.config.mode) {
            let not_resumable = match runs_http::owner_of(headers, parts.extensions.get::<Owner>())?
            {
                None => "no-owner",
                Some(_) if !runs_http::resumable_run_id(&run.input.run_id) => "run-id",
                Some(owner) => {
                    rs.ensure_reaper(s.shutdown.token().clone());
                    // Boxed: this rare path's future would otherwise size every run's.
                    let started = Box::pin(runs_http::start(runs_http::Start {
                        state: rs,
                        agent_name: name,
                        owner,
                        body: &bytes,
                        headers,
                        input: &run.input,
                        encoding,
                        keep_alive: s.config.keep_alive,
                    }))
                    .await?;
                    return Ok(match started {
                        runs_http::Started::Attached(res) => res,
                        runs_http::Started::New { key, fence, viewer } => {
                            let target = Target::Stored(Stored {
                                store: rs.config.store.clone(),
                                registry: rs.registry.clone(),
                                key,
                                fence,
                                producer: rs.producer_settings(),
                                viewer,
                                seq_headers: true,
                                thread: None,
                            });
                            s.launcher.launch(run, target)
                        }
                    });
                }
            };
            let res = s.launcher.launch(run, plain);
            return Ok(runs_http::mark_not_resumable(res, not_resumable));
        }
    }
    Ok(s.launcher.launch(run, plain))
}

#[cfg(feature = "resumable")]
/// The owner of a request, for the re-attach routes.
/// A malformed `AGUI-Resume-Token` names no owner here: no run can have it, so the
/// routes answer `unknown_run`, as for any run of another owner.
fn request_owner(parts: &axum::http::request::Parts) -> Option<String> {
    runs_http::owner_of(&parts.headers, parts.extensions.get::<Owner>())
        .ok()
        .flatten()
}

#[cfg(feature = "resumable")]
fn resume_state<'a>(s: &'a Shared, name: &str) -> Result<&'a runs_http::ResumeState, ApiError> {
    s.find(name).ok_or_else(|| s.unknown(name))?;
    let rs = s.resume.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_resumable",
            "this server keeps no resumable runs",
        )
    })?;
    // A replica that only serves re-attaches reaps too.
    rs.ensure_reaper(s.shutdown.token().clone());
    Ok(rs)
}

#[cfg(feature = "resumable")]
#[derive(Debug, serde::Deserialize)]
struct EventsQuery {
    after: Option<String>,
}

#[cfg(feature = "resumable")]
async fn run_events(
    State(s): State<Arc<Shared>>,
    Path((name, run_id)): Path<(String, String)>,
    axum::extract::Query(q): axum::extract::Query<EventsQuery>,
    req: axum::extract::Request,
) -> Result<Response, ApiError> {
    let rs = resume_state(&s, &name)?;
    let (parts, _) = req.into_parts();
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    runs_http::events(
        rs,
        &name,
        &run_id,
        request_owner(&parts),
        &parts.headers,
        q.after.as_deref(),
        s.config.negotiation.pick(accept),
        s.config.keep_alive,
    )
    .await
}

#[cfg(feature = "resumable")]
async fn run_status(
    State(s): State<Arc<Shared>>,
    Path((name, run_id)): Path<(String, String)>,
    req: axum::extract::Request,
) -> Result<Response, ApiError> {
    let rs = resume_state(&s, &name)?;
    let (parts, _) = req.into_parts();
    runs_http::status(rs, &name, &run_id, request_owner(&parts)).await
}

#[cfg(feature = "resumable")]
async fn run_cancel(
    State(s): State<Arc<Shared>>,
    Path((name, run_id)): Path<(String, String)>,
    req: axum::extract::Request,
) -> Result<Response, ApiError> {
    let rs = resume_state(&s, &name)?;
    let (parts, _) = req.into_parts();
    runs_http::cancel(rs, &name, &run_id, request_owner(&parts)).await
}
