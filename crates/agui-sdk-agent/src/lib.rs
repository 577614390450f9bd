//! AG-UI agents without an HTTP server.
//!
//! This crate holds what an agent, a model adapter or a run store needs, and nothing
//! that serves HTTP: `agui-sdk-server` puts these agents behind routes, `agui-sdk-model` builds
//! one over a model, `agui-sdk-redis` stores their runs.
//!
//! * [`Agent`] (a stream of events) and [`agent_fn`] (an async function with an
//!   [`Emitter`]) define agents; [`RunContext`] carries the cancellation signal;
//!   [`AgentError`] is how they fail.
//! * [`lifecycle`]: the [`LifecycleGuard`] every run passes through (`RUN_STARTED` first,
//!   one terminal event last, errors and panics turned into `RUN_ERROR`, verification).
//! * [`engine`]: the [`RunDriver`](engine::RunDriver) that reads an agent's stream
//!   through the guard, with panics, the shutdown grace period, cancellation and the
//!   end of the run handled once for every kind of run.
//! * `runs` (feature `store`, on by default): the run store ([`runs::RunStore`], the
//!   roles it combines: the run log, leases, the thread index), its in-memory
//!   implementation, the reaper, and (feature `test-util`) the contract suite every
//!   store must pass. An agent author's build needs none of it:
//!   `default-features = false`.
//! * [`interrupts`]: the answers a resumed run brings ([`RunContext::answers`]), and
//!   the effects they allow kept at most once.
//! * [`builders`]: event builders and [`StateTracker`].

pub mod agent;
pub mod builders;
mod channel;
pub mod context;
pub mod engine;
pub mod error;
pub mod interrupts;
pub mod lifecycle;
#[cfg(feature = "store")]
pub mod runs;

pub use agent::{agent_fn, agent_stream, Agent, AgentStream, Emitter, FnAgent, StreamAgent};
pub use builders::StateTracker;
pub use context::RunContext;
pub use error::AgentError;
pub use interrupts::{Answer, Answers};
pub use lifecycle::{EventVerifier, LifecycleGuard, Violation};

// Re-exported so that an agent needs no other dependency to build events and streams.
pub use agui_sdk_core;
pub use futures_util;
pub use serde_json;
