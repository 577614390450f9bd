//! A model agent for AG-UI: one loop (turns, server-side tools, frontend tools that end
//! the run, the state shown to the model, a step limit, retries before the first token,
//! cancellation, usage, bounds on every byte), over the provider API its constructor
//! names, each behind a cargo feature (all on by default):
//!
//! - [`ModelAgent::chat_completions`] (feature `chat`; [`OpenAiAgent::builder`] is the
//!   same): any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp's
//!   server, Ollama, LM Studio, OpenRouter, Groq, DeepSeek, …);
//! - [`ModelAgent::responses`] (feature `responses`): the OpenAI Responses API,
//!   stateless, its reasoning kept encrypted by the client;
//! - [`ModelAgent::anthropic`] (feature `anthropic`): the Anthropic Messages API.
//!
//! A provider API is an adapter that only translates: the run's input into a request,
//! the provider's stream into events. Serve the agent with `agui-sdk-server`.
//!
//! ```no_run
#![doc = include_str!("../examples/model_agent.rs")]
//! ```
//!
//! # What a run becomes: chat completions
//!
//! The run's input becomes one streaming request (`stream: true`, usage asked for):
//! system and developer messages as they are; user messages with their text and image
//! parts (other attachments the API cannot take become a text note, never dropped
//! silently); assistant messages with their tool calls; tool results; the `context`
//! entries as one system message; the run's `tools` and the agent's server-side tools as
//! function tools; the configured model parameters, and those a run may set through
//! `forwardedProps` when the agent allows them by name (sampling parameters only).
//! Reasoning messages are not sent back.
//!
//! The answer becomes events: content deltas a `TEXT_MESSAGE_*`, reasoning deltas
//! (`reasoning_content` or `reasoning`, as servers spell them) a `REASONING_*` span,
//! tool-call deltas (by `index`, several in parallel, arguments in pieces)
//! `TOOL_CALL_START`/`ARGS`/`END` under the assistant message, the usage chunk the
//! `usage` of `RUN_FINISHED`.
//!
//! # What a run becomes: Anthropic Messages
//!
//! One streaming request to `{base}/messages` with `x-api-key` and
//! `anthropic-version: 2023-06-01`; `max_tokens` 4096 unless set
//! ([`ModelAgentBuilder::max_tokens`]); thinking as configured
//! ([`ModelAgentBuilder::thinking`]: a budget, checked below `max_tokens` at build, or
//! adaptive). The system prompt, the `context`, the state shown to the model and the
//! system and developer messages make the top-level `system`; tools go as
//! `{name, description, input_schema}`, and a run's `forwardedProps.toolChoice` naming
//! an offered tool forces that tool (that request without thinking, which the API
//! refuses with a forced tool).
//!
//! Out: text blocks become `TEXT_MESSAGE_*`; each thinking block its own reasoning
//! message (`REASONING_START`, `REASONING_MESSAGE_*`, `REASONING_END`), its signature a
//! `REASONING_ENCRYPTED_VALUE` (subtype `message`) of type
//! `anthropic.thinking_signature`, also when its text is omitted; a `redacted_thinking`
//! block a reasoning message with no text whose encrypted value is the block's `data`
//! (type `anthropic.redacted_thinking`); `tool_use` blocks `TOOL_CALL_*` with the
//! block's id as `toolCallId`. Usage: `inputTokens` is the whole prompt (uncached, read
//! from the cache and written to it), `cachedInputTokens` and `cacheWriteInputTokens`
//! the cache's parts, `reasoningTokens` the thinking tokens when reported. The stop
//! reasons `refusal`, `max_tokens` and `model_context_window_exceeded` end the run with
//! `RUN_ERROR` (codes `refusal`, `max_tokens`, `context_window_exceeded`), and an
//! `error` event mid-stream (`overloaded_error`, …) with code `upstream_error` naming
//! the kind; `pause_turn` ends the turn as `end_turn` does.
//!
//! Back: the input's messages become the history in the order they were produced, each
//! assistant turn as its thinking blocks (the signature, or the redacted data, byte for
//! byte), then its text, then its `tool_use` blocks; consecutive reasoning and
//! assistant messages are one turn (a client may keep a tool call without
//! `parentMessageId` as a message of its own), an empty text is never sent, and tool
//! results are `tool_result` blocks. A reasoning message's value without a type (a 1.0
//! client does not keep `encryptedValueType`) is taken as a thinking block's signature;
//! a value of another provider's type (`openai.encrypted_content`, …) is never sent: it
//! is dropped with a warning naming the message.
//!
//! # What a run becomes: OpenAI Responses
//!
//! One streaming request to `{base}/responses` with `Authorization: Bearer …`,
//! stateless (`store: false`) and asking for the reasoning's encrypted content
//! (`include: ["reasoning.encrypted_content"]`); `reasoning.effort` as configured
//! ([`ModelAgentBuilder::reasoning_effort`]). The system prompt, the `context` and the
//! state shown to the model make the `instructions`; tools go as function tools;
//! `max_tokens` is sent as `max_output_tokens`, and the parameters the API does not
//! take (`stop`, `seed`, penalties) are left out with a warning.
//!
//! Out: each reasoning item becomes a reasoning message of its own whose id is the
//! item's (`rs_…`), its summary and reasoning text deltas the content, its
//! `encrypted_content` (from the item's `response.output_item.done`) a
//! `REASONING_ENCRYPTED_VALUE` (subtype `message`) of type `openai.encrypted_content`;
//! output text a `TEXT_MESSAGE_*`; `function_call` items `TOOL_CALL_*` with the
//! `call_id` as `toolCallId`. Usage: `cachedInputTokens` from
//! `input_tokens_details.cached_tokens`, `reasoningTokens` from
//! `output_tokens_details.reasoning_tokens`. A refusal ends the run with code
//! `refusal`; `response.incomplete` with code `max_tokens` (`max_output_tokens`),
//! `content_filter`, or `upstream_error` naming another reason; `response.failed` and
//! an `error` event (its fields at the top level or under `error`) with code
//! `upstream_error` naming the error's code.
//!
//! Back: each assistant turn as its reasoning items (the message's id, its content as
//! the summary, its encrypted content byte for byte), then its text, then its
//! `function_call` items; tool results as `function_call_output` items by `call_id`. A
//! reasoning message's value without a type is taken as OpenAI's encrypted content; a
//! value of another provider's type (`anthropic.thinking_signature`, …) is never sent:
//! it is dropped with a warning naming the message. A reasoning message without a value
//! cannot be replayed statelessly and is not sent.
//!
//! # Tools
//!
//! A call of a tool the run's client provides (one of the input's `tools`) ends the run:
//! the client runs it and sends the result with its next run. A call of a server-side
//! tool (registered with [`ModelAgentBuilder::tool`], its JSON Schema derived from the
//! argument type) is run here: its result goes out as `TOOL_CALL_RESULT` and back to the
//! model, in a loop of at most [`ModelAgentBuilder::max_steps`] model calls. A tool may
//! change the shared state ([`ToolResult::with_state_patch`]), which goes out as
//! `STATE_DELTA`; [`ModelAgentBuilder::expose_state`] shows the state to the model.
//!
//! # Approvals
//!
//! A server-side tool, or an MCP server's tool by the name the model sees, can wait
//! for a user's approval before it runs: [`ModelAgentBuilder::approve_tool`] with
//! [`Approval::Always`], or [`Approval::when`] and a predicate over the call's
//! arguments (the calls it answers `false` for run at once). A call that waits streams
//! as any call (`TOOL_CALL_START`/`ARGS`/`END`) but is not run: the other calls of the
//! same model turn run first (their results go out and are kept), then the run ends
//! with `RUN_FINISHED` outcome `interrupt`, one interrupt per waiting call: id
//! `approve-<toolCallId>`, reason `tool_call` ([`APPROVAL_REASON`]), its `toolCallId`,
//! a `message` naming the tool and quoting its arguments, and the `responseSchema`
//! `{"type":"object","properties":{"approved":{"type":"boolean"},"editedArgs":{"type":"object"}},"required":["approved"]}`.
//! A frontend tool called in the same turn is left to the client, as always.
//!
//! The user answers in the next run's `resume`, the client sending the conversation
//! back with the assistant message that made the call. The runtime checks the answers
//! (`agui-sdk-server` does for every run; `agui_sdk_agent::runs::Interrupts::run`
//! outside it) and the agent, before it calls the model:
//!
//! - runs an approved call, with `editedArgs` in place of the model's arguments when
//!   given. Edited arguments are checked against the tool's JSON Schema first: if they
//!   fail it, the run ends with `RUN_ERROR` code `interrupt_invalid_payload` naming the
//!   failing path, nothing runs, and the interrupt stays open to be answered again. The
//!   run is recorded with the answer (`begin_effect`, then `record_effect` with its
//!   result, before the model is called again): an attempt of the resumed run that
//!   fails after the tool ran, when the answer is sent again, gets the recorded result
//!   without running it again; if the earlier attempt died while the tool ran, the
//!   model is told that the outcome is unknown and the tool was not run again;
//! - for a denied (`approved: false`) or cancelled answer, tells the model that the
//!   user declined (or cancelled) the call, which was not run.
//!
//! Each result goes out as `TOOL_CALL_RESULT` for the original `toolCallId` (the call
//! is not restated) and goes to the model, and the loop goes on in that run. A result
//! the client sent for the call (CopilotKit adds one before it resumes) is replaced:
//! the model gets one result per call, here and in later runs (where a call with two
//! results keeps the last). A state change a tool asked for in an attempt that failed
//! is not repeated.
//!
//! ```
//! use agui_sdk_model::{Approval, ModelAgent, ToolContext, ToolResult};
//! use serde_json::Value;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Transfer {
//!     to: String,
//!     amount: f64,
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = ModelAgent::chat_completions("http://127.0.0.1:11434/v1", "llama3.2")
//!     .tool("transfer", "Sends money.", |t: Transfer, _: ToolContext| async move {
//!         Ok(ToolResult::text(format!("sent {} to {}", t.amount, t.to)))
//!     })
//!     // Transfers above 100 wait for the user; smaller ones run at once.
//!     .approve_tool(
//!         "transfer",
//!         Approval::when(|args: &Value| args["amount"].as_f64().is_none_or(|a| a > 100.0)),
//!     )
//!     .build()?;
//! # let _ = agent;
//! # Ok(())
//! # }
//! ```
//!
//! # Tools from MCP servers
//!
//! With the feature `mcp` (off by default), `ModelAgentBuilder::mcp_server` adds the
//! tools of an MCP server, over stdio (`McpServer::stdio`: a command started at the
//! first run and reused, given only the environment configured for it) or Streamable
//! HTTP (`McpServer::http`: a URL with headers, never logged). They are offered beside
//! the server-side tools and the run's frontend tools, with their JSON Schemas; a name
//! that clashes is offered as `<server>__<tool>`. A call streams as any tool call and
//! ends with `TOOL_CALL_RESULT`: text as text, images and audio as content parts, a part
//! AG-UI has no place for as a text note. The model gets images where its API's tool
//! results carry them (Anthropic Messages: image blocks in the `tool_result`; OpenAI
//! Responses: `input_image` items in the `function_call_output`), and a text note
//! where they cannot (chat completions, whose tool messages are text); an `isError`
//! result is a tool error it sees, prefixed `error: `. Progress notifications of a long call
//! go out as `ACTIVITY_SNAPSHOT` events of type `mcp_progress` (content: `toolCallId`,
//! `server`, `tool`, `progress`, `total`, `message`), one activity message per call. A
//! server that hangs, dies mid-call, floods or answers garbage is a tool error for that
//! call (the run goes on), within `McpLimits`; the server is started again at a later
//! run. The example `examples/mcp_tools.rs`:
//!
//! ```text
//! let agent = ModelAgent::chat_completions(url, "gpt-4o-mini")
//!     .mcp_server(McpServer::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"])
//!         .env("PATH", std::env::var("PATH")?))
//!     .build()?;
//! ```
//!
//! # Failures
//!
//! Connect and read timeouts; `429` and `5xx` answers (Anthropic's `529` overloaded
//! among them) are retried with bounded backoff
//! honouring `Retry-After`, before the first token only; a stream cut mid-answer, an
//! error object mid-stream, a refusal and any other failure end the run with
//! `RUN_ERROR` (codes `upstream_error`, `upstream_cut`, `upstream_timeout`,
//! `upstream_too_large`, `tool_arguments_too_large`, `refusal`, `content_filter`,
//! `max_tokens`, `context_window_exceeded`, `max_steps`) whose message says what happened without the
//! endpoint's internals, after what was received. An error answer names the request
//! and its status, the URL without userinfo or query (`the model endpoint failed: POST
//! https://api.example.com/v1/responses answered 404`). A client that goes away drops the
//! upstream request at once.
//!
//! # Redirects
//!
//! No redirect is followed: the API key is sent to the configured endpoint and nowhere
//! else. An endpoint answering `3xx` ends the run with `RUN_ERROR` code
//! `upstream_error`, whose message names the URL called and where it redirected
//! (without userinfo or query). Configure the URL the endpoint redirects to instead.

