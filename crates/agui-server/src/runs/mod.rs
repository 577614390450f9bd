//! Durable, resumable runs served over HTTP.
//!
//! The run log itself (sequence numbers, [`RunStore`], [`InMemoryRunStore`], the
//! contract suite) lives in `agui-agent` and is re-exported here; this module adds the
//! HTTP surface ([`Resumable`], described in [`crate::router`]): the wire format
//! (`id: {runId}:{seq}` on SSE frames, `AGUI-First-Seq` on protobuf responses),
//! re-attach, cancel and the replica reaper.

pub use agui_agent::runs::*;

pub mod http;
pub(crate) mod producer;
mod viewer;

pub use http::{Owner, Resumable, ResumeMode, MAX_RESUME_TOKEN, MIN_RESUME_TOKEN};
pub use producer::DetachPolicy;
