//! What a provider API is to the loop: a translator, and nothing else. The request's
//! URL and headers, its body from the run's input, the provider's history of a run
//! as it goes on, and one turn's stream turned into AG-UI events and a [`TurnResult`].
//! The loop (`crate::run`, `crate::upstream`) owns turns, tools, retries, deadlines,
//! byte bounds and cancellation, once for every provider.

use agui_sdk_agent::AgentError;
use agui_sdk_core::types::TokenUsage;
use agui_sdk_core::{Event, RunAgentInput};
use serde_json::{Map, Value};

use crate::sse::Frame;

/// A tool the agent runs itself, as a provider shows it to the model.
#[derive(Debug, Clone)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}

/// What a request is built from besides the input and the history.
#[derive(Debug)]
pub(crate) struct RequestParts<'a> {
    pub model: &'a str,
    /// Fixed model parameters (`temperature`, `max_tokens`, …).
    pub params: &'a Map<String, Value>,
    /// Parameters a run may set through `forwardedProps` (names).
    pub forwardable: &'a [String],
    /// Server-side tools.
    pub server_tools: &'a [ToolSpec],
    /// A system prompt put first.
    pub system_prompt: Option<&'a str>,
    /// Whether the state goes to the model.
    pub expose_state: bool,
}

/// A tool call as the model made it, once its turn is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MadeCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What one model turn produced, once over.
#[derive(Debug, Default)]
pub(crate) struct TurnResult {
    /// The assistant message's text.
    pub text: String,
    /// The tool calls, in the order the model made them.
    pub calls: Vec<MadeCall>,
    /// The turn's token counts.
    pub usage: Option<TokenUsage>,
    /// Why the turn's answer cannot be used, though the stream was whole (a refusal,
    /// a content filter, a token limit): the run ends with it.
    pub stop: Option<AgentError>,
    /// The assistant turn in the provider's own form, for the next request of the
    /// run (only providers that need more than the text and calls fill it).
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "responses")),
        allow(dead_code)
    )]
    pub blocks: Vec<Value>,
}

/// A provider API: the request and the stream's translation. See the module docs.
pub(crate) trait Provider: Send + Sync + 'static {
    /// The provider's form of the conversation, as the run goes on.
    type History: Send;
    /// One turn's stream translator.
    type Turn: ProviderTurn;

    /// The URL a turn is POSTed to.
    fn url(&self, base_url: &str) -> String;

    /// The request with the provider's headers (its key attached here, per request):
    /// by default the key as a bearer token.
    fn headers(
        &self,
        req: reqwest::RequestBuilder,
        api_key: Option<&str>,
    ) -> reqwest::RequestBuilder {
        match api_key {
            Some(key) => req.bearer_auth(key),
            None => req,
        }
    }

    /// The history the run's input gives.
    fn history(&self, input: &RunAgentInput, parts: &RequestParts<'_>) -> Self::History;

    /// The request body of the next turn.
    fn body(
        &self,
        input: &RunAgentInput,
        history: &Self::History,
        parts: &RequestParts<'_>,
    ) -> Value;

    /// Adds the assistant's turn to the history (it made tool calls).
    fn record_turn(&self, history: &mut Self::History, result: &TurnResult);

    /// Adds a tool's result to the history: `output` is its text (a JSON string), or
    /// the list of its parts in the API's form (see [`Provider::result_part`]).
    fn record_output(&self, history: &mut Self::History, call: &MadeCall, output: Value);

    /// Adds a server-side tool's result to the history.
    fn record_result(&self, history: &mut Self::History, call: &MadeCall, content: &str) {
        self.record_output(history, call, Value::from(content));
    }

    /// How an MCP result's part goes to the model, for an API whose tool results carry
    /// images; `None` (the default): the API's tool results are text only.
    #[cfg(feature = "mcp")]
    fn result_part(&self) -> Option<fn(crate::mcp::ModelPart) -> Value> {
        None
    }

    /// Adds an MCP tool's result to the history: `text` (its text, with a note where
    /// an image was), or the parts of `content` when it has media and the API's tool
    /// results carry images.
    #[cfg(feature = "mcp")]
    fn record_parts(
        &self,
        history: &mut Self::History,
        call: &MadeCall,
        text: &str,
        content: &agui_sdk_core::types::Content,
    ) {
        match (self.result_part(), crate::mcp::model_parts(content)) {
            (Some(part), Some(parts)) => {
                let output = parts.into_iter().map(part).collect();
                self.record_output(history, call, Value::Array(output));
            }
            _ => self.record_result(history, call, text),
        }
    }

    /// Shows the model the state as it is now (when it is exposed).
    fn refresh_state(&self, history: &mut Self::History, state: &Value);

    /// The vendor id put in the usage (`TokenUsage::provider`), when the API names one.
    fn vendor(&self) -> Option<&'static str> {
        None
    }
}

/// One turn's stream as AG-UI events.
pub(crate) trait ProviderTurn: Send {
    /// A translator for a turn whose assistant message is `message_id`.
    fn new(message_id: String) -> Self
    where
        Self: Sized;

    /// Takes one SSE event; `Ok(true)` when it ends the stream. An error is the run's
    /// failure (what was translated before it is in `out`).
    fn push(&mut self, frame: Frame<'_>, out: &mut Vec<Event>) -> Result<bool, AgentError>;

    /// The size of the largest tool call's arguments received so far.
    fn longest_arguments(&self) -> usize;

    /// Whether the stream said how the turn ended (it is whole even if cut after).
    fn is_whole(&self) -> bool;

    /// The turn is over (the stream ended, or was cut): closes what is open.
    fn finish(self, out: &mut Vec<Event>) -> TurnResult;
}
