//! Protocol semantics over event streams: verification, applying events to a
//! conversation, chunk expansion, compaction and interrupts. All sans-io: every piece
//! is a plain state machine fed one event at a time, usable without an async runtime.

pub mod verify;

pub use verify::{verify_events, VerifyError, VerifyRule, Verifier};
