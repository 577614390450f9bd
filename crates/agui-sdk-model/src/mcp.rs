//! Tools from MCP servers (feature `mcp`), on `rmcp`'s client.
//!
//! A server is started (stdio) or connected to (Streamable HTTP) at the first run that
//! needs it, and reused by every later run; its tools are listed then, and again when
//! it says its list changed. A server that died, or could not be started, is started
//! again at a later run, no sooner than its backoff allows (500 ms, doubling, at most
//! 30 s); until then the runs go on without its tools.
//!
//! Names: an MCP tool is offered under its own name unless another tool of the run (a
//! server-side tool, a frontend tool, or another MCP server's tool) has that name; then
//! it is offered as `<server>__<tool>` (the server's [`McpServer::name`]). A tool whose
//! name (prefixed or not) still clashes, or does not fit `[A-Za-z0-9_-]{1,64}` (what
//! the provider APIs take), is not offered, and a warning names it.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_core::types::{Content, ContentPart};
use agui_sdk_core::Escaped;
use rmcp::model::{CallToolRequestParams, ClientRequest, PaginatedRequestParams, ServerResult};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::sync::Mutex;

use crate::provider::ToolSpec;
use crate::ConfigError;

/// An MCP server whose tools the model agent offers the model
/// ([`ModelAgentBuilder::mcp_server`](crate::ModelAgentBuilder::mcp_server)).
///
/// ```no_run
/// use agui_sdk_model::{McpServer, ModelAgent};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = ModelAgent::chat_completions("https://api.openai.com/v1", "gpt-4o-mini")
///     .api_key(std::env::var("OPENAI_API_KEY")?)
///     .mcp_server(McpServer::stdio("mcp-server-everything", ["stdio"]).env("PATH", "/usr/bin:/bin"))
///     .mcp_server(McpServer::http("https://mcp.example.com/mcp").header("Authorization", "Bearer …"))
///     .build()?;
/// # let _ = agent;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    name: String,
    transport: TransportConfig,
}

#[derive(Clone)]
enum TransportConfig {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("McpServer");
        d.field("name", &self.name);
        match &self.transport {
            TransportConfig::Stdio { command, args, env } => d
                .field("command", command)
                .field("args", args)
                // The values may be credentials: only the names are shown.
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>()),
            TransportConfig::Http { url, headers } => d
                .field("url", &agui_sdk_client::endpoint::redact_url(url))
                // Credentials: only the names are shown.
                .field(
                    "headers",
                    &headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                ),
        };
        d.finish()
    }
}

impl McpServer {
    /// A server the agent starts as `command` with `args`, speaking MCP on its stdin
    /// and stdout (its stderr is discarded). It gets only the environment variables
    /// given with [`McpServer::env`], never the agent's: give it `PATH` if its command
    /// needs one (a script starting with `#!/usr/bin/env node` does). Its name is the
    /// file name of `command` unless set with [`McpServer::name`].
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let command = command.into();
        let name = std::path::Path::new(&command)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| command.clone());
        McpServer {
            name: plain_name(&name),
            transport: TransportConfig::Stdio {
                command,
                args: args.into_iter().map(Into::into).collect(),
                env: Vec::new(),
            },
        }
    }

    /// A server at `url` speaking MCP's Streamable HTTP transport (e.g.
    /// `https://mcp.example.com/mcp`). Its name is the URL's host unless set with
    /// [`McpServer::name`].
    pub fn http(url: impl Into<String>) -> Self {
        let url = url.into();
        let host = url
            .split_once("://")
            .map_or(url.as_str(), |(_, rest)| rest)
            .split(['/', '?', '#'])
            .next()
            .unwrap_or("")
            .rsplit('@')
            .next()
            .unwrap_or("")
            .split(':')
            .next()
            .unwrap_or("")
            .to_owned();
        McpServer {
            name: plain_name(&host),
            transport: TransportConfig::Http {
                url,
                headers: Vec::new(),
            },
        }
    }

    /// An environment variable the stdio server gets (its value is never logged);
    /// nothing for an HTTP server.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportConfig::Stdio { env, .. } = &mut self.transport {
            env.push((name.into(), value.into()));
        }
        self
    }

    /// A header sent with every request to the HTTP server (`Authorization: Bearer
    /// …`; its value is never logged); nothing for a stdio server. A name or value
    /// HTTP does not allow fails the agent's build.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportConfig::Http { headers, .. } = &mut self.transport {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// The server's name: what its tools are prefixed with on a clash
    /// (`<server>__<tool>`) and how logs and errors name it. Characters outside
    /// `[A-Za-z0-9_-]` become `_`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = plain_name(name);
        self
    }

    /// The server's name (see [`McpServer::name`]).
    pub fn server_name(&self) -> &str {
        &self.name
    }
}

