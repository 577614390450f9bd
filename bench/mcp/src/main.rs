//! `mcp-bench [SERVER_BIN] [CALLS]`: the latency an MCP tool call adds in the model
//! agent's loop over calling the same server directly with rmcp (stdio,
//! `@modelcontextprotocol/server-everything`'s `echo`), and the agent's memory per
//! connected MCP server. See README.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_agent::{Agent, RunContext};
use agui_sdk_core::{Event, Message, RunAgentInput};
use agui_sdk_model::{McpServer, ModelAgent, ToolContext, ToolResult};
use agui_sdk_server::axum;
use futures_util::StreamExt;
use rmcp::ServiceExt;
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

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args
        .next()
        .unwrap_or_else(|| "../../interop/node_modules/.bin/mcp-server-everything".to_owned());
    let calls: usize = args.next().map_or(1000, |n| n.parse().unwrap());
    let warm = 50;

    // 1. rmcp directly.
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
    let server_pid = child.id().unwrap();
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
    let server_rss = vm_rss_kib(server_pid);
    let client = Arc::new(client);

    // 2. Runs of two agents alike (the MCP server's tools, and a closure `echo_direct`
    //    calling the same server's `echo` with rmcp directly, on a client of its own):
    //    the model `mcp` calls the MCP `echo`, the model `direct` the closure.
    let url = upstream().await;
    let make = |model: &str| {
        let client = client.clone();
        ModelAgent::chat_completions(&url, model)
            .mcp_server(McpServer::stdio(&bin, ["stdio"]).env("PATH", path()))
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
    println!("{calls} calls of server-everything's echo over stdio, after {warm} to warm up:");
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
    println!("server-everything's own RSS (node): {server_rss} KiB");
    drop(mcp_agent);
    drop(direct_agent);

    // 3. The agent's memory per connected server (its side: client, pipes, buffers;
    //    the servers' own processes are not counted).
    let n = 20;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/agui-sdk-model/tests/it/mcp_servers/hostile.py");
    let before = rss_kib();
    let mut b = ModelAgent::chat_completions(&url, "m");
    for i in 0..n {
        b = b.mcp_server(
            McpServer::stdio(
                "python3",
                [script.to_string_lossy().into_owned(), "clash".into()],
            )
            .name(&format!("s{i}"))
            .env("PATH", path()),
        );
    }
    let many = Arc::new(b.build().unwrap());
    let _ = one_run(&*many, 0).await;
    let after = rss_kib();
    println!(
        "agent-side memory per connected stdio MCP server: {:.0} KiB ({n} servers, RSS {before} → {after} KiB)",
        (after.saturating_sub(before)) as f64 / n as f64
    );
}
