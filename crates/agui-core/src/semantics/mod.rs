//! Protocol semantics over event streams: verification, applying events to a
//! conversation, chunk expansion, compaction and interrupts. All sans-io: every piece
//! is a plain state machine fed one event at a time, usable without an async runtime.

pub mod verify;

pub use verify::{verify_events, Verifier, VerifyError, VerifyRule};
pub mod apply;
pub mod patch;

pub use apply::{Applied, ApplyError, Reducer, RunOutcome};
pub mod chunks;

pub use chunks::{expand_chunks, ChunkError, ChunkExpander, ChunkRule};
pub mod compact;

pub use compact::{compact_events, Compactor};
pub mod interrupts;

pub use interrupts::{
    build_resume_array, check_resume, is_interrupt_expired, ResumeCheckError, ResumeError,
    ResumeResponse,
};