/// `name` with every character outside `[A-Za-z0-9_-]` made `_`.
fn plain_name(name: &str) -> String {
    let n: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if n.is_empty() {
        "mcp".to_owned()
    } else {
        n
    }
}

/// Whether the provider APIs take `name` as a tool's name.
fn fits(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The bounds on what MCP servers send
/// ([`ModelAgentBuilder::mcp_limits`](crate::ModelAgentBuilder::mcp_limits)); each is on
/// by default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpLimits {
    /// The longest one tool call may take (default 60 s); past it the call is a tool
    /// error the model is told of, and the server is sent a cancellation.
    pub call_timeout: Duration,
    /// The longest starting a server and listing its tools may take (default 30 s).
    pub start_timeout: Duration,
    /// The most bytes of one call's result (its text and its media's base64 together,
    /// default 1 MiB); a larger result is a tool error.
    pub max_result_bytes: usize,
    /// The most bytes of one message from a stdio server (default 4 MiB); a larger one
    /// closes the connection (the call is a tool error, the server is started again at
    /// a later run).
    pub max_message_bytes: usize,
    /// The most tools offered from one server (default 128); past it the rest are not
    /// listed, and a warning says how many were left out.
    pub max_tools: usize,
    /// The most bytes of one tool's description and JSON Schema together (default
    /// 64 KiB); a larger tool is not offered, and a warning names it.
    pub max_schema_bytes: usize,
}

impl Default for McpLimits {
    fn default() -> Self {
        McpLimits {
            call_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(30),
            max_result_bytes: 1 << 20,
            max_message_bytes: 4 << 20,
            max_tools: 128,
            max_schema_bytes: 64 << 10,
        }
    }
}

/// One progress notification: progress, total, message.
type Progress = (f64, Option<f64>, Option<String>);

/// The calls waiting for progress, by their progress token's JSON.
type ProgressRoutes = Arc<std::sync::Mutex<HashMap<String, tokio::sync::mpsc::Sender<Progress>>>>;

/// What the client's handler is told by the server.
#[derive(Clone, Default)]
struct Handler {
    /// Set when the server says its tool list changed.
    changed: Arc<AtomicBool>,
    progress: ProgressRoutes,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        let route = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        if let Some(route) = route {
            // Progress is a hint: a call whose queue is full loses the notification.
            let _ = route.try_send((params.progress, params.total, params.message));
        }
    }
}

/// A tool as a server listed it.
#[derive(Debug, Clone)]
struct Listed {
    name: String,
    spec: ToolSpec,
}

/// A live connection.
struct Conn {
    service: RunningService<RoleClient, Handler>,
    changed: Arc<AtomicBool>,
    progress: ProgressRoutes,
    /// The tools as last listed (runs in flight keep the list they were offered).
    tools: std::sync::Mutex<Arc<Vec<Listed>>>,
    /// When it was made.
    started: Instant,
    /// The stdio server's process, killed when the connection is dropped.
    _child: Option<tokio::process::Child>,
}

