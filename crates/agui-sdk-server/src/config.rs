//! The server's configuration: its limits and behaviour ([`ServerConfig`]), how it
//! picks an encoding ([`Negotiation`]) and verifies what agents emit
//! ([`VerifierFactory`]), and whose a request is ([`Owner`]). Every route that serves agents reads it; it imports nothing
//! of theirs.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::InterruptPolicy;
use agui_sdk_core::encoding::negotiate;

use crate::lifecycle::EventVerifier;

/// Makes one verifier per run.
pub type VerifierFactory = Arc<dyn Fn() -> Box<dyn EventVerifier> + Send + Sync>;

/// Server limits and behaviour. Every field has a documented default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Largest accepted request body in bytes (default 4 MiB); larger bodies get `413`.
    pub body_limit: usize,
    /// Interval of SSE keep-alive comments (`: keep-alive`) when no event was written
    /// for that long (default 15 s; `None` turns them off). Protobuf streams have no
    /// comment frame and get none.
    pub keep_alive: Option<Duration>,
    /// Whether the events agents emit are verified (default: on in debug builds, off in
    /// release builds). A violation ends the run with `RUN_ERROR`.
    pub verify: bool,
    /// How long in-flight runs may continue after shutdown starts (default 10 s).
    pub shutdown_grace: Duration,
    /// Whether `GET /agents` is mounted (default true).
    pub list_agents: bool,
    /// Longest time to receive the request body (default 30 s); a slower client gets
    /// `408` with code `body_timeout`.
    pub body_timeout: Duration,
    /// Most runs streaming at once (default `None`: no limit). A run beyond the limit
    /// is refused with `503` and code `too_many_runs`.
    pub max_runs: Option<usize>,
    /// How the response's encoding is chosen from `Accept` (default
    /// [`Negotiation::Explicit`]).
    pub negotiation: Negotiation,
    /// The memory runs may take together, in bytes (default 1 GiB; `None`: no limit).
    /// Each run is counted at what its request costs once parsed (estimated from the
    /// body's JSON before it is parsed), plus [`RUN_COST_BASE`] for the stream, from
    /// when its body is read until its stream ends; a run that does not fit is refused
    /// with `503` and code `memory_budget`. `docs/memory-budget.md` says how the
    /// estimate and the base were sized.
    pub memory_budget: Option<usize>,
    /// How the runtime keeps interrupts (claims, how long open ones are kept, bounds;
    /// see [`InterruptPolicy`]). Where they are kept is the router's run store, or this
    /// process's memory without one.
    pub interrupts: InterruptPolicy,
}

/// What every run is counted in [`ServerConfig::memory_budget`] besides its parsed
/// request: the stream's buffers and tasks, and room for the agent's own state.
pub const RUN_COST_BASE: usize = 64 * 1024;

/// How a server picks SSE or protobuf from a request's `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Negotiation {
    /// Protobuf only for a request that names its media type
    /// ([`negotiate_explicit`](agui_sdk_core::encoding::negotiate_explicit)): `*/*` (curl, a
    /// browser's `fetch`) gets SSE. The default.
    #[default]
    Explicit,
    /// The reference encoder's exact rule
    /// ([`negotiate`]): any wildcard selects protobuf.
    Reference,
}

impl Negotiation {
    /// The encoding for `accept`.
    pub fn pick(self, accept: Option<&str>) -> agui_sdk_core::encoding::Encoding {
        match self {
            Negotiation::Explicit => agui_sdk_core::encoding::negotiate_explicit(accept),
            Negotiation::Reference => negotiate(accept),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            body_limit: 4 << 20,
            keep_alive: Some(Duration::from_secs(15)),
            verify: cfg!(debug_assertions),
            shutdown_grace: Duration::from_secs(10),
            list_agents: true,
            max_runs: None,
            body_timeout: Duration::from_secs(30),
            negotiation: Negotiation::default(),
            memory_budget: Some(1 << 30),
            interrupts: InterruptPolicy::default(),
        }
    }
}

/// The principal a request is made by, as the application's authentication layer
/// established it. Insert it into the request's extensions (for example in a tower
/// middleware) and the runs and threads of the request are its own:
///
/// * a resumable run is bound to it (without it, the client's `AGUI-Resume-Token`
///   header names the owner; without either, a run is not resumable);
/// * the CopilotKit runtime's threads are scoped to it: another owner can neither
///   list, read, connect to nor stop them (without it, a request is the anonymous
///   owner's, whose threads every request without an owner shares, as CopilotKit's
///   own runtime shares all threads);
/// * the interrupts a run raises are its owner's, on every route: a resume from
///   another owner finds none of them (without it, every request is the anonymous
///   owner's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner(pub String);
