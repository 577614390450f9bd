//! Frontend tools: Rust handlers for tools the application runs itself.

use std::future::Future;
use std::pin::Pin;

use agui_sdk_core::Content;
use serde_json::Value;

/// What a tool handler returns: the content of the tool message sent back to the agent.
pub type ToolOutput = Result<Content, String>;

/// A frontend tool's handler: receives the call's arguments (parsed JSON; `{}` when they
/// are not valid JSON, as the reference does) and returns the result content or an error
/// message.
pub trait ToolHandler: Send + Sync {
    /// Runs the tool.
    fn call(&self, arguments: Value) -> Pin<Box<dyn Future<Output = ToolOutput> + Send + '_>>;
}

impl<F, Fut> ToolHandler for F
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    fn call(&self, arguments: Value) -> Pin<Box<dyn Future<Output = ToolOutput> + Send + '_>> {
        Box::pin((self)(arguments))
    }
}