struct SourceState {
    conn: Option<Arc<Conn>>,
    failures: u32,
    not_before: Option<Instant>,
}

struct Source {
    server: McpServer,
    state: Mutex<SourceState>,
}

/// Every MCP server of an agent.
pub(crate) struct McpSources {
    sources: Vec<Source>,
    limits: McpLimits,
}

/// An MCP tool as offered in one run.
pub(crate) struct Offered {
    /// The name the model sees.
    pub name: String,
    source: usize,
    /// The server's name of the tool.
    tool: String,
    conn: Arc<Conn>,
}

/// An MCP call's outcome.
pub(crate) struct Outcome {
    /// What `TOOL_CALL_RESULT` carries.
    pub content: Content,
    /// What the model is told.
    pub for_model: String,
}

impl McpSources {
    pub(crate) fn new(servers: Vec<McpServer>, limits: McpLimits) -> Result<Self, ConfigError> {
        let mut names = HashSet::new();
        for s in &servers {
            if let TransportConfig::Http { url, headers } = &s.transport {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ConfigError(format!(
                        "the MCP server {:?}: its URL {} is not http:// or https://",
                        s.name,
                        agui_sdk_client::endpoint::redact_url(url)
                    )));
                }
                header_map(headers)
                    .map_err(|e| ConfigError(format!("the MCP server {:?}: {e}", s.name)))?;
            }
            if !names.insert(s.name.clone()) {
                return Err(ConfigError(format!(
                    "two MCP servers are named {:?}: name one with McpServer::name",
                    s.name
                )));
            }
        }
        Ok(McpSources {
            sources: servers
                .into_iter()
                .map(|server| Source {
                    server,
                    state: Mutex::new(SourceState {
                        conn: None,
                        failures: 0,
                        not_before: None,
                    }),
                })
                .collect(),
            limits,
        })
    }

    /// The MCP tools offered in a run whose other tools are named `taken`, by the name
    /// the model sees, with their specs.
    pub(crate) async fn offer(&self, taken: &HashSet<String>) -> (Vec<Offered>, Vec<ToolSpec>) {
        let mut per_source = Vec::new();
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(conn) = self.connection(s).await {
                let tools = conn.tools.lock().unwrap_or_else(|e| e.into_inner()).clone();
                per_source.push((i, conn, tools));
            }
        }
        // How many servers list each name.
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (_, _, tools) in &per_source {
            for t in tools.iter() {
                *count.entry(t.name.as_str()).or_default() += 1;
            }
        }
        let mut offered = Vec::new();
        let mut specs = Vec::new();
        let mut used: HashSet<String> = HashSet::new();
        for (i, conn, tools) in &per_source {
            let server = &self.sources[*i].server.name;
            for t in tools.iter() {
                let clash = taken.contains(&t.name) || count[t.name.as_str()] > 1;
                let name = if clash {
                    format!("{server}__{}", t.name)
                } else {
                    t.name.clone()
                };
                if !fits(&name) || taken.contains(&name) || used.contains(&name) {
                    tracing::warn!(
                        server = %Escaped(server),
                        tool = %Escaped(&t.name),
                        offered_as = %Escaped(&name),
                        "an MCP tool is not offered: its name clashes with another tool's, or is not made of 1 to 64 letters, digits, _ and -"
                    );
                    continue;
                }
                if clash {
                    tracing::info!(
                        server = %Escaped(server),
                        tool = %Escaped(&t.name),
                        offered_as = %Escaped(&name),
                        "an MCP tool's name clashes with another tool's: offered with its server's prefix"
                    );
                }
                used.insert(name.clone());
                let mut spec = t.spec.clone();
                spec.name = name.clone();
                specs.push(spec);
                offered.push(Offered {
                    name,
                    source: *i,
                    tool: t.name.clone(),
                    conn: conn.clone(),
                });
            }
        }
        (offered, specs)
    }

    /// The source's live connection (started, or listed again, as needed), or `None`
    /// while it cannot be had.
    async fn connection(&self, s: &Source) -> Option<Arc<Conn>> {
        let mut st = s.state.lock().await;
        if let Some(conn) = st.conn.clone() {
            if conn.service.peer().is_transport_closed() {
                // A server that keeps dying is started again no sooner than its
                // backoff after its last start.
                let lived = conn.started.elapsed();
                if lived > STABLE {
                    st.failures = 0;
                }
                let pause = backoff(st.failures);
                st.failures = st.failures.saturating_add(1);
                st.not_before = Some(conn.started + pause);
                tracing::warn!(server = %Escaped(&s.server.name), lived = ?lived, "an MCP server's connection closed: it is started again");
                st.conn = None;
            } else if conn.changed.swap(false, Ordering::SeqCst) {
                let listed = tokio::time::timeout(
                    self.limits.start_timeout,
                    list_tools(&conn.service, &s.server.name, &self.limits),
                )
                .await;
                match listed {
                    Ok(Ok(tools)) => {
                        tracing::info!(server = %Escaped(&s.server.name), tools = tools.len(), "an MCP server's tools are listed again");
                        *conn.tools.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(tools);
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(server = %Escaped(&s.server.name), error = %Escaped(&e), "an MCP server's tools could not be listed again: the old list is kept");
                    }
                    Err(_) => {
                        tracing::warn!(server = %Escaped(&s.server.name), "an MCP server did not list its tools in time: the old list is kept");
                    }
                }
            }
        }
        if st.conn.is_none() {
            if st.not_before.is_some_and(|t| Instant::now() < t) {
                return None;
            }
            let started =
                tokio::time::timeout(self.limits.start_timeout, connect(&s.server, &self.limits))
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!(
                            "it did not start and list its tools within {:?}",
                            self.limits.start_timeout
                        ))
                    });
            match started {
                Ok(conn) => {
                    tracing::info!(server = %Escaped(&s.server.name), "an MCP server is connected");
                    // The failures count on until a connection lives long (see
                    // STABLE): a server that starts, then dies at once, backs off.
                    st.not_before = None;
                    st.conn = Some(Arc::new(conn));
                }
                Err(e) => {
                    let pause = backoff(st.failures);
                    st.failures = st.failures.saturating_add(1);
                    st.not_before = Some(Instant::now() + pause);
                    tracing::warn!(server = %Escaped(&s.server.name), error = %Escaped(&e), retry_in = ?pause, "an MCP server could not be started: the run goes on without its tools");
                    return None;
                }
            }
        }
        st.conn.clone()
    }

    /// Calls `tool` with the model's `arguments` for the call `call_id`, its progress
    /// notifications sent as `ACTIVITY_SNAPSHOT`s; every failure is an outcome the model
    /// is told of (the error is the client's leaving).
    pub(crate) async fn call(
        &self,
        tool: &Offered,
        call_id: &str,
        arguments: &str,
        tx: &agui_sdk_agent::Emitter,
    ) -> Result<Outcome, agui_sdk_agent::AgentError> {
        let server = &self.sources[tool.source].server.name;
        let args: Value = if arguments.trim().is_empty() {
            json!({})
        } else {
            match serde_json::from_str(arguments) {
                Ok(v) => v,
                Err(e) => return Ok(error_outcome(format!("the arguments are not JSON: {e}"))),
            }
        };
        let Value::Object(args) = args else {
            return Ok(error_outcome(
                "the arguments are not a JSON object".to_owned(),
            ));
        };
        let params: CallToolRequestParams =
            match serde_json::from_value(json!({ "name": tool.tool, "arguments": args })) {
                Ok(p) => p,
                Err(e) => return Ok(error_outcome(format!("the call cannot be made: {e}"))),
            };
        let peer = tool.conn.service.peer().clone();
        let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let handle = match peer
            .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await
        {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(server = %Escaped(server), tool = %Escaped(&tool.tool), error = %Escaped(&e.to_string()), "an MCP call could not be sent");
                return Ok(error_outcome(format!(
                    "the MCP server {server} could not be reached: {}",
                    short(&e.to_string())
                )));
            }
        };
        let id = handle.id.clone();
        let key = serde_json::to_string(&handle.progress_token).unwrap_or_default();
        let (ptx, mut prx) = tokio::sync::mpsc::channel::<Progress>(16);
        tool.conn
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), ptx);
        let routes = tool.conn.progress.clone();
        let _unroute = Unroute(routes, key);
        let response = tokio::time::timeout(self.limits.call_timeout, handle.await_response());
        tokio::pin!(response);
        // Progress goes out as it comes, at most one event per 20 ms (a flood of
        // notifications is thinned, never queued); what is left when the answer
        // comes goes out before the result.
        let mut last_progress: Option<Instant> = None;
        let answer = loop {
            tokio::select! {
                a = &mut response => break a,
                Some(p) = prx.recv() => {
                    if last_progress.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
                        continue;
                    }
                    last_progress = Some(Instant::now());
                    tx.emit(progress_event(call_id, server, &tool.tool, p)).await?;
                }
            }
        };
        while let Ok(p) = prx.try_recv() {
            tx.emit(progress_event(call_id, server, &tool.tool, p))
                .await?;
        }
        let result = match answer {
            Err(_) => {
                let _ = peer
                    .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
                        Some(id),
                        Some("timeout".to_owned()),
                    ))
                    .await;
                tracing::warn!(server = %Escaped(server), tool = %Escaped(&tool.tool), timeout = ?self.limits.call_timeout, "an MCP call timed out");
                return Ok(error_outcome(format!(
                    "the MCP server {server} did not answer within {} s",
                    self.limits.call_timeout.as_secs_f64()
                )));
            }
            Ok(Err(e)) => {
                tracing::warn!(server = %Escaped(server), tool = %Escaped(&tool.tool), error = %Escaped(&e.to_string()), "an MCP call failed");
                return Ok(error_outcome(format!(
                    "the MCP server {server} failed: {}",
                    short(&e.to_string())
                )));
            }
            Ok(Ok(ServerResult::CallToolResult(r))) => r,
            Ok(Ok(_)) => {
                return Ok(error_outcome(format!(
                "the MCP server {server} answered the call with something else than a tool result"
            )))
            }
        };
        let value = serde_json::to_value(&result).unwrap_or(Value::Null);
        Ok(convert(&value, self.limits.max_result_bytes, server))
    }
}

