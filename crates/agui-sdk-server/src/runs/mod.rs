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

pub use crate::config::Owner;
pub use producer::DetachPolicy;
