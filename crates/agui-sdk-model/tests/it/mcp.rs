//! Tools from MCP servers (feature `mcp`): the reference server
//! `@modelcontextprotocol/server-everything` (pinned in `interop/package.json`) over
//! stdio, and the hostile servers of `tests/it/mcp_servers/`, through the agent's loop
//! with a scripted chat-completions upstream. Each run's events pass the verifier.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agui_sdk_core::semantics::Verifier;
use agui_sdk_core::types::{Content, ContentPart};
use agui_sdk_core::{Event, Message, RunAgentInput};
use agui_sdk_model::{
    McpLimits, McpServer, ModelAgent, ModelAgentBuilder, ToolContext, ToolResult,
};
use axum::extract::State;
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::common::serve;
use crate::fake::{delta, finish, tool_delta};

/// The scripted upstream: each request's body is recorded; a request without a tool
/// message gets the planned calls, one with tool messages a text echoing the last one.
#[derive(Clone)]
struct Upstream {
    requests: Arc<Mutex<Vec<Value>>>,
    calls: Arc<Vec<(String, String)>>,
}

async fn answer(State(u): State<Upstream>, body: String) -> axum::response::Response {
    let body: Value = serde_json::from_str(&body).unwrap();
    u.requests.lock().unwrap().push(body.clone());
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let last_tool = msgs.iter().rev().find(|m| m["role"] == "tool");
    let chunks = match last_tool {
        Some(t) => vec![
            delta(json!({ "role": "assistant", "content": "" })),
            delta(json!({ "content": format!("got: {}", t["content"].as_str().unwrap_or("")) })),
            finish("stop"),
        ],
        None => {
            let mut c = vec![delta(json!({ "role": "assistant", "content": null }))];
            for (i, (name, args)) in u.calls.iter().enumerate() {
                c.push(tool_delta(
                    i as u32,
                    Some(&format!("call_{i}")),
                    Some(name),
                    args,
                ));
            }
            c.push(finish("tool_calls"));
            c
        }
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

/// The scripted upstream as Anthropic Messages: the planned calls as `tool_use`
/// blocks, then a text once the request has a `tool_result`.
#[cfg(feature = "anthropic")]
async fn answer_anthropic(State(u): State<Upstream>, body: String) -> axum::response::Response {
    use crate::fake_anthropic as fa;
    let body: Value = serde_json::from_str(&body).unwrap();
    u.requests.lock().unwrap().push(body.clone());
    let answered = body["messages"].as_array().is_some_and(|m| {
        m.iter().any(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
        })
    });
    let mut evs = vec![fa::message_start(
        json!({ "input_tokens": 1, "output_tokens": 1 }),
    )];
    let stop = if answered {
        evs.extend(fa::text_block(0, &["done"]));
        "end_turn"
    } else {
        for (i, (name, args)) in u.calls.iter().enumerate() {
            evs.extend(fa::tool_block(
                i as u32,
                &format!("toolu_{i}"),
                name,
                &[args],
            ));
        }
        "tool_use"
    };
    evs.push(fa::message_delta(stop, 2));
    evs.push(fa::message_stop());
    let mut sse = String::new();
    for (name, data) in evs {
        sse.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from(sse))
        .unwrap()
}

async fn upstream(calls: &[(&str, &str)]) -> (String, Upstream) {
    let u = Upstream {
        requests: Arc::default(),
        calls: Arc::new(
            calls
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
        ),
    };
    let app = axum::Router::new().route("/v1/chat/completions", post(answer));
    #[cfg(feature = "anthropic")]
    let app = app.route("/v1/messages", post(answer_anthropic));
    let app = app.with_state(u.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), u)
}

fn agent(url: &str) -> ModelAgentBuilder {
    ModelAgent::chat_completions(url, "m")
        .retries(0, Duration::from_millis(1))
        .read_timeout(Duration::from_secs(20))
}

/// Runs the agent at `url` once; its events (verified).
async fn run(url: &str, run_id: &str) -> Vec<Event> {
    let agent = agui_sdk_client::HttpAgent::builder(url).build().unwrap();
    let input = RunAgentInput::new("t", run_id, vec![Message::user("u1", "go")]);
    let stream = agent.run(&input);
    let events: Vec<Event> = tokio::time::timeout(
        Duration::from_secs(60),
        stream.map(|e| e.expect("an event")).collect::<Vec<_>>(),
    )
    .await
    .expect("the run ends");
    let mut v = Verifier::new();
    for (i, e) in events.iter().enumerate() {
        v.push(e)
            .unwrap_or_else(|err| panic!("event {i}: {err}: {events:?}"));
    }
    events
}