/// The least time between two progress events of one call.
const PROGRESS_EVERY: Duration = Duration::from_millis(20);

/// A progress notification as `ACTIVITY_SNAPSHOT` (`mcp_progress`).
fn progress_event(call_id: &str, server: &str, tool: &str, p: Progress) -> agui_sdk_core::Event {
    let (progress, total, message) = p;
    let mut content = Map::new();
    content.insert("toolCallId".into(), json!(call_id));
    content.insert("server".into(), json!(server));
    content.insert("tool".into(), json!(tool));
    content.insert("progress".into(), json!(progress));
    if let Some(t) = total {
        content.insert("total".into(), json!(t));
    }
    if let Some(m) = message {
        content.insert("message".into(), json!(short(&m)));
    }
    agui_sdk_core::Event::activity_snapshot(format!("{call_id}-progress"), "mcp_progress", content)
}

/// How long a connection must have lived for its death not to count as a failure.
const STABLE: Duration = Duration::from_secs(60);

/// The pause before the next start after `failures` failed or short-lived ones: 500 ms,
/// doubling, at most 30 s.
fn backoff(failures: u32) -> Duration {
    Duration::from_millis(500)
        .saturating_mul(1u32 << failures.min(6))
        .min(Duration::from_secs(30))
}

/// Removes a call's progress route when the call is over, however it ends.
struct Unroute(ProgressRoutes, String);

