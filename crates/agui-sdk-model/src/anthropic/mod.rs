//! Anthropic Messages (`POST {base}/messages`, streaming): the adapter. The run's
//! input becomes the provider's history (thinking blocks replayed byte for byte), the
//! stream becomes events (each thinking block a reasoning message of its own, its
//! signature an encrypted value).

mod request;
mod translate;

use agui_sdk_core::RunAgentInput;
use serde_json::{json, Value};

use crate::provider::{MadeCall, Provider, RequestParts, TurnResult};
// The conversation in the Messages API's form: the parts of the top-level `system`
// prompt, then `user` and `assistant` messages, each with its content blocks.
use crate::request::History;
use crate::Thinking;

/// The `anthropic-version` header sent with every request.
pub(crate) const API_VERSION: &str = "2023-06-01";
/// The `max_tokens` sent when none is configured.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;
/// The type of a thinking block's signature.
pub(crate) const SIGNATURE_TYPE: &str = "anthropic.thinking_signature";
/// The type of a redacted thinking block's data.
pub(crate) const REDACTED_TYPE: &str = "anthropic.redacted_thinking";

/// The Messages API, with its agent's thinking configuration.
#[derive(Debug, Clone)]
pub(crate) struct Anthropic {
    pub thinking: Option<Thinking>,
}

impl Provider for Anthropic {
    type History = History;
    type Turn = translate::Turn;

    fn url(&self, base_url: &str) -> String {
        format!("{base_url}/messages")
    }

    fn headers(
        &self,
        req: reqwest::RequestBuilder,
        api_key: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let req = req.header("anthropic-version", API_VERSION);
        match api_key {
            Some(key) => req.header("x-api-key", key),
            None => req,
        }
    }

    fn history(&self, input: &RunAgentInput, parts: &RequestParts<'_>) -> History {
        request::history(input, parts)
    }

    fn body(&self, input: &RunAgentInput, history: &History, parts: &RequestParts<'_>) -> Value {
        request::body(input, history, parts, self.thinking)
    }

    fn record_turn(&self, history: &mut History, result: &TurnResult) {
        request::push(&mut history.items, "assistant", result.blocks.clone());
    }

    fn record_output(&self, history: &mut History, call: &MadeCall, output: Value) {
        let block = json!({ "type": "tool_result", "tool_use_id": call.id, "content": output });
        request::push(&mut history.items, "user", vec![block]);
    }

    /// A tool_result's content may be text and image blocks.
    #[cfg(feature = "mcp")]
    fn result_part(&self) -> Option<fn(crate::mcp::ModelPart) -> Value> {
        Some(|p| match p {
            crate::mcp::ModelPart::Text(t) => json!({ "type": "text", "text": t }),
            crate::mcp::ModelPart::Image { mime, data } => json!({
                "type": "image",
                "source": { "type": "base64", "media_type": mime, "data": data },
            }),
        })
    }

    fn refresh_state(&self, history: &mut History, state: &Value) {
        history.system.refresh_state(state);
    }

    fn vendor(&self) -> Option<&'static str> {
        Some("anthropic")
    }
}
