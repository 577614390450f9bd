//! An MCP server's configuration, and the bounds on what MCP servers send.

use std::time::Duration;

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
    pub(super) name: String,
    pub(super) transport: TransportConfig,
}

#[derive(Clone)]
pub(super) enum TransportConfig {
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
pub(super) fn plain_name(name: &str) -> String {
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
pub(super) fn fits(name: &str) -> bool {
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