impl Drop for Unroute {
    fn drop(&mut self) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.1);
    }
}

/// A part of a tool result as a provider API takes it.
#[derive(Debug, PartialEq)]
pub(crate) enum ModelPart {
    Text(String),
    /// Inline base64 data.
    Image {
        mime: String,
        data: String,
    },
}

/// The parts of a result with media for an API whose tool results carry images: text,
/// images, and a note for any other medium. `None` for a text result.
pub(crate) fn model_parts(content: &Content) -> Option<Vec<ModelPart>> {
    let Content::Parts(parts) = content else {
        return None;
    };
    Some(
        parts
            .iter()
            .map(|p| {
                let v = serde_json::to_value(p).unwrap_or(Value::Null);
                match (v["type"].as_str(), v["source"]["type"].as_str()) {
                    (Some("text"), _) => ModelPart::Text(v["text"].as_str().unwrap_or("").to_owned()),
                    (Some("image"), Some("data")) => ModelPart::Image {
                        mime: v["source"]["mimeType"].as_str().unwrap_or("").to_owned(),
                        data: v["source"]["value"].as_str().unwrap_or("").to_owned(),
                    },
                    (kind, _) => ModelPart::Text(format!(
                        "[the tool returned {} content, shown to the user; it cannot be passed to the model]",
                        kind.unwrap_or("other")
                    )),
                }
            })
            .collect(),
    )
}

