//! The CopilotKit runtime, in Rust: the REST contract CopilotKit's React components
//! (`<CopilotKitProvider runtimeUrl=…>`) speak, served straight from this process.
//!
//! [`CopilotRuntime::into_router`] gives an [`axum::Router`] to nest under any base
//! path (`/copilotkit` below):
//!
//! | method and path | answer |
//! |---|---|
//! | `GET /copilotkit/info` | `{"version","agents":{id:{"name","description","className"}},"audioFileTranscriptionEnabled":false,"mode":"sse","a2uiEnabled":false}` |
//! | `POST /copilotkit/agent/{agentId}/run` | body `RunAgentInput`; the run's events (SSE) |
//! | `POST /copilotkit/agent/{agentId}/connect` | body `RunAgentInput` (its `threadId` is what counts); the thread's past runs, then its live run until it ends; ends at once when nothing runs |
//! | `POST /copilotkit/agent/{agentId}/stop/{threadId}` | `{"stopped":true,"interrupt":{"type":"RUN_ERROR","message":"Run stopped by user","code":"STOPPED"}}`, or `{"stopped":false,"message"}` when nothing runs |
//! | `POST /copilotkit` | single-route mode: `{"method","params","body"}` with `method` one of `agent/run`, `agent/connect`, `agent/stop`, `info`, `transcribe` |
//! | `POST /copilotkit/transcribe` | `503`: no transcription service |
//! | `/copilotkit/threads…` | `422`: thread listing needs CopilotKit's hosted mode |
//!
//! Errors are JSON `{"error","message","code"}` (plus `details` for an invalid
//! body), with the status CopilotKit's own runtime gives: `404` for an unknown agent,
//! `400` for an invalid body or envelope, `415` for a body that is not JSON, `413`
//! for one too large, `409` when the thread already runs, `503` when the server is
//! shutting down or full.
//!
//! # Runs and threads
//!
//! A run executes apart from the request that started it: its events go to the
//! [`ThreadStore`] (by default an [`InMemoryThreadStore`], bounded), and the `/run`
//! response reads them from there. A client that goes away does not end the run; a
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
//! [`Downgrade`](agui_core::semantics::Downgrade) (its docs list every rewrite); its
//! history replay has no `RUN_ERROR` followed by more runs (that client accepts
//! nothing after one).
//!
//! ```
//! use agui_server::copilotkit::CopilotRuntime;
//! use agui_server::{agent_fn, AgentError};
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
mod routes;
mod runner;
mod stream;

use std::sync::Arc;

pub use cors::{AllowedOrigins, Cors};

use crate::agent::Agent;
use crate::router::{ServerConfig, VerifierFactory};
use crate::shutdown::Shutdown;
use crate::threads::{InMemoryThreadStore, ThreadLimits, ThreadStore};

/// The CopilotKit runtime routes over a set of agents. See the [module docs](self).
pub struct CopilotRuntime {
    agents: Vec<(String, Arc<dyn Agent>)>,
    default_agent: Option<String>,
    store: Option<Arc<dyn ThreadStore>>,
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
    /// No agents, an [`InMemoryThreadStore`] with default [`ThreadLimits`], the default
    /// [`ServerConfig`] and loopback CORS ([`Cors::default`]).
    pub fn new() -> Self {
        CopilotRuntime {
            agents: Vec::new(),
            default_agent: None,
            store: None,
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

    /// Keeps threads in `store` instead of a default [`InMemoryThreadStore`].
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps threads in an [`InMemoryThreadStore`] with these limits.
    pub fn thread_limits(self, limits: ThreadLimits) -> Self {
        self.store(Arc::new(InMemoryThreadStore::new(limits)))
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