#[cfg(not(any(feature = "chat", feature = "anthropic", feature = "responses")))]
compile_error!(
    "a model agent needs a provider API: enable the feature `chat`, `responses` or `anthropic`"
);

#[cfg(feature = "anthropic")]
mod anthropic;
mod approval;
mod builder;
#[cfg(feature = "chat")]
mod chat;
#[cfg(feature = "mcp")]
mod mcp;
mod provider;
mod request;
#[cfg(feature = "responses")]
mod responses;
mod sse;
mod turn;
mod upstream;

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::{agent_fn, AgentError, Emitter, FnAgent, RunContext};
use agui_sdk_core::event::{RunFinished, ToolCallResult};
use agui_sdk_core::types::{PatchOperation, TokenUsage};
use agui_sdk_core::{Event, RunAgentInput};
use serde_json::{json, Map, Value};

use crate::provider::{MadeCall, Provider, RequestParts, ToolSpec};
use crate::upstream::model_turn;

pub use crate::approval::{Approval, APPROVAL_REASON};
pub use crate::builder::{ModelAgentBuilder, OpenAiAgentBuilder};
#[cfg(feature = "mcp")]
pub use crate::mcp::{McpLimits, McpServer};

/// Sampling parameters a run may set through `forwardedProps` (when allowed by name),
/// sent under the same name: a provider API takes those it knows (`top_k` and
/// `stop_sequences` are Anthropic's, `presence_penalty` OpenAI's, …).
pub const FORWARDABLE_PARAMS: &[&str] = &[
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "stop",
    "reasoning_effort",
    "parallel_tool_calls",
    "tool_choice",
    "top_k",
    "stop_sequences",
];