/// At most 300 characters of an error's text.
fn short(s: &str) -> String {
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn error_outcome(message: String) -> Outcome {
    let text = format!("error: {message}");
    Outcome {
        content: Content::Text(text.clone()),
        for_model: text,
    }
}

/// A `CallToolResult`'s JSON as what the client sees and what the model reads.
fn convert(result: &Value, max_bytes: usize, server: &str) -> Outcome {
    let empty = Vec::new();
    let blocks = result["content"].as_array().unwrap_or(&empty);
    let is_error = result["isError"].as_bool().unwrap_or(false);
    let mut size = 0usize;
    for b in blocks {
        for k in ["text", "data"] {
            size += b[k].as_str().map_or(0, str::len);
        }
        size += b["resource"]["text"].as_str().map_or(0, str::len);
        size += b["resource"]["blob"].as_str().map_or(0, str::len);
    }
    if blocks.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            size += s.to_string().len();
        }
    }
    if size > max_bytes {
        tracing::warn!(server = %Escaped(server), bytes = size, limit = max_bytes, "an MCP result is over the limit");
        return error_outcome(format!(
            "the MCP server {server} answered {size} bytes, over the limit of {max_bytes} bytes"
        ));
    }
    let mut parts: Vec<ContentPart> = Vec::new();
    let mut model: Vec<String> = Vec::new();
    let mut media = false;
    let note = |parts: &mut Vec<ContentPart>, model: &mut Vec<String>, t: String| {
        parts.push(ContentPart::text(t.clone()));
        model.push(t);
    };
    for b in blocks {
        let kind = b["type"].as_str().unwrap_or("");
        match kind {
            "text" => {
                let t = b["text"].as_str().unwrap_or("").to_owned();
                note(&mut parts, &mut model, t);
            }
            "image" | "audio" => {
                let mime = b["mimeType"].as_str().unwrap_or("application/octet-stream");
                let data = b["data"].as_str().unwrap_or("");
                let part: Option<ContentPart> = serde_json::from_value(json!({
                    "type": kind,
                    "source": { "type": "data", "value": data, "mimeType": mime },
                }))
                .ok();
                match part {
                    Some(p) => {
                        media = true;
                        parts.push(p);
                        model.push(format!(
                            "[the tool returned an {kind} ({mime}, {} bytes of base64), shown to the user; it cannot be passed to the model here]",
                                                        data.len()
                        ));
                    }
                    None => note(
                        &mut parts,
                        &mut model,
                        format!("[the tool returned {kind} content that cannot be shown]"),
                    ),
                }
            }
            "resource" => {
                let r = &b["resource"];
                let uri = r["uri"].as_str().unwrap_or("");
                if let Some(t) = r["text"].as_str() {
                    note(&mut parts, &mut model, t.to_owned());
                } else {
                    let mime = r["mimeType"].as_str().unwrap_or("application/octet-stream");
                    note(
                        &mut parts,
                        &mut model,
                        format!(
                            "[the tool returned the resource {uri} ({mime}, {} bytes of base64), which is not shown]",
                            r["blob"].as_str().map_or(0, str::len)
                        ),
                    );
                }
            }
            "resource_link" => {
                let uri = b["uri"].as_str().unwrap_or("");
                let name = b["name"].as_str().unwrap_or("");
                note(
                    &mut parts,
                    &mut model,
                    format!("[a link to the resource {name} at {uri}]"),
                );
            }
            other => note(
                &mut parts,
                &mut model,
                format!(
                    "[the tool returned a content part of type {:?}, which AG-UI cannot carry]",
                    short(other)
                ),
            ),
        }
    }
    if blocks.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            note(&mut parts, &mut model, s.to_string());
        }
    }
    let mut for_model = model.join("\n");
    let mut content = if media {
        Content::Parts(parts)
    } else {
        Content::Text(for_model.clone())
    };
    if is_error {
        for_model = format!("error: {for_model}");
        content = match content {
            Content::Text(t) => Content::Text(format!("error: {t}")),
            Content::Parts(mut p) => {
                p.insert(0, ContentPart::text("error:"));
                Content::Parts(p)
            }
        };
    }
    Outcome { content, for_model }
}

