//! Protocol semantics over event streams, with the reference client's exact rules:
//!
//! - [`Verifier`]: is a stream legal (runs, messages, tool calls, steps, reasoning,
//!   subagents, ownership)? Errors name the event index, the rule and the ids.
//! - [`Reducer`]: applies events to a conversation (messages and state) and reports
//!   what changed; cost per event does not grow with the conversation.
//! - [`enforce_event`] / [`enforce_outgoing_input`] / [`omit_optional_nulls`]: what
//!   the reference client does to raw incoming events and to its outgoing input.
//! - [`ChunkExpander`] / [`expand_chunks`]: `*_CHUNK` shorthands to start/content/end.
//! - [`Compactor`] / [`compact_events`]: compaction of a recorded stream.
//! - [`interrupts`]: expiry, the `resume` array, the check before resuming.
//! - [`inbound`]: the inbound pipeline every consumer uses (compatibility, enforcement,
//!   expansion, verification, reduction), split where a client's middleware sits.
//!
//! All sans-io: every piece is a plain state machine fed one event at a time, usable
//! without an async runtime (and with iterator adapters).
//!
//! ```
//! use agui_sdk_core::semantics::{expand_chunks, Reducer, Verifier};
//! use agui_sdk_core::event::TextMessageChunk;
//! use agui_sdk_core::Event;
//!
//! let chunk = TextMessageChunk {
//!     message_id: Some("m1".into()),
//!     delta: Some("Hello".into()),
//!     ..Default::default()
//! };
//! let events = vec![Event::run_started("t", "r"), chunk.into(), Event::run_finished("t", "r")];
//! let mut verifier = Verifier::new();
//! let mut reducer = Reducer::default();
//! for event in expand_chunks(events) {
//!     let event = event?;
//!     verifier.push(&event)?;
//!     let applied = reducer.apply(&event)?;
//!     if let Some(i) = applied.updated {
//!         // re-render message `i` only
//!         let _ = &reducer.messages()[i];
//!     }
//! }
//! assert_eq!(reducer.messages().len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod verify;

pub use verify::{verify_events, Verifier, VerifyError, VerifyRule};
pub mod apply;
pub mod patch;

pub use apply::{Applied, ApplyError, Reducer, RunOutcome};
pub mod chunks;

pub use chunks::{expand_chunks, ChunkError, ChunkExpander, ChunkRule};
pub mod compact;
pub mod downgrade;
pub mod open;

pub use compact::{compact_events, CompactWarning, Compactor};
pub use downgrade::{Downgrade, JsonRewrite, Outgoing};
mod frame;
pub use frame::{FrameError, FrameWriter, Written};
pub use open::OpenConstructs;
pub mod interrupts;

pub use interrupts::{
    build_resume_array, check_resume, is_interrupt_expired, ResumeCheckError, ResumeError,
    ResumeResponse,
};
pub mod enforce;

pub use enforce::{
    enforce_event, enforce_outgoing_input, omit_optional_nulls, EnforceError, EnforceWarning,
    Enforced, NullsRoot,
};
pub mod inbound;

pub use inbound::{
    apply_outgoing_era, upgrade_legacy_content, Inbound, InboundConfig, InboundError,
    InboundWarning, Intake, ProtocolVersion, Settle, VersionWarning, WarningKind,
};
pub use verify::verified;