fn results(events: &[Event]) -> Vec<Content> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallResult(r) => Some(r.content.clone()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[Event]) -> bool {
    matches!(events.last(), Some(Event::RunFinished(_)))
}

/// The tool results the model got in the second request.
fn told(u: &Upstream) -> Vec<String> {
    let reqs = u.requests.lock().unwrap();
    let second = reqs.get(1).expect("a second request");
    second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// The offered tools' names in the first request.
fn offered(u: &Upstream) -> Vec<String> {
    let reqs = u.requests.lock().unwrap();
    reqs[0]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The reference server's binary, or `None` (skipped, or failed under
/// `AGUI_REQUIRE_INTEROP`).
fn everything(test: &str) -> Option<PathBuf> {
    let bin = agui_sdk_testkit::interop::dir().join("node_modules/.bin/mcp-server-everything");
    if bin.is_file() {
        return Some(bin);
    }
    assert!(
        !agui_sdk_testkit::interop::required(),
        "{test}: @modelcontextprotocol/server-everything is not installed (AGUI_REQUIRE_INTEROP is set): run scripts/setup-interop.sh"
    );
    println!("skipped {test}: @modelcontextprotocol/server-everything is not installed; run scripts/setup-interop.sh");
    None
}

fn path_env() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
}

fn everything_stdio(bin: &Path) -> McpServer {
    McpServer::stdio(bin.to_string_lossy(), ["stdio"])
        .name("everything")
        .env("PATH", path_env())
}

#[tokio::test]
async fn a_stdio_servers_tools_are_offered_and_a_call_goes_through_the_loop() {
    let Some(bin) = everything("mcp stdio call") else {
        return;
    };
    let (url, u) = upstream(&[("get-sum", r#"{"a": 2, "b": 3}"#)]).await;
    let a = agent(&url)
        .mcp_server(everything_stdio(&bin))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    let names = offered(&u);
    for t in ["echo", "get-sum", "get-tiny-image", "get-env"] {
        assert!(names.iter().any(|n| n == t), "{t} not in {names:?}");
    }
    let reqs = u.requests.lock().unwrap().clone();
    let sum = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "get-sum")
        .unwrap();
    assert_eq!(
        sum["function"]["parameters"]["properties"]["a"]["type"],
        "number"
    );
    let r = results(&events);
    assert_eq!(r.len(), 1);
    assert!(r[0].to_text().contains('5'), "{:?}", r[0]);
    let t = told(&u);
    assert_eq!(t.len(), 1);
    assert!(t[0].contains('5'), "{t:?}");
    assert!(!t[0].starts_with("error"), "{t:?}");

    // A second run reuses the server.
    let events = run(&a, "r2").await;
    assert!(finished(&events));
}

#[tokio::test]
async fn an_image_result_is_a_content_part_and_a_note_to_the_model() {
    let Some(bin) = everything("mcp image") else {
        return;
    };
    let (url, u) = upstream(&[("get-tiny-image", "{}")]).await;
    let a = agent(&url)
        .mcp_server(everything_stdio(&bin))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    let r = results(&events);
    let Content::Parts(parts) = &r[0] else {
        panic!("{:?}", r[0])
    };
    let img = parts
        .iter()
        .find_map(|p| match p {
            ContentPart::Image(m) => Some(serde_json::to_value(m).unwrap()),
            _ => None,
        })
        .expect("an image part");
    assert_eq!(img["source"]["type"], "data");
    assert_eq!(img["source"]["mimeType"], "image/png");
    assert!(img["source"]["value"].as_str().unwrap().len() > 100);
    let t = told(&u);
    assert!(t[0].contains("image (image/png"), "{t:?}");
}

#[tokio::test]
async fn an_error_result_is_a_tool_error_the_model_sees() {
    let Some(bin) = everything("mcp error") else {
        return;
    };
    let (url, u) = upstream(&[("get-sum", r#"{"a": "two"}"#)]).await;
    let a = agent(&url)
        .mcp_server(everything_stdio(&bin))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    let t = told(&u);
    assert!(t[0].starts_with("error: "), "{t:?}");
    assert!(results(&events)[0].to_text().starts_with("error: "));
}

#[tokio::test]
async fn a_stdio_server_sees_only_the_variables_it_was_given() {
    let Some(bin) = everything("mcp env") else {
        return;
    };
    let (url, u) = upstream(&[("get-env", "{}")]).await;
    let a = agent(&url)
        .mcp_server(everything_stdio(&bin).env("AGUI_MCP_GIVEN", "yes"))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    let text = results(&events)[0].to_text();
    let env: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    let mut keys: Vec<&str> = env.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["AGUI_MCP_GIVEN", "PATH"], "{text}");
    drop(u);
}

/// A hostile server of `tests/it/mcp_servers/hostile.py`, in `mode`.
fn hostile(mode: &str) -> McpServer {
    hostile_named(mode, mode)
}

/// A hostile server in `mode`, named `label`.
fn hostile_named(mode: &str, label: &str) -> McpServer {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_servers/hostile.py");
    McpServer::stdio(
        "python3",
        [
            script.to_string_lossy().into_owned(),
            mode.to_owned(),
            label.to_owned(),
        ],
    )
    .name(label)
    .env("PATH", path_env())
}

/// One call of `tool` on the hostile server in `mode`: the run's events, what the
/// model was told, and how long the run took.
async fn hostile_call(
    mode: &str,
    tool: &str,
    limits: McpLimits,
) -> (Vec<Event>, Vec<String>, Duration) {
    let (url, u) = upstream(&[(tool, "{}")]).await;
    let a = agent(&url)
        .mcp_server(hostile(mode))
        .mcp_limits(limits)
        .build()
        .unwrap();
    let a = serve(a).await;
    let t0 = Instant::now();
    let events = run(&a, "r1").await;
    let took = t0.elapsed();
    assert!(finished(&events), "{mode}: {events:?}");
    (events, told(&u), took)
}

fn limits() -> McpLimits {
    let mut l = McpLimits::default();
    l.call_timeout = Duration::from_secs(2);
    l
}

#[tokio::test]
async fn a_server_that_hangs_is_a_timeout_the_model_is_told_of() {
    let (events, t, took) = hostile_call("hang", "work", limits()).await;
    assert!(t[0].contains("did not answer within 2 s"), "{t:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(results(&events)[0].to_text().starts_with("error: "));
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_a_tool_error_and_is_started_again() {
    let (url, u) = upstream(&[("work", "{}")]).await;
    let a = agent(&url)
        .mcp_server(hostile("die"))
        .mcp_limits(limits())
        .build()
        .unwrap();
    let a = serve(a).await;
    let t0 = Instant::now();
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    let t = told(&u);
    assert!(
        t[0].starts_with("error: the MCP server die failed"),
        "{t:?}"
    );
    assert_eq!(results(&events).len(), 1);
    // A later run starts the server again, past its backoff (500 ms after its
    // start): its tool is offered, and called.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let events = run(&a, "r2").await;
    assert!(finished(&events), "{events:?}");
    let reqs = u.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[2]["tools"][0]["function"]["name"], "work");
}

/// What is logged on this thread while the guard lives (a test on the current-thread
/// runtime: every task of the test runs here).
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_server_that_answers_garbage_is_a_tool_error() {
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink = logs.clone();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || Logs(sink.clone()))
            .finish(),
    );
    let (events, t, took) = hostile_call("garbage", "work", limits()).await;
    // Its line is logged (by rmcp, at debug level) without the terminal escape.
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("?[2J this is not JSON"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "{logs}");
    assert!(t[0].starts_with("error: the MCP server garbage "), "{t:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(results(&events).len(), 1);
}

#[tokio::test]
async fn a_100_mb_result_is_refused_without_being_held() {
    let (_, t, _) = hostile_call("huge", "work", limits()).await;
    assert!(
        t[0].starts_with("error: the MCP server huge failed"),
        "{t:?}"
    );
}

#[tokio::test]
async fn a_result_over_the_byte_cap_is_a_tool_error() {
    let mut l = limits();
    l.max_result_bytes = 1000;
    let (_, t, _) = hostile_call("big", "work", l).await;
    assert!(t[0].contains("over the limit of 1000 bytes"), "{t:?}");
}

#[tokio::test]
async fn ten_thousand_tools_are_capped() {
    let (url, u) = upstream(&[("tool_5", "{}")]).await;
    let a = agent(&url).mcp_server(hostile("many")).build().unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events));
    let names = offered(&u);
    assert_eq!(names.len(), McpLimits::default().max_tools);
    assert_eq!(told(&u), ["tool 5 done"]);
}

#[tokio::test]
async fn clashing_names_get_their_servers_prefix() {
    let (url, u) = upstream(&[
        ("clash__add", "{}"),
        ("other__add", "{}"),
        ("add", r#"{"a":1,"b":2}"#),
    ])
    .await;
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Add {
        a: f64,
        b: f64,
    }
    let a = agent(&url)
        .tool("add", "Adds.", |x: Add, _: ToolContext| async move {
            Ok(ToolResult::text((x.a + x.b).to_string()))
        })
        .mcp_server(hostile("clash"))
        .mcp_server(hostile_named("clash", "other"))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    let mut names = offered(&u);
    names.sort();
    assert_eq!(
        names,
        [
            "add",
            "clash__add",
            "clash__unique",
            "other__add",
            "other__unique"
        ]
    );
    assert_eq!(told(&u), ["add from clash", "add from other", "3"]);
}

/// The reference server over Streamable HTTP on a free port, killed when dropped; its
/// `/mcp` URL.
async fn everything_http(bin: &Path) -> (tokio::process::Child, String) {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let child = tokio::process::Command::new(bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the HTTP server did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test]
async fn a_streamable_http_servers_tools_are_called_through_the_loop() {
    let Some(bin) = everything("mcp http call") else {
        return;
    };
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink = logs.clone();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Logs(sink.clone()))
            .finish(),
    );
    let (_server, mcp_url) = everything_http(&bin).await;
    let (url, u) = upstream(&[
        ("get-sum", r#"{"a": 20, "b": 22}"#),
        ("get-tiny-image", "{}"),
    ])
    .await;
    let a = agent(&url)
        .mcp_server(McpServer::http(&mcp_url).header("Authorization", "Bearer sk-mcp-secret-42"))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    assert!(offered(&u).iter().any(|n| n == "get-sum"));
    let r = results(&events);
    assert!(r[0].to_text().contains("42"), "{:?}", r[0]);
    assert!(
        matches!(&r[1], Content::Parts(p) if p.iter().any(|p| matches!(p, ContentPart::Image(_))))
    );
    let t = told(&u);
    assert!(t[0].contains("42"), "{t:?}");
    assert!(t[1].contains("image (image/png"), "{t:?}");
    // The header's value is never logged, even at trace level.
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("MCP server is connected"), "{logs}");
    assert!(!logs.contains("sk-mcp-secret-42"));
}

#[tokio::test]
async fn a_long_running_tools_progress_is_shown_as_activity() {
    let Some(bin) = everything("mcp progress") else {
        return;
    };
    let (url, u) = upstream(&[(
        "trigger-long-running-operation",
        r#"{"duration": 1, "steps": 4}"#,
    )])
    .await;
    let a = agent(&url)
        .mcp_server(everything_stdio(&bin))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    let progress: Vec<Value> = events
        .iter()
        .filter_map(|e| match e {
            Event::ActivitySnapshot(s) => {
                assert_eq!(s.activity_type, "mcp_progress");
                assert_eq!(s.message_id, "call_0-progress");
                Some(Value::Object(s.content.clone()))
            }
            _ => None,
        })
        .collect();
    // One per step the server reports (the last may race the answer: the server sends
    // it just before its result).
    assert!((3..=4).contains(&progress.len()), "{progress:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["progress"], (i + 1) as f64);
        assert_eq!(p["total"], 4.0);
    }
    assert_eq!(progress[0]["toolCallId"], "call_0");
    assert_eq!(progress[0]["tool"], "trigger-long-running-operation");
    let t = told(&u);
    assert!(t[0].contains("completed"), "{t:?}");
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    let (url, u) = upstream(&[("work", "{}")]).await;
    let a = agent(&url).mcp_server(hostile("changing")).build().unwrap();
    let a = serve(a).await;
    assert!(finished(&run(&a, "r1").await));
    assert_eq!(offered(&u), ["work"]);
    assert!(finished(&run(&a, "r2").await));
    let reqs = u.requests.lock().unwrap().clone();
    let names: Vec<&str> = reqs[2]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["work", "added"]);
}

/// Anthropic's `tool_result` carries images: the model gets the image itself.
#[cfg(feature = "anthropic")]
#[tokio::test]
async fn an_image_result_goes_to_an_anthropic_model_as_an_image_block() {
    let Some(bin) = everything("mcp anthropic image") else {
        return;
    };
    let (url, u) = upstream(&[("get-tiny-image", "{}")]).await;
    let a = ModelAgent::anthropic(&url, "claude")
        .retries(0, Duration::from_millis(1))
        .mcp_server(everything_stdio(&bin))
        .build()
        .unwrap();
    let a = serve(a).await;
    let events = run(&a, "r1").await;
    assert!(finished(&events), "{events:?}");
    let reqs = u.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let result = &msgs.last().unwrap()["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_0");
    let blocks = result["content"].as_array().unwrap();
    let image = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .expect("an image block");
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert!(image["source"]["data"].as_str().unwrap().len() > 100);
}

#[tokio::test]
async fn a_tool_over_the_schema_cap_is_not_offered() {
    let (url, u) = upstream(&[("work", "{}")]).await;
    let a = agent(&url).mcp_server(hostile("fat")).build().unwrap();
    let a = serve(a).await;
    assert!(finished(&run(&a, "r1").await));
    assert_eq!(offered(&u), ["work"]);
    assert_eq!(told(&u), ["done"]);
}