/// Starts and initializes the server, and lists its tools.
async fn connect(server: &McpServer, limits: &McpLimits) -> Result<Conn, String> {
    let handler = Handler::default();
    let changed = handler.changed.clone();
    let progress = handler.progress.clone();
    let (service, child) = match &server.transport {
        TransportConfig::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .env_clear()
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true);
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot start {command:?}: {e}"))?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err("the server's stdin and stdout are not piped".into());
            };
            // A line over the limit is a read error: the connection closes, the calls
            // in flight fail at once (rmcp alone would skip the line, and the call
            // would wait for its timeout).
            let stdout = LineCap {
                inner: stdout,
                line: 0,
                max: limits.max_message_bytes,
            };
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(stdout, stdin)
                .with_max_line_length(limits.max_message_bytes.saturating_add(2));
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| format!("the MCP handshake failed: {}", short(&e.to_string())))?;
            (service, Some(child))
        }
        TransportConfig::Http { url, headers } => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(header_map(headers)?)
                .max_sse_event_size(limits.max_message_bytes)
                .max_json_response_size(limits.max_message_bytes);
            let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| format!("the MCP handshake failed: {}", short(&e.to_string())))?;
            (service, None)
        }
    };
    let tools = list_tools(&service, &server.name, limits).await?;
    Ok(Conn {
        service,
        changed,
        progress,
        tools: std::sync::Mutex::new(Arc::new(tools)),
        started: Instant::now(),
        _child: child,
    })
}

/// The configured headers, checked (the error names the header, never its value).
fn header_map(
    headers: &[(String, String)],
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    let mut map = HashMap::new();
    for (k, v) in headers {
        let name = http::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("{:?} is not an HTTP header name", Escaped(k).to_string()))?;
        let mut value = http::HeaderValue::from_str(v)
            .map_err(|_| format!("the value of the header {name} is not a valid header value"))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

/// A stdio server's output, failing once a line (one message) is over `max` bytes, and
/// with every control byte JSON cannot hold raw (all below 0x20 but tab, line feed and
/// carriage return, and DEL) made `?`: a valid message is unchanged, and a line that
/// is not one (which `rmcp` logs at debug level) never carries a terminal escape.
struct LineCap<R> {
    inner: R,
    /// The bytes of the current line so far.
    line: usize,
    max: usize,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for LineCap<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            for b in &mut buf.filled_mut()[before..] {
                if (*b < 0x20 && !matches!(*b, b'\t' | b'\n' | b'\r')) || *b == 0x7f {
                    *b = b'?';
                }
                if *b == b'\n' {
                    this.line = 0;
                } else {
                    this.line += 1;
                    if this.line > this.max {
                        return std::task::Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("a message from the MCP server is over {} bytes", this.max),
                        )));
                    }
                }
            }
        }
        polled
    }
}

