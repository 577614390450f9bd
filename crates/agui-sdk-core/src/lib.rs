#![doc = include_str!("docs/overview.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// `tracing::warn!` (and [`log_debug!`]) when the `tracing` feature is on; nothing
/// otherwise. Every warning the core logs is also handed back as a value.
macro_rules! log_warn {
    ($($t:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::warn!($($t)*);
    }};
}
/// `tracing::debug!` when the `tracing` feature is on; nothing otherwise.
macro_rules! log_debug {
    ($($t:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::debug!($($t)*);
    }};
}

// The shared test helpers name the crate by its name.
#[cfg(test)]
extern crate self as agui_sdk_core;

#[macro_use]
mod macros;
pub mod compat;
pub mod encoding;
mod escape;
pub mod event;
mod extra;
pub(crate) mod json_text;
pub mod semantics;
mod time;
pub mod types;
pub mod wire;

pub use escape::{escape_into, needs_escape, Escaped, EscapedLines, EscapingWriter};
pub use event::{Event, EventType};
pub use extra::Extra;
pub use json_text::{JsonText, NotNullText, ObjectText};
pub use types::*;
pub use wire::JsonError;

/// A JSON object with its keys in insertion order (used for metadata, activity
/// content and every free-form object).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "1.1";
