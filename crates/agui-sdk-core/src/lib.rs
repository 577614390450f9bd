#![doc = include_str!("docs/overview.md")]
#![cfg_attr(docsrs, feature(doc_auto_cfg))]

#[macro_use]
pub mod wire;
pub mod compat;
pub mod encoding;
pub mod event;
mod extra;
pub(crate) mod json_text;
pub mod semantics;
pub mod types;

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