/// The server's tools, page by page, at most `max_tools`, each within the schema
/// bound.
async fn list_tools(
    service: &RunningService<RoleClient, Handler>,
    server: &str,
    limits: &McpLimits,
) -> Result<Vec<Listed>, String> {
    let mut out: Vec<Listed> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut left_out = 0usize;
    loop {
        let params: Option<PaginatedRequestParams> = match &cursor {
            None => None,
            Some(c) => serde_json::from_value(json!({ "cursor": c })).ok(),
        };
        let page = service
            .list_tools(params)
            .await
            .map_err(|e| format!("tools/list failed: {}", short(&e.to_string())))?;
        for t in page.tools {
            if out.len() >= limits.max_tools {
                left_out += 1;
                continue;
            }
            let name = t.name.to_string();
            let description = t.description.as_deref().unwrap_or("").to_owned();
            let mut parameters = Value::Object(Map::clone(&t.input_schema));
            if let Some(o) = parameters.as_object_mut() {
                o.remove("$schema");
            }
            let bytes = description.len() + parameters.to_string().len();
            if bytes > limits.max_schema_bytes {
                tracing::warn!(server = %Escaped(server), tool = %Escaped(&name), bytes, limit = limits.max_schema_bytes, "an MCP tool's description and schema are over the limit: it is not offered");
                continue;
            }
            out.push(Listed {
                name: name.clone(),
                spec: ToolSpec {
                    name,
                    description,
                    parameters,
                },
            });
        }
        cursor = page.next_cursor.map(|c| c.to_string());
        if cursor.is_none() || out.len() >= limits.max_tools {
            break;
        }
    }
    if left_out > 0 || cursor.is_some() {
        tracing::warn!(server = %Escaped(server), offered = out.len(), left_out, limit = limits.max_tools, more_pages = cursor.is_some(), "an MCP server lists more tools than the limit: the rest are not offered");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_text_parts_and_notes() {
        let r = json!({ "content": [
            { "type": "text", "text": "hi" },
            { "type": "image", "data": "aGk=", "mimeType": "image/png" },
            { "type": "hologram" },
        ]});
        let o = convert(&r, 1000, "s");
        let Content::Parts(p) = &o.content else {
            panic!("{:?}", o.content)
        };
        assert_eq!(p.len(), 3);
        assert!(matches!(p[1], ContentPart::Image(_)));
        assert!(o
            .for_model
            .starts_with("hi\n[the tool returned an image (image/png, 4 bytes"));
        assert!(o.for_model.contains("\"hologram\""));
        let o = convert(
            &json!({ "content": [{ "type": "text", "text": "x".repeat(11) }], "isError": true }),
            10,
            "s",
        );
        assert!(
            o.for_model.contains("over the limit of 10 bytes"),
            "{}",
            o.for_model
        );
        let o = convert(
            &json!({ "content": [{ "type": "text", "text": "bad" }], "isError": true }),
            10,
            "s",
        );
        assert_eq!(o.for_model, "error: bad");
        assert_eq!(o.content, Content::Text("error: bad".into()));
    }

    #[test]
    fn names() {
        assert_eq!(plain_name("a.b/c"), "a_b_c");
        assert!(fits("get-sum_2"));
        assert!(!fits("a.b"));
        assert!(!fits(&"x".repeat(65)));
    }
}
