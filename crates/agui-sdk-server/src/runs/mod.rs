//! Runs kept in the run store, served over HTTP: resumable runs and the CopilotKit
//! runtime's thread runs.
//!
//! The run log itself (sequence numbers, threads, [`RunStore`], [`InMemoryRunStore`],
//! the contract suite, the reaper) lives in `agui-sdk-agent` and is re-exported here; this
//! module adds the producer (the agent's events into the log) and the viewer (the log
//! to one response), which both kinds of run use, and (feature `resumable`) the HTTP
//! surface of resumable runs ([`Resumable`], described in [`crate::router`]): the wire
//! format (`id: {runId}:{seq}` on SSE frames, `AGUI-First-Seq` on protobuf responses),
//! re-attach and cancel.

pub use agui_sdk_agent::runs::*;

#[cfg(feature = "resumable")]
pub mod http;
pub(crate) mod producer;
pub(crate) mod viewer;

#[cfg(feature = "resumable")]
pub use http::{Resumable, ResumeMode, MAX_RESUME_TOKEN, MIN_RESUME_TOKEN};

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
pub use producer::DetachPolicy;
