//! `mcp-bench [SERVER_BIN] [CALLS]`: the latency an MCP tool call adds in the model
//! agent's loop over calling the same server directly with rmcp (stdio and Streamable
//! HTTP, `@modelcontextprotocol/server-everything`'s `echo`), and the agent's memory per
//! connected MCP server. See README.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_agent::{Agent, RunContext};
use agui_sdk_core::{Event, Message, RunAgentInput};
use agui_sdk_model::{McpServer, ModelAgent, ToolContext, ToolResult};
use agui_sdk_server::axum;
use futures_util::StreamExt;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

fn path() -> String {
    std::env::var("PATH").unwrap_or_default()
}

fn stats(name: &str, mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let median = us(v[v.len() / 2]);
    let p99 = us(v[(v.len() * 99 / 100).min(v.len() - 1)]);
    println!(
        "{name:<44} median {median:>9.1} µs   p99 {p99:>9.1} µs   (n = {})",
        v.len()
    );
    (median, p99)
}

/// A chat-completions upstream on loopback: a request without a tool result gets one
/// call of `echo`, one with a tool result the text `ok`.
async fn upstream() -> String {
    async fn answer(body: String) -> axum::response::Response {
        let body: Value = serde_json::from_str(&body).unwrap();
        // The model `direct` calls the closure `echo_direct`, any other the MCP `echo`.
        let tool = if body["model"] == "direct" {
            "echo_direct"
        } else {
            "echo"
        };
        let answered = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let chunk = |d: Value, fin: Option<&str>| {
            json!({ "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "choices": [{ "index": 0, "delta": d, "finish_reason": fin }] })
        };
        let chunks = if answered {
            vec![
                chunk(json!({ "role": "assistant", "content": "ok" }), None),
                chunk(json!({}), Some("stop")),
            ]
        } else {
            vec![
                chunk(
                    json!({ "role": "assistant", "content": null, "tool_calls": [{ "index": 0, "id": "call_1", "type": "function", "function": { "name": tool, "arguments": "{\"message\":\"hi\"}" } }] }),
                    None,
                ),
                chunk(json!({}), Some("tool_calls")),
            ]
        };
        let mut sse = String::new();
        for c in chunks {
            sse.push_str(&format!("data: {c}\n\n"));
        }
        sse.push_str("data: [DONE]\n\n");
        axum::response::Response::builder()
            .header("content-type", "text/event-stream")
            .body(axum::body::Body::from(sse))
            .unwrap()
    }
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

/// One run: its whole time, and the time from `TOOL_CALL_END` to `TOOL_CALL_RESULT`
/// (the tool call in the loop: arguments parsed, the call, its result converted and
/// emitted), as the events come out of the agent's stream.
async fn one_run(agent: &dyn Agent, i: usize) -> (Duration, Duration) {
    let input = RunAgentInput::new("t", format!("r{i}"), vec![Message::user("u", "go")]);
    let t0 = Instant::now();
    let mut stream = agent.run(input, RunContext::detached("t", format!("r{i}")));
    let (mut end, mut result, mut last) = (None, None, None);
    while let Some(e) = stream.next().await {
        let now = Instant::now();
        match &e {
            Ok(Event::ToolCallEnd(_)) => end = Some(now),
            Ok(Event::ToolCallResult(_)) => result = Some(now),
            _ => {}
        }
        last = Some(e);
    }
    let took = t0.elapsed();
    assert!(matches!(last, Some(Ok(Event::RunFinished(_)))), "{last:?}");
    (took, result.unwrap() - end.unwrap())
}

fn vm_rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

type Client = RunningService<RoleClient, ()>;

/// Rows 1 and 2 for one transport: `client` is rmcp's own client of the server,
/// `server` the same server as the agent's MCP server config.
async fn measure(
    transport: &str,
    client: Client,
    server: McpServer,
    url: &str,
    calls: usize,
    warm: usize,
) {
    // 1. rmcp directly.
    let params: rmcp::model::CallToolRequestParams =
        serde_json::from_value(json!({ "name": "echo", "arguments": { "message": "hi" } }))
            .unwrap();
    let mut direct = Vec::new();
    for i in 0..calls + warm {
        let t0 = Instant::now();
        let r = client.call_tool(params.clone()).await.unwrap();
        if i >= warm {
            direct.push(t0.elapsed());
        }
        assert!(!r.content.is_empty());
    }
    let client = Arc::new(client);

    // 2. Runs of two agents alike (the MCP server's tools, and a closure `echo_direct`
    //    calling the same server's `echo` with rmcp directly, on a client of its own):
    //    the model `mcp` calls the MCP `echo`, the model `direct` the closure.
    let make = |model: &str| {
        let client = client.clone();
        ModelAgent::chat_completions(url, model)
            .mcp_server(server.clone())
            .tool("echo_direct", "Echoes.", move |x: Echo, _: ToolContext| {
                let client = client.clone();
                async move {
                    let params: rmcp::model::CallToolRequestParams = serde_json::from_value(
                        json!({ "name": "echo", "arguments": { "message": x.message } }),
                    )
                    .map_err(|e| e.to_string())?;
                    let r = client.call_tool(params).await.map_err(|e| e.to_string())?;
                    Ok(ToolResult::text(serde_json::to_string(&r.content).unwrap()))
                }
            })
            .build()
            .unwrap()
    };
    let mcp_agent = make("mcp");
    let direct_agent = make("direct");
    let (mut runs_mcp, mut runs_direct, mut calls_mcp, mut calls_direct) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..calls + warm {
        let (a, ca) = one_run(&mcp_agent, i).await;
        let (b, cb) = one_run(&direct_agent, i).await;
        if i >= warm {
            runs_mcp.push(a);
            runs_direct.push(b);
            calls_mcp.push(ca);
            calls_direct.push(cb);
        }
    }
    println!(
        "{calls} calls of server-everything's echo over {transport}, after {warm} to warm up:"
    );
    stats("rmcp directly: one call", direct);
    stats("TOOL_CALL_END → RESULT, the agent's MCP path", calls_mcp);
    stats("TOOL_CALL_END → RESULT, rmcp in a closure", calls_direct);
    let (m50, m99) = stats("a whole run, the agent's MCP path", runs_mcp);
    let (d50, d99) = stats("a whole run, rmcp in a closure", runs_direct);
    println!(
        "what the agent's MCP path adds to a run over rmcp directly: median {:+.1} µs, p99 {:+.1} µs",
        m50 - d50,
        m99 - d99
    );
}

/// The resident memory one agent with `servers` connected (after one run) adds to the
/// bench process, per server. The agent is returned, to be kept: memory it frees would
/// otherwise be reused by the next agent and not show in its figure. What was freed
/// before is handed back to the system first, for the same reason.
async fn memory(what: &str, url: &str, servers: Vec<McpServer>) -> Arc<dyn Agent> {
    let n = servers.len();
    // SAFETY: glibc's malloc_trim only releases free heap memory.
    unsafe { libc::malloc_trim(0) };
    let before = rss_kib();
    let mut b = ModelAgent::chat_completions(url, "m");
    for s in servers {
        b = b.mcp_server(s);
    }
    let many: Arc<dyn Agent> = Arc::new(b.build().unwrap());
    let _ = one_run(&*many, 0).await;
    let after = rss_kib();
    println!(
        "agent-side memory per connected {what}: {:.0} KiB ({n} servers, RSS {before} → {after} KiB)",
        (after.saturating_sub(before)) as f64 / n as f64
    );
    many
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args
        .next()
        .unwrap_or_else(|| "../../interop/node_modules/.bin/mcp-server-everything".to_owned());
    let calls: usize = args.next().map_or(1000, |n| n.parse().unwrap());
    let warm = 50;
    let url = upstream().await;

    // stdio: rmcp's client on the server's pipes; the agent starts a server of its own.
    let mut child = tokio::process::Command::new(&bin)
        .arg("stdio")
        .env_clear()
        .env("PATH", path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
    );
    let client = ().serve(transport).await.unwrap();
    let stdio_pid = child.id().unwrap();
    let stdio_server = McpServer::stdio(&bin, ["stdio"]).env("PATH", path());
    measure("stdio", client, stdio_server, &url, calls, warm).await;
    println!(
        "server-everything's own RSS (node, stdio): {} KiB",
        vm_rss_kib(stdio_pid)
    );
    drop(child);

    // Streamable HTTP: one server process on a free loopback port; rmcp's client and
    // the agent's each open a session of their own on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = tokio::process::Command::new(&bin)
        .arg("streamableHttp")
        .env_clear()
        .env("PATH", path())
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http_pid = http.id().unwrap();
    let mut tries = 0;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        tries += 1;
        assert!(
            tries < 300,
            "server-everything does not listen on port {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mcp_url = format!("http://127.0.0.1:{port}/mcp");
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(mcp_url.as_str());
    let client = ().serve(transport).await.unwrap();
    measure(
        "Streamable HTTP",
        client,
        McpServer::http(&mcp_url),
        &url,
        calls,
        warm,
    )
    .await;
    println!(
        "server-everything's own RSS (node, Streamable HTTP, after the runs): {} KiB",
        vm_rss_kib(http_pid)
    );

    // The agent's memory per connected server (its side: client, pipes or HTTP
    // connections, buffers, the listed tools; the servers' own processes are not
    // counted).
    let n = 20;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/agui-sdk-model/tests/it/mcp_servers/hostile.py");
    let _hostile = memory(
        "stdio MCP server (hostile.py, 2 tools)",
        &url,
        (0..n)
            .map(|i| {
                McpServer::stdio(
                    "python3",
                    [script.to_string_lossy().into_owned(), "clash".into()],
                )
                .name(&format!("s{i}"))
                .env("PATH", path())
            })
            .collect(),
    )
    .await;
    // The same server as the HTTP sessions below, over stdio (20 node processes).
    let _everything = memory(
        "stdio MCP server (server-everything)",
        &url,
        (0..n)
            .map(|i| {
                McpServer::stdio(&bin, ["stdio"])
                    .name(&format!("e{i}"))
                    .env("PATH", path())
            })
            .collect(),
    )
    .await;
    let server_before = vm_rss_kib(http_pid);
    let _sessions = memory(
        "HTTP MCP server (server-everything sessions)",
        &url,
        (0..n)
            .map(|i| McpServer::http(&mcp_url).name(&format!("h{i}")))
            .collect(),
    )
    .await;
    println!(
        "server-everything's own RSS (node, Streamable HTTP) before and after {n} more sessions: {server_before} → {} KiB",
        vm_rss_kib(http_pid)
    );
}
