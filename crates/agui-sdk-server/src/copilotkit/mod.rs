//! The CopilotKit runtime, in Rust: the REST contract CopilotKit's React components
//! (`<CopilotKitProvider runtimeUrl=…>`) speak, served straight from this process.
//!
//! [`CopilotRuntime::into_router`] gives an [`axum::Router`] to nest under any base
//! path (`/copilotkit` below):
//!
//! | method and path | answer |
//! |---|---|
//! | `GET /copilotkit/info` | `{"version","agents":{id:{"name","description","className"}},"audioFileTranscriptionEnabled":false,"mode":"sse","threadEndpoints":{"list":true,"inspect":true,"mutations":true,"realtimeMetadata":false},"suggestions":true,"a2uiEnabled":false,"openGenerativeUIEnabled":false,"telemetryDisabled":true}` (through the single route, the top-level `list`, `inspect` and `mutations` are `false`, and `singleRoute: {resourceOperations: true, threadEndpoints: {…all served…}}` says they are served as `resource/request`) |
//! | `POST /copilotkit/agent/{agentId}/run` | body `RunAgentInput`; the run's events (SSE) |
//! | `POST /copilotkit/agent/{agentId}/connect` | body `RunAgentInput` (its `threadId` is what counts); the thread's past runs, then its live run until it ends; ends at once when nothing runs |
//! | `POST /copilotkit/agent/{agentId}/stop/{threadId}` | `{"stopped":true,"interrupt":{"type":"RUN_ERROR","message":"Run stopped by user","code":"STOPPED"}}`, or `{"stopped":false,"message"}` when nothing runs |
//! | `POST /copilotkit/agent/{agentId}/suggest` | body `RunAgentInput`; the run's events (SSE), kept in no thread and no store; cancelled when the client goes away |
//! | `GET /copilotkit/threads?agentId=&limit=&cursor=&includeArchived=true` | `{"threads":[{"id","name","agentId","organizationId":"","createdById":"","archived","createdAt","updatedAt","lastRunAt"}],"nextCursor"}`: the owner's threads with an ended run, the one whose last run ended last first (a rename does not move one), archived ones only with `includeArchived=true`; ISO 8601 times; pages over the owner's 1,000 most recent threads |
//! | `GET /copilotkit/threads/{threadId}/messages` | `{"messages":[{"id","role","content"?, "toolCalls"?:[{"id","name","args"}], "toolCallId"?}]}`, as the thread's history builds them (empty for an unknown thread) |
//! | `GET /copilotkit/threads/{threadId}/events` | `{"events":[…]}`: the history, compacted, as `connect` replays it |
//! | `GET /copilotkit/threads/{threadId}/state` | `{"state"}`: the state the history leaves, or `null` |
//! | `POST /copilotkit/threads/clear` | `204`: the owner's threads forgotten (a running run goes on) |
//! | `PATCH /copilotkit/threads/{threadId}` | body `{agentId, name?, archived?}`: the thread after the change (rename; `archived:false` restores) |
//! | `POST /copilotkit/threads/{threadId}/archive` | body `{agentId}`: `{"threadId","archived":true}` |
//! | `DELETE /copilotkit/threads/{threadId}` | body `{agentId}`: `{"threadId","deleted":true}`; the thread and its history are forgotten |
//! | `POST /copilotkit/threads/subscribe` | `422`: CopilotKit's hosted mode's |
//! | `POST /copilotkit` | single-route mode: `{"method","params","body"}` with `method` one of `agent/run`, `agent/suggest`, `agent/connect`, `agent/stop`, `info`, `transcribe`, `resource/request` (`params: {path, httpMethod}`: a thread route above, answered as the REST route answers; other paths `404`) |
//! | `POST /copilotkit/transcribe` | `503`: no transcription service |
//!
//! Errors are JSON `{"error","message","code"}` (plus `details` for an invalid
//! body), with the status CopilotKit's own runtime gives: `404` for an unknown agent,
//! `400` for an invalid body or envelope, `415` for a body that is not JSON, `413`
//! for one too large, `409` when the thread already runs, `503` when the server is
//! shutting down or full.
//!
//! # Whose threads
//!
//! Threads belong to the request's [`Owner`](crate::runs::Owner), which the
//! application's authentication layer inserts into the request's extensions: another
//! owner can neither list, read, connect to, stop, rename, archive nor delete them (a
//! thread id under another owner is another thread: the mutations answer `404`). A request with no owner is the anonymous owner's, whose
//! threads every such request shares, as every thread is shared in CopilotKit's own
//! open-source runtime.
//!
//! ```
//! use agui_sdk_server::axum::{extract::Request, middleware::{from_fn, Next}};
//! use agui_sdk_server::copilotkit::CopilotRuntime;
//! use agui_sdk_server::runs::Owner;
//!
//! /// Who the request's credentials say it is (the application's own check).
//! async fn user_of(headers: &agui_sdk_server::axum::http::HeaderMap) -> Option<String> {
//!     let token = headers.get("authorization")?.to_str().ok()?;
//!     token.strip_prefix("Bearer user-").map(str::to_owned)
//! }
//!
//! let app: agui_sdk_server::axum::Router = CopilotRuntime::new()
//!     .into_router()
//!     .layer(from_fn(|mut req: Request, next: Next| async move {
//!         if let Some(user) = user_of(req.headers()).await {
//!             req.extensions_mut().insert(Owner(user));
//!         }
//!         next.run(req).await
//!     }));
//! # let _ = app;
//! ```
//!
//! # Runs and threads
//!
//! A run executes apart from the request that started it: its events go to the run
//! store (by default an [`InMemoryRunStore`], bounded; the `agui-sdk-redis` crate's store
//! shares threads between replicas), as a run of its thread, and the `/run` response
//! reads them from there, as every other run's viewers do ([`crate::runs`]). A thread
//! is an index over its runs: at most one runs at a time, each joins the thread's
//! history compacted when it ends, and a run whose replica dies is closed by another's
//! reaper with `RUN_ERROR` code `run_lost`. A client that goes away does not end the run; a
//! client that comes back (`/connect`, which CopilotKit calls on every mount) gets the
//! thread's past runs and then the live run from its first event. `stop` cancels the
//! agent and ends the run with the closing events of whatever was open, a result for
//! each tool call left unanswered (so the page does not execute it), and
//! `RUN_FINISHED` with outcome `cancelled` (for a client that declared no protocol
//! version, as CopilotKit's do, its stand-in: see the next section). When the agent's
//! `RUN_STARTED` carries no `input`, the request's is recorded there, less the messages
//! the thread already holds: that is how a restored thread shows the user's messages,
//! each once.
//!
//! # Older clients
//!
//! CopilotKit's clients are `@ag-ui/client` 0.0.48 (CopilotKit 1.54) and 0.0.59 (1.74),
//! older than protocol 1.0: they send no `protocolVersion`, and a schema error in an
//! event ends their stream. A
//! request that declares no version, or one below 1.0, gets events rewritten by
//! [`Downgrade`](agui_sdk_core::semantics::Downgrade) (its docs list every rewrite); its
//! history replay has no `RUN_ERROR` followed by more runs (that client accepts
//! nothing after one).
//!
//! ```
//! use agui_sdk_server::copilotkit::CopilotRuntime;
//! use agui_sdk_server::{agent_fn, AgentError};
//!
//! let echo = agent_fn(|input, _ctx, tx| async move {
//!     let id = format!("{}-reply", input.run_id);
//!     tx.text_message(&id, ["Hi!"], std::time::Duration::ZERO).await?;
//!     Ok::<(), AgentError>(())
//! });
//! let runtime = CopilotRuntime::new().agent("echo", echo).default_agent("echo");
//! let app = axum::Router::new().nest("/copilotkit", runtime.into_router());
//! # let _ = app;
//! ```