/// What a server-side tool hands back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    /// The result the model reads (and the client sees in `TOOL_CALL_RESULT`).
    pub content: String,
    /// A change to the shared state, sent as `STATE_DELTA`.
    pub state_patch: Option<Vec<PatchOperation>>,
}

impl ToolResult {
    /// A textual result.
    pub fn text(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            state_patch: None,
        }
    }

    /// Also changes the shared state.
    pub fn with_state_patch(mut self, patch: Vec<PatchOperation>) -> Self {
        self.state_patch = Some(patch);
        self
    }
}

impl From<String> for ToolResult {
    fn from(s: String) -> Self {
        ToolResult::text(s)
    }
}

impl From<&str> for ToolResult {
    fn from(s: &str) -> Self {
        ToolResult::text(s)
    }
}

/// What a server-side tool knows of its run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The shared state as it is at the call.
    pub state: Value,
    /// The thread.
    pub thread_id: String,
    /// The run.
    pub run_id: String,
}

type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolResult, String>> + Send>>;
type ToolFn = Arc<dyn Fn(Value, ToolContext) -> ToolFuture + Send + Sync>;

#[derive(Clone)]
struct ServerTool {
    spec: ToolSpec,
    run: ToolFn,
}

/// The provider API an agent speaks.
#[derive(Debug, Clone)]
enum Api {
    /// OpenAI Chat Completions.
    #[cfg(feature = "chat")]
    Chat,
    /// Anthropic Messages.
    #[cfg(feature = "anthropic")]
    Anthropic,
    /// OpenAI Responses.
    #[cfg(feature = "responses")]
    Responses,
}

