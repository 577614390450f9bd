//! The builder of a model agent: its settings, checked and made an agent by
//! [`ModelAgentBuilder::build`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::FnAgent;
use agui_sdk_client::endpoint;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

#[cfg(feature = "anthropic")]
use crate::anthropic;
#[cfg(feature = "chat")]
use crate::chat;
#[cfg(feature = "mcp")]
use crate::mcp::{self, McpLimits, McpServer};
use crate::provider::ToolSpec;
#[cfg(feature = "responses")]
use crate::responses;
use crate::{
    agent, Api, Approval, Config, ConfigError, Effort, ServerTool, Thinking, ToolContext, ToolFn,
    ToolFuture, ToolResult, FORWARDABLE_PARAMS,
};

/// Builds a model agent (see [`ModelAgent`](crate::ModelAgent) for its provider APIs
/// and the [crate docs](crate)).
pub struct ModelAgentBuilder {
    api: Api,
    thinking: Option<Thinking>,
    effort: Option<Effort>,
    config: Config,
    connect_timeout: Duration,
    error: Option<String>,
}

/// The builder of an agent over a chat-completions endpoint, by its first name.
pub type OpenAiAgentBuilder = ModelAgentBuilder;

impl std::fmt::Debug for ModelAgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAgentBuilder")
            .field("api", &self.api)
            .field("thinking", &self.thinking)
            .field("effort", &self.effort)
            .field("base_url", &endpoint::redact_url(&self.config.base_url))
            .field("model", &self.config.model)
            .field("api_key", &self.config.api_key.as_ref().map(|_| "<set>"))
            .field(
                "tools",
                &self
                    .config
                    .tools
                    .iter()
                    .map(|t| &t.spec.name)
                    .collect::<Vec<_>>(),
            )
            .field("approvals", &self.config.approvals)
            .finish_non_exhaustive()
    }
}

impl ModelAgentBuilder {
    #[allow(dead_code)]
    pub(crate) fn new(api: Api, base_url: String, model: String) -> Self {
        ModelAgentBuilder {
            api,
            config: Config {
                base_url: base_url.trim_end_matches('/').to_owned(),
                model,
                api_key: None,
                params: Map::new(),
                forwardable: Vec::new(),
                system_prompt: None,
                tools: Vec::new(),
                approvals: Vec::new(),
                expose_state: false,
                max_steps: 8,
                retries: 3,
                backoff: Duration::from_millis(500),
                max_backoff: Duration::from_secs(20),
                read_timeout: Duration::from_secs(120),
                error_body_timeout: Duration::from_secs(10),
                max_event: 4 << 20,
                max_answer_bytes: 32 << 20,
                answer_deadline: Duration::from_secs(600),
                max_tool_arguments: 1 << 20,
                client: reqwest::Client::new(),
                description: None,
                #[cfg(feature = "mcp")]
                mcp_servers: Vec::new(),
                #[cfg(feature = "mcp")]
                mcp_limits: McpLimits::default(),
                #[cfg(feature = "mcp")]
                mcp: None,
            },
            connect_timeout: Duration::from_secs(10),
            error: None,
            thinking: None,
            effort: None,
        }
    }

    /// How the model thinks (Anthropic Messages only: building a chat-completions agent
    /// with it fails; there, reasoning is a model parameter such as
    /// `reasoning_effort`). A budget must be below `max_tokens`, checked at build.
    pub fn thinking(mut self, thinking: Thinking) -> Self {
        self.thinking = Some(thinking);
        self
    }

    /// How much an OpenAI reasoning model reasons: for the Responses API
    /// `reasoning.effort`, for chat completions the parameter `reasoning_effort`.
    /// Building an Anthropic Messages agent with it fails (there, configure
    /// [`ModelAgentBuilder::thinking`]).
    pub fn reasoning_effort(mut self, effort: Effort) -> Self {
        self.effort = Some(effort);
        self
    }

    /// The most tokens one answer may have (`max_tokens`, a model parameter; sent to
    /// the Responses API as `max_output_tokens`).
    pub fn max_tokens(self, n: u64) -> Self {
        self.param("max_tokens", json!(n))
    }