mod cors;
mod restore;
mod routes;
mod stream;

use std::sync::Arc;
use std::time::Duration;

pub use cors::{AllowedOrigins, Cors};

/// The tool CopilotKit's suggestion engine offers and names in
/// `forwardedProps.toolChoice` (`{"type": "function", "function": {"name":
/// "copilotkitSuggest"}}`, the shape of OpenAI's `tool_choice`): the agent is to answer
/// with one call of it, `{"suggestions": [{"title", "message"}]}`.
pub const SUGGEST_TOOL: &str = "copilotkitSuggest";

/// Whether a run asks for suggestions: its `forwardedProps.toolChoice` names
/// [`SUGGEST_TOOL`]. Such a run, through `/suggest` or `/run` (CopilotKit's single-route
/// mode sends it there, on a fresh thread), is kept in no thread.
pub fn is_suggestion_run(input: &agui_sdk_core::RunAgentInput) -> bool {
    let Some(props) = &input.forwarded_props else {
        return false;
    };
    // Most runs carry no such props: a look at the text before parsing.
    if !props.as_str().contains(SUGGEST_TOOL) {
        return false;
    }
    props
        .to_value()
        .pointer("/toolChoice/function/name")
        .and_then(|n| n.as_str())
        == Some(SUGGEST_TOOL)
}

use crate::agent::Agent;
use crate::config::{ServerConfig, VerifierFactory};
use crate::runs::{InMemoryRunStore, RunLimits, RunStore};
use crate::shutdown::Shutdown;

