//! The integration tests of `agui-sdk-model`, in one binary (one link instead of one per file).

mod common;
#[cfg(feature = "chat")]
mod fake;
#[cfg(feature = "anthropic")]
mod fake_anthropic;
#[cfg(feature = "responses")]
mod fake_responses;
mod fake_server;

#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(feature = "chat")]
mod approval;

#[cfg(all(feature = "chat", feature = "mcp"))]
mod mcp;
#[cfg(all(feature = "chat", feature = "mcp"))]
mod mcp_redirect;
#[cfg(feature = "chat")]
mod openai_agent;
#[cfg(feature = "chat")]
mod openai_interop;
#[cfg(feature = "chat")]
mod openai_upstream;
#[cfg(feature = "responses")]
mod responses;
#[cfg(all(feature = "chat", feature = "responses", feature = "anthropic"))]
mod sdk_proof;