    /// The API key (never logged), sent as the provider API wants it: for chat
    /// completions and Responses `Authorization: Bearer …`, for Anthropic Messages
    /// `x-api-key`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.config.api_key = Some(key.into());
        self
    }

    /// A fixed model parameter (`temperature`, `max_tokens`, `top_p`, …) sent with every
    /// request.
    pub fn param(mut self, name: &str, value: Value) -> Self {
        self.config.params.insert(name.to_owned(), value);
        self
    }

    /// Lets a run set these parameters through its `forwardedProps` (top-level keys of
    /// the same names). Only sampling parameters ([`FORWARDABLE_PARAMS`]) may be named:
    /// a run never chooses the model, the endpoint or a key.
    pub fn forward_params(mut self, names: &[&str]) -> Self {
        for n in names {
            if FORWARDABLE_PARAMS.contains(n) {
                self.config.forwardable.push((*n).to_owned());
            } else {
                self.error = Some(format!(
                    "parameter {n:?} cannot be forwarded from a run (allowed: {})",
                    FORWARDABLE_PARAMS.join(", ")
                ));
            }
        }
        self
    }

    /// A system prompt sent first.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.config.system_prompt = Some(prompt.into());
        self
    }

    /// A server-side tool: `run` gets its arguments as `A` (whose JSON Schema, derived
    /// with `schemars`, is what the model is shown) and the run's [`ToolContext`].
    /// Arguments that do not fit `A` are answered to the model as an error.
    pub fn tool<A, F, Fut>(mut self, name: &str, description: &str, run: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, String>> + Send + 'static,
    {
        let schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(json!({}));
        let mut parameters = schema;
        if let Some(o) = parameters.as_object_mut() {
            o.remove("$schema");
            o.remove("title");
        }
        let run = Arc::new(run);
        let tool: ToolFn = Arc::new(move |args: Value, ctx: ToolContext| {
            let run = run.clone();
            Box::pin(async move {
                let args: A =
                    serde_json::from_value(args).map_err(|e| format!("invalid arguments: {e}"))?;
                run(args, ctx).await
            }) as ToolFuture
        });
        self.config.tools.retain(|t| t.spec.name != name);
        self.config.tools.push(ServerTool {
            spec: ToolSpec {
                name: name.to_owned(),
                description: description.to_owned(),
                parameters,
            },
            run: tool,
        });
        self
    }

    /// Makes the calls of the tool the model sees as `name` (a server-side tool, or an
    /// MCP server's tool by the name it is offered under) wait for a user's approval
    /// as `approval` says: such a call is not run, and the run ends with `RUN_FINISHED`
    /// outcome `interrupt`, one interrupt per waiting call (see the
    /// [crate docs](crate#approvals)). Naming the same tool again replaces its policy.
    /// Without an MCP server, a name that is not a server-side tool fails the build.
    pub fn approve_tool(mut self, name: &str, approval: Approval) -> Self {
        self.config.approvals.retain(|(n, _)| n != name);
        self.config.approvals.push((name.to_owned(), approval));
        self
    }

    /// Makes the calls of every server-side tool of the agent, its MCP servers' tools
    /// included, wait for approval as `approval` says (a tool also named by
    /// [`approve_tool`](Self::approve_tool) waits when either policy says so).
    pub fn approve_all_tools(self, approval: Approval) -> Self {
        self.approve_tool(EVERY_TOOL, approval)
    }

    /// Shows the shared state to the model (a system message with its JSON).
    pub fn expose_state(mut self, on: bool) -> Self {
        self.config.expose_state = on;
        self
    }

    /// Most model calls in one run (default 8): server-side tool rounds stop there,
    /// with `RUN_ERROR` code `max_steps`.
    pub fn max_steps(mut self, n: usize) -> Self {
        self.config.max_steps = n.max(1);
        self
    }

    /// Retries of a `429`/`5xx` answer or a failed connection, before the first token
    /// (default 3), and the ceiling of the first pause (default 500 ms, doubling, at
    /// most 20 s, with full jitter; a `Retry-After` takes its place, up to that bound).
    pub fn retries(mut self, n: u32, first_backoff: Duration) -> Self {
        self.config.retries = n;
        self.config.backoff = first_backoff;
        self
    }

    /// Longest wait for the connection (default 10 s).
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }

    /// Longest wait for the answer's head, then for its first piece of content and
    /// between two pieces (default 120 s). A piece of content is an SSE data event:
    /// comments (`: keep-alive`), blank lines and a part of an event do not count, so
    /// an endpoint sending only those ends the run with `RUN_ERROR` code
    /// `upstream_timeout` after this long.
    pub fn read_timeout(mut self, t: Duration) -> Self {
        self.config.read_timeout = t;
        self
    }

    /// The longest the body of an error answer (a `4xx`/`5xx`) may take to read, in all
    /// (default 10 s): however slowly it trickles, the request is then given up (and
    /// retried, when its status is retried). At most
    /// [`MAX_ERROR_BODY`](agui_sdk_client::endpoint::MAX_ERROR_BODY) bytes of it are
    /// read.
    pub fn error_body_timeout(mut self, t: Duration) -> Self {
        self.config.error_body_timeout = t;
        self
    }

    /// The most bytes one answer of the model may have (default 32 MiB); past it the
    /// run ends with `RUN_ERROR` code `upstream_too_large`, what came kept.
    pub fn max_answer_bytes(mut self, n: usize) -> Self {
        self.config.max_answer_bytes = n;
        self
    }

    /// The longest one answer of the model may take, from the request to its last byte
    /// (default 10 minutes), however it trickles; past it the run ends with `RUN_ERROR`
    /// code `upstream_timeout`, what came kept.
    pub fn answer_deadline(mut self, d: Duration) -> Self {
        self.config.answer_deadline = d;
        self
    }

    /// The largest arguments one tool call may have (default 1 MiB), checked as they
    /// stream, before anything parses them; past it the run ends with `RUN_ERROR` code
    /// `tool_arguments_too_large`.
    pub fn max_tool_arguments(mut self, n: usize) -> Self {
        self.config.max_tool_arguments = n;
        self
    }

    /// An MCP server whose tools are offered to the model beside the agent's
    /// server-side tools and the run's frontend tools (feature `mcp`). The server is
    /// started (or connected to) at the first run, and reused by the runs after; see
    /// [`McpServer`] for the naming rule on a clash and [`McpLimits`] for the bounds.
    #[cfg(feature = "mcp")]
    pub fn mcp_server(mut self, server: McpServer) -> Self {
        self.config.mcp_servers.push(server);
        self
    }

    /// The bounds on what the MCP servers send (feature `mcp`; defaults:
    /// [`McpLimits::default`]).
    #[cfg(feature = "mcp")]
    pub fn mcp_limits(mut self, limits: McpLimits) -> Self {
        self.config.mcp_limits = limits;
        self
    }

    /// The agent's description (its capabilities' identity).
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.config.description = Some(d.into());
        self
    }

    /// Builds the agent.
    pub fn build(mut self) -> Result<FnAgent, ConfigError> {
        if let Some(e) = self.error {
            return Err(ConfigError(e));
        }
        if self.config.base_url.is_empty() || self.config.model.is_empty() {
            return Err(ConfigError("an endpoint URL and a model are needed".into()));
        }
        self.check_thinking()?;
        self.check_effort()?;
        self.check_approvals()?;
        #[cfg(feature = "mcp")]
        if !self.config.mcp_servers.is_empty() {
            let servers = std::mem::take(&mut self.config.mcp_servers);
            self.config.mcp = Some(Arc::new(mcp::McpSources::new(
                servers,
                self.config.mcp_limits.clone(),
            )?));
        }
        // No redirect is followed: the key goes to the configured endpoint's origin and
        // nowhere else (a `3xx` answer fails the run, naming where it pointed).
        self.config.client = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError(format!("cannot build the HTTP client: {e}")))?;
        let config = Arc::new(self.config);
        let description = config.description.clone();
        let agent: FnAgent = match self.api {
            #[cfg(feature = "chat")]
            Api::Chat => agent(config, chat::Chat),
            #[cfg(feature = "anthropic")]
            Api::Anthropic => agent(
                config,
                anthropic::Anthropic {
                    thinking: self.thinking,
                },
            ),
            #[cfg(feature = "responses")]
            Api::Responses => agent(
                config,
                responses::Responses {
                    effort: self.effort,
                },
            ),
        };
        Ok(match description {
            Some(d) => agent.with_capabilities(agui_sdk_core::AgentCapabilities {
                identity: Some(agui_sdk_core::IdentityCapabilities {
                    description: Some(d),
                    ..Default::default()
                }),
                tools: Some(agui_sdk_core::ToolsCapabilities {
                    supported: Some(true),
                    client_provided: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            None => agent,
        })
    }
}

impl ModelAgentBuilder {
    /// Thinking is for the Messages API, and its budget fits in `max_tokens`.
    #[cfg_attr(not(feature = "anthropic"), allow(unused_variables))]
    fn check_thinking(&self) -> Result<(), ConfigError> {
        let Some(thinking) = self.thinking else {
            return Ok(());
        };
        match self.api {
            #[cfg(feature = "chat")]
            Api::Chat => Err(ConfigError(
                "thinking (ModelAgentBuilder::thinking) is configured for the Anthropic Messages API only; for chat completions set a model parameter such as reasoning_effort".into(),
            )),
            #[cfg(feature = "responses")]
            Api::Responses => Err(ConfigError(
                "thinking (ModelAgentBuilder::thinking) is configured for the Anthropic Messages API only; for the Responses API set ModelAgentBuilder::reasoning_effort".into(),
            )),
            #[cfg(feature = "anthropic")]
            Api::Anthropic => {
                let Thinking::Budget(budget) = thinking else {
                    return Ok(());
                };
                let max = match self.config.params.get("max_tokens") {
                    None => anthropic::DEFAULT_MAX_TOKENS,
                    Some(v) => v.as_u64().ok_or_else(|| {
                        ConfigError(format!("max_tokens must be a whole number of tokens, not {v}"))
                    })?,
                };
                if budget < 1024 {
                    return Err(ConfigError(format!(
                        "the thinking budget ({budget} tokens) must be at least 1024 tokens"
                    )));
                }
                if u64::from(budget) >= max {
                    return Err(ConfigError(format!(
                        "max_tokens ({max}) must be above the thinking budget ({budget} tokens): raise it with ModelAgentBuilder::max_tokens"
                    )));
                }
                Ok(())
            }
        }
    }
}

/// The name under which [`ModelAgentBuilder::approve_all_tools`] keeps its policy (no
/// provider allows it in a tool's name).
pub(crate) const EVERY_TOOL: &str = "*";

impl ModelAgentBuilder {
    /// Each tool named for approval exists, unless an MCP server may offer it (its
    /// tools are known at the first run only).
    fn check_approvals(&self) -> Result<(), ConfigError> {
        #[cfg(feature = "mcp")]
        if !self.config.mcp_servers.is_empty() {
            return Ok(());
        }
        for (name, _) in &self.config.approvals {
            if name != EVERY_TOOL && !self.config.tools.iter().any(|t| t.spec.name == *name) {
                return Err(ConfigError(format!(
                    "approve_tool names {name:?}, which is not a server-side tool of the agent"
                )));
            }
        }
        Ok(())
    }
}

impl ModelAgentBuilder {
    /// A reasoning effort is for OpenAI's APIs; for chat completions it is the
    /// parameter `reasoning_effort`.
    #[cfg_attr(not(feature = "chat"), allow(unused_variables))]
    fn check_effort(&mut self) -> Result<(), ConfigError> {
        let Some(effort) = self.effort else {
            return Ok(());
        };
        match self.api {
            #[cfg(feature = "chat")]
            Api::Chat => {
                self.config
                    .params
                    .entry("reasoning_effort")
                    .or_insert_with(|| json!(effort.as_str()));
                Ok(())
            }
            #[cfg(feature = "responses")]
            Api::Responses => Ok(()),
            #[cfg(feature = "anthropic")]
            Api::Anthropic => Err(ConfigError(
                "a reasoning effort (ModelAgentBuilder::reasoning_effort) is for OpenAI's APIs; for Anthropic Messages configure ModelAgentBuilder::thinking".into(),
            )),
        }
    }
}
