//! Starting (or connecting to) a server, and listing its tools.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use agui_sdk_core::Escaped;
use rmcp::model::PaginatedRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Map, Value};

use super::{short, Conn, Handler, Listed, McpLimits, McpServer, TransportConfig};
use crate::provider::ToolSpec;

/// Starts and initializes the server, and lists its tools.
pub(super) async fn connect(server: &McpServer, limits: &McpLimits) -> Result<Conn, String> {
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
pub(super) fn header_map(
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
pub(super) async fn list_tools(
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