/// How much an OpenAI reasoning model reasons before it answers
/// ([`ModelAgentBuilder::reasoning_effort`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Effort {
    /// `low`: faster answers, fewer reasoning tokens.
    Low,
    /// `medium`.
    Medium,
    /// `high`: more reasoning tokens, for harder problems.
    High,
}

impl Effort {
    /// The name the APIs take (`low`, `medium`, `high`).
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}

impl std::str::FromStr for Effort {
    type Err = ConfigError;

    /// `low`, `medium` or `high`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            other => Err(ConfigError(format!(
                "reasoning effort {other:?}: expected low, medium or high"
            ))),
        }
    }
}

/// How an Anthropic model thinks before it answers ([`ModelAgentBuilder::thinking`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Thinking {
    /// Extended thinking with a budget of tokens (`{"type": "enabled",
    /// "budget_tokens": n}`): at least 1,024, and below the request's `max_tokens`
    /// (checked when the agent is built).
    Budget(u32),
    /// The model decides when and how much to think (`{"type": "adaptive"}`).
    Adaptive,
}

/// The configuration of a [`ModelAgentBuilder`] and the agent it builds.
#[derive(Clone)]
struct Config {
    base_url: String,
    model: String,
    api_key: Option<String>,
    params: Map<String, Value>,
    forwardable: Vec<String>,
    system_prompt: Option<String>,
    tools: Vec<ServerTool>,
    /// The tools whose calls wait for approval, by the name the model sees.
    approvals: Vec<(String, Approval)>,
    expose_state: bool,
    max_steps: usize,
    retries: u32,
    backoff: Duration,
    max_backoff: Duration,
    read_timeout: Duration,
    error_body_timeout: Duration,
    max_event: usize,
    max_answer_bytes: usize,
    answer_deadline: Duration,
    max_tool_arguments: usize,
    client: reqwest::Client,
    description: Option<String>,
    #[cfg(feature = "mcp")]
    mcp_servers: Vec<McpServer>,
    #[cfg(feature = "mcp")]
    mcp_limits: McpLimits,
    #[cfg(feature = "mcp")]
    mcp: Option<Arc<mcp::McpSources>>,
}