/// The CopilotKit runtime routes over a set of agents. See the [module docs](self).
pub struct CopilotRuntime {
    agents: Vec<(String, Arc<dyn Agent>)>,
    default_agent: Option<String>,
    store: Option<Arc<dyn RunStore>>,
    replica: String,
    lease: Duration,
    heartbeat: Duration,
    config: ServerConfig,
    cors: Cors,
    shutdown: Shutdown,
    verifier: Option<VerifierFactory>,
}

impl std::fmt::Debug for CopilotRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopilotRuntime")
            .field(
                "agents",
                &self.agents.iter().map(|a| &a.0).collect::<Vec<_>>(),
            )
            .field("default_agent", &self.default_agent)
            .field("config", &self.config)
            .field("cors", &self.cors)
            .finish_non_exhaustive()
    }
}

impl Default for CopilotRuntime {
    fn default() -> Self {
        CopilotRuntime::new()
    }
}

impl CopilotRuntime {
    /// No agents, an [`InMemoryRunStore`] with default [`RunLimits`], the default
    /// [`ServerConfig`], loopback CORS ([`Cors::default`]), a 10 s lease renewed every
    /// second, and a random replica name.
    pub fn new() -> Self {
        CopilotRuntime {
            agents: Vec::new(),
            default_agent: None,
            store: None,
            replica: format!(
                "replica-{}",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
            lease: Duration::from_secs(10),
            heartbeat: Duration::from_secs(1),
            config: ServerConfig::default(),
            cors: Cors::default(),
            shutdown: Shutdown::new(),
            verifier: None,
        }
    }

    /// Serves `agent` as agent id `id`. A later agent with the same id replaces an
    /// earlier one.
    ///
    /// # Panics
    ///
    /// If `id` is empty or holds a character other than ASCII letters, digits, `_`, `-`
    /// and `.` (a programming error, never caused by a request).
    pub fn agent(self, id: &str, agent: impl Agent) -> Self {
        self.shared_agent(id, Arc::new(agent))
    }

    /// Serves an agent shared with other routers as agent id `id` (see
    /// [`agent`](Self::agent)).
    pub fn shared_agent(mut self, id: &str, agent: Arc<dyn Agent>) -> Self {
        assert!(
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')),
            "agent id {id:?} must be non-empty ASCII letters, digits, '_', '-' or '.'"
        );
        self.agents.retain(|(n, _)| n != id);
        self.agents.push((id.to_owned(), agent));
        self
    }

    /// Also serves the agent `id` as `default`, the id CopilotKit uses when a page
    /// names none. An agent registered as `default` itself takes precedence.
    pub fn default_agent(mut self, id: &str) -> Self {
        self.default_agent = Some(id.to_owned());
        self
    }

    /// Keeps threads and their runs in `store` instead of a default
    /// [`InMemoryRunStore`] (it may be the store of the router's resumable runs too).
    pub fn store(mut self, store: Arc<dyn RunStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps threads and their runs in an [`InMemoryRunStore`] with these limits.
    pub fn run_limits(self, limits: RunLimits) -> Self {
        self.store(Arc::new(InMemoryRunStore::new(limits)))
    }

    /// Names this replica in a shared store (the owner of the runs it produces).
    pub fn replica(mut self, name: impl Into<String>) -> Self {
        self.replica = name.into();
        self
    }

    /// How long a run's lease lasts without a heartbeat, and how often its producer
    /// renews it (the longest a stop asked on another replica waits to be seen;
    /// default 10 s and 1 s). A run whose replica stops renewing is ended by another
    /// replica's reaper as lost.
    pub fn lease(mut self, lease: Duration, heartbeat: Duration) -> Self {
        self.lease = lease;
        self.heartbeat = heartbeat.max(Duration::from_millis(1));
        self
    }

    /// Sets the limits and behaviour shared with [`AgentRouter`](crate::AgentRouter):
    /// body limit and timeout, keep-alive interval, verification, shutdown grace, the
    /// limit of concurrent runs (`list_agents` does not apply).
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the CORS policy.
    ///
    /// # Panics
    ///
    /// If the policy is invalid (see [`Cors::validate`]).
    pub fn cors(mut self, cors: Cors) -> Self {
        if let Err(e) = cors.validate() {
            panic!("{e}");
        }
        self.cors = cors;
        self
    }

    /// Uses `shutdown` as the shutdown switch (share it with the server and other
    /// routers, so runs end together).
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Uses `factory` to make each run's verifier (when verification is on).
    pub fn verifier(
        mut self,
        factory: impl Fn() -> Box<dyn crate::EventVerifier> + Send + Sync + 'static,
    ) -> Self {
        self.verifier = Some(Arc::new(factory));
        self
    }

    /// The axum router, to nest under the base path the page's `runtimeUrl` names.
    pub fn into_router(self) -> axum::Router {
        routes::router(self)
    }
}
