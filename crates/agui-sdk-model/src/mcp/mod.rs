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

mod connect;
mod content;
mod server;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_core::types::Content;
use agui_sdk_core::Escaped;
use rmcp::model::{CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Map, Value};
use tokio::sync::Mutex;

use crate::provider::ToolSpec;
use crate::ConfigError;

use connect::{connect, header_map, list_tools};
use content::{convert, error_outcome, short};
pub(crate) use content::{model_parts, ModelPart};
use server::{fits, TransportConfig};
pub use server::{McpLimits, McpServer};

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
