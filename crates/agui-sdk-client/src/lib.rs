#![doc = include_str!("../README.md")]
//!
//! # This crate
//!
//! The AG-UI client (protocol 1.1): run any AG-UI agent over HTTP, consume its events as a typed
//! stream, and keep the conversation (messages, state, pending interrupts) across runs.
//!
//! Two layers:
//! - [`HttpAgent`] is the transport: it POSTs a [`RunAgentInput`](agui_sdk_core::RunAgentInput)
//!   and returns an [`EventStream`] of decoded events, SSE or protobuf by the response's
//!   content type, through the first half of the core's inbound pipeline (compatibility
//!   translation and enforcement). Dropping the stream cancels the request.
//! - [`Conversation`] is the thread: it builds each run's input from its messages
//!   and state, passes the events through chunk expansion, verification and the reducer,
//!   tells [`Subscriber`]s what changed, runs frontend tools, and checks interrupts.

mod conversation;
mod error;
mod http;
mod middleware;
mod subscriber;
mod tools;

pub use conversation::{
    Conversation, ConversationBuilder, RunParams, RunResult, Transport, DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_TOOL_ARGS_BYTES, DEFAULT_TOOL_ROUNDS,
};
pub use error::{ClientError, SHOWN_BODY};
pub use http::endpoint;
pub use http::{
    EventStream, HttpAgent, HttpAgentBuilder, Reconnect, ResumeOptions, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RUN_BYTES, DEFAULT_RESPONSE_TIMEOUT, MAX_ERROR_BODY,
};
pub use middleware::{FilterToolCalls, Middleware};
pub use subscriber::{Flow, Subscriber};
pub use tools::{ToolHandler, ToolOutput};

// Re-exported so that a client needs no other dependency for the protocol's types or JSON.
pub use agui_sdk_core;
pub use serde_json;

/// What a client's code usually needs, in one import: `use agui_sdk_client::prelude::*;`.
pub mod prelude {
    pub use crate::{ClientError, Conversation, Flow, HttpAgent, RunParams, RunResult, Subscriber};
    pub use agui_sdk_core::semantics::{InboundWarning, RunOutcome};
    pub use agui_sdk_core::{
        Content, Event, Interrupt, JsonObject, Message, PatchOperation, ResumeEntry, ResumeStatus,
        Tool, ToolCall,
    };
    pub use serde_json::{json, Value};
}
