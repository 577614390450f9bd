//! Put an AG-UI agent behind an HTTP endpoint, with [axum].
//!
//! The smallest server (`examples/hello_agent.rs`):
//!
//! ```no_run
#![doc = include_str!("../examples/hello_agent.rs")]
//! ```
//!
//! * [`Agent`] (a stream of events) and [`agent_fn`] (an async function with an
//!   [`Emitter`]) define agents; [`RunContext`] carries the cancellation signal.
//! * The runtime guarantees the run lifecycle ([`LifecycleGuard`]): `RUN_STARTED` first, one
//!   terminal event last, errors and panics turned into `RUN_ERROR`, verification.
//! * [`AgentRouter`] mounts agents on an [`axum::Router`] ([`router`] lists the routes);
//!   refused requests get a JSON error body ([`error`]).
//! * [`Shutdown`] and [`serve`] give graceful shutdown on SIGINT/SIGTERM.
//! * [`copilotkit`] serves the CopilotKit runtime's REST contract, so CopilotKit's
//!   React components talk straight to this process; its runs and threads live in the
//!   same run store as resumable runs ([`runs::RunStore`]).
//! * The ten deterministic demo agents, one per AG-UI feature, are in the `agui-sdk-demo`
//!   crate.

mod admission;
// The agent crate's modules, for this crate's own paths; their items are re-exported
// once, below.
use agui_sdk_agent::{agent, context, engine, lifecycle};
mod budget;
pub mod config;
#[cfg(feature = "copilotkit")]
pub mod copilotkit;
pub mod error;
mod launch;
mod response;
pub mod router;
#[cfg(any(feature = "resumable", feature = "copilotkit"))]
pub mod runs;
pub mod shutdown;

#[doc(inline)]
pub use agui_sdk_agent::{
    agent_fn, agent_stream, Agent, AgentStream, Emitter, FnAgent, StreamAgent,
};
#[doc(inline)]
pub use agui_sdk_agent::{
    AgentError, EventVerifier, LifecycleGuard, RunContext, StateTracker, Violation,
};
pub use config::{Negotiation, Owner, ServerConfig, VerifierFactory, RUN_COST_BASE};
pub use error::ApiError;
pub use router::AgentRouter;
pub use shutdown::{serve, serve_with, termination_signal, ServeLimits, Shutdown};

// Re-exported so that an agent needs no other dependency to build JSON or add routes.
pub use agui_sdk_agent;
pub use agui_sdk_core;
pub use axum;
pub use futures_util;
pub use serde_json;

/// What an agent's code usually needs, in one import: `use agui_sdk_server::prelude::*;`.
///
/// ```
/// use agui_sdk_server::prelude::*;
/// // A state delta, with nothing else imported.
/// let delta = Event::state_delta(vec![PatchOperation::replace("/count", json!(2))]);
/// assert_eq!(
///     delta.to_json_string(),
///     r#"{"type":"STATE_DELTA","delta":[{"op":"replace","path":"/count","value":2}]}"#
/// );
/// ```
pub mod prelude {
    pub use crate::{
        agent_fn, agent_stream, Agent, AgentError, AgentRouter, AgentStream, Emitter, RunContext,
        StateTracker,
    };
    pub use agui_sdk_agent::{Answer, Answers};
    pub use agui_sdk_core::{
        Content, Context, Event, Interrupt, JsonObject, Message, PatchOperation, ResumeEntry,
        ResumeStatus, RunAgentInput, Tool, ToolCall,
    };
    pub use serde_json::{json, Value};
}