/// The agent builder's failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// A model agent: one loop (turns, server-side and frontend tools, retries, bounds),
/// over the provider API its constructor names. Each constructor gives a
/// [`ModelAgentBuilder`].
#[derive(Debug)]
pub struct ModelAgent;

impl ModelAgent {
    /// An agent over an OpenAI-compatible chat-completions endpoint at `base_url` (the
    /// URL `/chat/completions` is appended to, e.g. `https://api.openai.com/v1` or
    /// `http://127.0.0.1:11434/v1`) and `model`.
    #[cfg(feature = "chat")]
    pub fn chat_completions(
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> ModelAgentBuilder {
        ModelAgentBuilder::new(Api::Chat, base_url.into(), model.into())
    }

    /// An agent over the Anthropic Messages API at `base_url` (the URL `/messages` is
    /// appended to, e.g. `https://api.anthropic.com/v1`) and `model`. The key goes in
    /// `x-api-key`, with `anthropic-version: 2023-06-01`; `max_tokens` is 4096 unless
    /// set ([`ModelAgentBuilder::max_tokens`]); thinking is off unless configured
    /// ([`ModelAgentBuilder::thinking`]).
    ///
    /// ```no_run
    /// use agui_sdk_model::{ModelAgent, Thinking};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let agent = ModelAgent::anthropic("https://api.anthropic.com/v1", "claude-sonnet-4-5")
    ///     .api_key(std::env::var("ANTHROPIC_API_KEY")?)
    ///     .max_tokens(16_000)
    ///     .thinking(Thinking::Budget(8_000))
    ///     .build()?;
    /// # let _ = agent;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "anthropic")]
    pub fn anthropic(base_url: impl Into<String>, model: impl Into<String>) -> ModelAgentBuilder {
        ModelAgentBuilder::new(Api::Anthropic, base_url.into(), model.into())
    }

    /// An agent over the OpenAI Responses API at `base_url` (the URL `/responses` is
    /// appended to, e.g. `https://api.openai.com/v1`) and `model`. Requests are
    /// stateless (`store: false`) and ask for the reasoning's encrypted content, which
    /// goes back to the model with the next run; the key goes as
    /// `Authorization: Bearer …`; the reasoning effort is the model's default unless
    /// set ([`ModelAgentBuilder::reasoning_effort`]).
    ///
    /// ```no_run
    /// use agui_sdk_model::{Effort, ModelAgent};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let agent = ModelAgent::responses("https://api.openai.com/v1", "o4-mini")
    ///     .api_key(std::env::var("OPENAI_API_KEY")?)
    ///     .reasoning_effort(Effort::Low)
    ///     .build()?;
    /// # let _ = agent;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "responses")]
    pub fn responses(base_url: impl Into<String>, model: impl Into<String>) -> ModelAgentBuilder {
        ModelAgentBuilder::new(Api::Responses, base_url.into(), model.into())
    }
}

/// An agent over a chat-completions endpoint, by its first name: see
/// [`ModelAgent::chat_completions`].
#[cfg(feature = "chat")]
#[derive(Debug)]
pub struct OpenAiAgent;

#[cfg(feature = "chat")]
impl OpenAiAgent {
    /// A builder for the endpoint at `base_url` (the URL `/chat/completions` is appended
    /// to, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`) and `model`:
    /// [`ModelAgent::chat_completions`].
    pub fn builder(base_url: impl Into<String>, model: impl Into<String>) -> ModelAgentBuilder {
        ModelAgent::chat_completions(base_url, model)
    }
}

/// The agent over `provider`.
#[allow(dead_code)]
fn agent<P: Provider>(config: Arc<Config>, provider: P) -> FnAgent {
    let provider = Arc::new(provider);
    agent_fn(move |input, ctx, tx| {
        let config = config.clone();
        let provider = provider.clone();
        async move { run(&config, &*provider, input, ctx, tx).await }
    })
}

fn fail(message: impl Into<String>, code: &str) -> AgentError {
    AgentError::public(message).with_code(code)
}

/// Whether an upstream's error kind is fit to show in a run's error: a short word of
/// ASCII letters, digits and underscores.
#[allow(dead_code)]
fn is_plain_word(k: &str) -> bool {
    !k.is_empty() && k.len() <= 64 && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// One run: model calls and server-side tool rounds until the answer, a frontend tool
/// call, or a failure.
async fn run<P: Provider>(
    config: &Config,
    provider: &P,
    mut input: RunAgentInput,
    ctx: RunContext,
    tx: Emitter,
) -> Result<(), AgentError> {
    #[allow(unused_mut)]
    let mut server_tools: Vec<ToolSpec> = config.tools.iter().map(|t| t.spec.clone()).collect();
    #[cfg(feature = "mcp")]
    let mcp_offered: Vec<mcp::Offered> = match &config.mcp {
        Some(sources) => {
            let taken: HashSet<String> = server_tools
                .iter()
                .map(|t| t.name.clone())
                .chain(input.tools.iter().map(|t| t.name.clone()))
                .collect();
            let (offered, specs) = sources.offer(&taken).await;
            server_tools.extend(specs);
            offered
        }
        None => Vec::new(),
    };
    let parts = RequestParts {
        model: &config.model,
        params: &config.params,
        forwardable: &config.forwardable,
        server_tools: &server_tools,
        system_prompt: config.system_prompt.as_deref(),
        expose_state: config.expose_state,
    };
    let mut state = input.state.as_ref().map_or(Value::Null, |s| s.to_value());
    // One patcher for the run: the state's size is measured once, at the first `copy`.
    let mut patcher = agui_sdk_core::semantics::patch::Patcher::new();
    let tools = approval::Tools {
        specs: &server_tools,
        #[cfg(feature = "mcp")]
        mcp: &mcp_offered,
    };
    approval::dedupe_results(&mut input.messages);
    if !ctx.answers().is_empty() {
        approval::resume(
            config,
            &mut input,
            &tools,
            &mut state,
            &mut patcher,
            &ctx,
            &tx,
        )
        .await?;
    }
    let mut history = provider.history(&input, &parts);
    let frontend: HashSet<&str> = input.tools.iter().map(|t| t.name.as_str()).collect();
    let mut usage: Vec<TokenUsage> = Vec::new();

    for step in 0..config.max_steps {
        let body = provider.body(&input, &history, &parts);
        let message_id = format!("{}-m{}", input.run_id, step);
        let mut result = model_turn(config, provider, &body, message_id, &tx).await?;
        if let Some(mut u) = result.usage.take() {
            u.model = Some(config.model.clone());
            if let Some(vendor) = provider.vendor() {
                u.provider = Some(vendor.to_owned());
            }
            usage.push(u);
        }
        if let Some(stop) = result.stop.take() {
            return Err(stop);
        }
        if result.calls.is_empty() {
            return finish(&tx, &input, usage, Vec::new()).await;
        }
        // The assistant turn, for the next request.
        provider.record_turn(&mut history, &result);
        let mut client_calls = false;
        let mut waiting = Vec::new();
        for call in &result.calls {
            if frontend.contains(call.name.as_str()) {
                client_calls = true;
                continue;
            }
            if server_tools.iter().any(|t| t.name == call.name)
                && config.approvals.iter().any(|(name, a)| {
                    (*name == call.name || name == builder::EVERY_TOOL)
                        && a.is_needed(&call.arguments)
                })
            {
                // Not run: the run ends asking the user (the calls of the turn that
                // need no approval run first).
                waiting.push(approval::interrupt_for(call));
                continue;
            }
            #[cfg(feature = "mcp")]
            if let (Some(sources), Some(tool)) = (
                &config.mcp,
                mcp_offered.iter().find(|t| t.name == call.name),
            ) {
                let out = sources.call(tool, &call.id, &call.arguments, &tx).await?;
                provider.record_parts(&mut history, call, &out.for_model, &out.content);
                tx.emit(Event::from(ToolCallResult::new(
                    format!("{}-result", call.id),
                    call.id.clone(),
                    out.content,
                )))
                .await?;
                continue;
            }
            let output = run_tool(config, call, &state, &input, &ctx).await;
            if let Some(patch) = output.state_patch {
                apply_patch(&mut patcher, &mut state, patch, &call.name, &tx).await?;
            }
            tx.emit(Event::from(ToolCallResult::new(
                format!("{}-result", call.id),
                call.id.clone(),
                output.content.clone(),
            )))
            .await?;
            provider.record_result(&mut history, call, &output.content);
        }
        if client_calls || !waiting.is_empty() {
            // The client runs its tools and sends the results with its next run; the
            // user answers the approvals in its `resume`.
            return finish(&tx, &input, usage, waiting).await;
        }
        if config.expose_state {
            provider.refresh_state(&mut history, &state);
        }
    }
    Err(fail(
        format!(
            "the agent stopped after {} model calls without an answer",
            config.max_steps
        ),
        "max_steps",
    ))
}

/// Ends the run: a success, or, with `interrupts`, a pause until they are answered.
async fn finish(
    tx: &Emitter,
    input: &RunAgentInput,
    usage: Vec<TokenUsage>,
    interrupts: Vec<agui_sdk_core::Interrupt>,
) -> Result<(), AgentError> {
    let mut fin = RunFinished::new(input.thread_id.clone(), input.run_id.clone());
    if !interrupts.is_empty() {
        fin.outcome = Some(agui_sdk_core::RunFinishedOutcome::interrupt(interrupts));
    }
    if !usage.is_empty() {
        fin.usage = Some(usage);
    }
    tx.emit(Event::from(fin)).await
}

/// Applies a tool's state change and sends it as `STATE_DELTA` (a change that does not
/// apply is logged and dropped).
async fn apply_patch(
    patcher: &mut agui_sdk_core::semantics::patch::Patcher,
    state: &mut Value,
    patch: Vec<PatchOperation>,
    tool: &str,
    tx: &Emitter,
) -> Result<(), AgentError> {
    if let Err(e) = patcher.apply(state, patch.clone()) {
        tracing::warn!(tool = %agui_sdk_core::Escaped(tool), error = %e, "a tool's state patch does not apply");
        return Ok(());
    }
    tx.emit(Event::state_delta(patch)).await
}

async fn run_tool(
    config: &Config,
    call: &MadeCall,
    state: &Value,
    input: &RunAgentInput,
    ctx: &RunContext,
) -> ToolResult {
    let Some(tool) = config.tools.iter().find(|t| t.spec.name == call.name) else {
        tracing::warn!(tool = %agui_sdk_core::Escaped(&call.name), "the model called a tool that does not exist");
        return ToolResult::text(format!("error: there is no tool named {:?}", call.name));
    };
    let args: Value = if call.arguments.trim().is_empty() {
        json!({})
    } else {
        match serde_json::from_str(&call.arguments) {
            Ok(v) => v,
            Err(e) => return ToolResult::text(format!("error: the arguments are not JSON: {e}")),
        }
    };
    let tctx = ToolContext {
        state: state.clone(),
        thread_id: input.thread_id.clone(),
        run_id: ctx.run_id().to_owned(),
    };
    match (tool.run)(args, tctx).await {
        Ok(out) => out,
        Err(e) => {
            tracing::info!(tool = %agui_sdk_core::Escaped(&call.name), error = %e, "a server-side tool failed");
            ToolResult::text(format!("error: {e}"))
        }
    }
}
