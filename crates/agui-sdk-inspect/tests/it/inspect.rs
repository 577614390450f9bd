//! The inspector's relay, proxy and security rules, against real servers on loopback:
//! the demo agents, and a fixed upstream whose exact bytes the proxy must pass on.

use std::net::SocketAddr;
use std::time::Duration;

use agui_sdk_core::encoding::{proto, sse};
use agui_sdk_core::Event;
use agui_sdk_inspect::{Inspector, InspectorConfig, Limits};
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

const TOKEN: &str = "test-token";

async fn spawn(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    addr
}

async fn demo(delay_ms: u64) -> SocketAddr {
    spawn(agui_sdk_demo::router(Duration::from_millis(delay_ms)).into_router()).await
}

async fn inspector(limits: Limits) -> (Inspector, SocketAddr) {
    let inspector = Inspector::new(InspectorConfig::default().token(TOKEN).limits(limits));
    let addr = spawn(inspector.router()).await;
    (inspector, addr)
}

fn input(text: &str) -> Value {
    json!({
        "threadId": "thread-1",
        "runId": "run-1",
        "messages": [{"id": "u1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {}
    })
}

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

async fn api(
    addr: SocketAddr,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = client()
        .request(method, format!("http://{addr}/api{path}"))
        .header("x-agui-token", TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Reads a run's whole feed: its lines, parsed.
async fn feed(addr: SocketAddr, id: &str) -> Vec<Value> {
    let text = client()
        .get(format!("http://{addr}/api/runs/{id}/feed"))
        .header("x-agui-token", TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Starts a relay run of `input` at `url`; its id.
async fn start(addr: SocketAddr, url: String, input: Value) -> String {
    let (status, started) = api(
        addr,
        reqwest::Method::POST,
        "/runs",
        Some(json!({ "url": url, "input": input })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    started["id"].as_str().unwrap().to_owned()
}

fn rows(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "events")
        .flat_map(|l| l["items"].as_array().unwrap().clone())
        .collect()
}

#[tokio::test]
async fn the_relay_records_a_demo_run_in_both_encodings() {
    let agent = demo(0).await;
    let (_, addr) = inspector(Limits::default()).await;
    let mut seen = Vec::new();
    for format in ["sse", "proto"] {
        let (status, started) = api(
            addr,
            reqwest::Method::POST,
            "/runs",
            Some(json!({
                "url": format!("http://{agent}/agentic_chat"),
                "headers": {"X-Custom": "1"},
                "input": input("hello"),
                "format": format,
            })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{started}");
        let id = started["id"].as_str().unwrap().to_owned();
        let lines = feed(addr, &id).await;
        let end = lines.last().unwrap();
        assert_eq!(end["kind"], "end", "{lines:?}");
        assert_eq!(end["summary"]["status"], "finished");
        assert_eq!(end["summary"]["format"], format);
        assert_eq!(end["summary"]["findings"], 0);
        let rows = rows(&lines);
        assert_eq!(end["summary"]["events"], rows.len());
        assert_eq!(rows[0]["type"], "RUN_STARTED");
        assert_eq!(rows.last().unwrap()["type"], "RUN_FINISHED");
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r["index"], i);
            assert!(r["size"].as_u64().unwrap() > 0);
        }
        // The last view holds the conversation: the input's message and the reply.
        let view = lines.iter().rev().find(|l| l["kind"] == "view").unwrap();
        let messages = view["messages"].as_array().unwrap();
        assert_eq!(messages[0]["content"], "hello");
        assert_eq!(messages[1]["role"], "assistant");
        assert!(messages[1]["content"].as_str().unwrap().contains("hello"));
        // One event in detail: JSON as received.
        let (status, detail) = api(
            addr,
            reqwest::Method::GET,
            &format!("/runs/{id}/events/1"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(detail["event"]["type"], rows[1]["type"]);
        seen.push(rows.iter().map(|r| r["type"].clone()).collect::<Vec<_>>());
    }
    assert_eq!(seen[0], seen[1], "SSE and protobuf give the same events");
}

#[tokio::test]
async fn state_diffs_and_the_state_at_an_event() {
    let agent = demo(0).await;
    let (_, addr) = inspector(Limits::default()).await;
    let id = start(
        addr,
        format!("http://{agent}/shared_state"),
        input("add eggs"),
    )
    .await;
    let lines = feed(addr, &id).await;
    let rows = rows(&lines);
    let delta = rows
        .iter()
        .position(|r| r["type"] == "STATE_DELTA")
        .unwrap();
    let (_, detail) = api(
        addr,
        reqwest::Method::GET,
        &format!("/runs/{id}/events/{delta}"),
        None,
    )
    .await;
    assert!(detail["patch"].is_array());
    assert_ne!(detail["stateBefore"], detail["state"]);
    // The diff turns the state before into the state after.
    let mut state = detail["stateBefore"].clone();
    let diff: json_patch::Patch = serde_json::from_value(detail["diff"].clone()).unwrap();
    json_patch::patch(&mut state, &diff).unwrap();
    assert_eq!(state, detail["state"]);
    // Walking the timeline forward (the kept replay steps) and back (it starts over)
    // gives the same details.
    let mut forward = Vec::new();
    for i in 0..rows.len() {
        forward.push(
            api(
                addr,
                reqwest::Method::GET,
                &format!("/runs/{id}/events/{i}"),
                None,
            )
            .await
            .1,
        );
    }
    for i in (0..rows.len()).rev() {
        let (_, back) = api(
            addr,
            reqwest::Method::GET,
            &format!("/runs/{id}/events/{i}"),
            None,
        )
        .await;
        assert_eq!(back, forward[i], "event {i}");
    }
    let view = lines.iter().rev().find(|l| l["kind"] == "view").unwrap();
    assert!(view["stateChange"]["diff"]
        .as_array()
        .is_some_and(|d| !d.is_empty()));
}

#[tokio::test]
async fn an_interrupt_and_its_answer() {
    let agent = demo(0).await;
    let (_, addr) = inspector(Limits::default()).await;
    let id = start(addr, format!("http://{agent}/interrupt"), input("send it")).await;
    let lines = feed(addr, &id).await;
    let end = lines.last().unwrap();
    assert_eq!(end["summary"]["status"], "interrupted");
    let view = lines.iter().rev().find(|l| l["kind"] == "view").unwrap();
    let interrupt = &view["interrupts"][0];
    let mut resume = input("send it");
    resume["runId"] = json!("run-2");
    resume["messages"] = view["messages"].clone();
    resume["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}]);
    let id = start(addr, format!("http://{agent}/interrupt"), resume).await;
    let lines = feed(addr, &id).await;
    assert_eq!(
        lines.last().unwrap()["summary"]["status"],
        "finished",
        "{lines:?}"
    );
}

#[tokio::test]
async fn stop_closes_the_agents_connection() {
    let agent = demo(200).await;
    let (_, addr) = inspector(Limits::default()).await;
    let id = start(
        addr,
        format!("http://{agent}/agentic_chat"),
        input("a long answer please"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _) = api(
        addr,
        reqwest::Method::POST,
        &format!("/runs/{id}/stop"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let lines = tokio::time::timeout(Duration::from_secs(10), feed(addr, &id))
        .await
        .expect("the feed ends once the run is stopped");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["stopped"], true);
    assert_eq!(summary["status"], "finished");
    assert!(summary["events"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn agent_failures_are_errors_with_their_cause() {
    let agent = demo(0).await;
    let (_, addr) = inspector(Limits::default()).await;
    let cases = [
        (format!("http://{agent}/no_such_agent"), "HTTP 404"),
        ("http://127.0.0.1:9/x".to_owned(), "the request failed"),
    ];
    for (url, expected) in cases {
        let id = start(addr, url, input("x")).await;
        let lines = feed(addr, &id).await;
        let summary = &lines.last().unwrap()["summary"];
        assert_eq!(summary["status"], "error");
        assert!(
            summary["error"].as_str().unwrap().contains(expected),
            "{summary}"
        );
    }
}

#[tokio::test]
async fn security_rules() {
    let (_, addr) = inspector(Limits::default()).await;
    let url = format!("http://{addr}/api/runs");
    // No token, a wrong token.
    let res = client().get(&url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = client()
        .get(&url)
        .header("x-agui-token", "nope")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    // A foreign Origin, even with the token; the page's own origin passes.
    let res = client()
        .get(&url)
        .header("x-agui-token", TOKEN)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "forbidden_origin");
    let res = client()
        .get(&url)
        .header("x-agui-token", TOKEN)
        .header("origin", format!("http://{addr}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    // The page itself needs no token.
    let res = client()
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.unwrap().contains("<html"));
    // Its files are embedded, each with its type; nothing else is served.
    for (file, ty) in [("app.js", "text/javascript"), ("app.css", "text/css")] {
        let res = client()
            .get(format!("http://{addr}/{file}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{file}");
        assert!(res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with(ty));
        assert!(res.headers().contains_key("content-security-policy"));
    }
    for missing in ["/nope.js", "/..%2FCargo.toml", "/src/lib.rs"] {
        let res = client()
            .get(format!("http://{addr}{missing}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{missing}");
    }
    // Only http and https upstreams, for the relay and the proxy.
    for bad in [
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "not a url",
        "gopher://x",
    ] {
        let (status, body) = api(
            addr,
            reqwest::Method::POST,
            "/runs",
            Some(json!({"url": bad, "input": input("x")})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(body["error"], "bad_url");
    }
    let inspector = Inspector::new(InspectorConfig::default());
    assert!(agui_sdk_inspect::proxy::router(inspector.clone(), "file:///tmp").is_err());
    assert!(agui_sdk_inspect::proxy::router(inspector, "https://example.com/base").is_ok());
}

#[tokio::test]
async fn bodies_and_recordings_are_bounded() {
    let limits = Limits {
        max_body: 1024,
        ..Limits::default()
    };
    let (_, addr) = inspector(limits).await;
    let res = client()
        .post(format!("http://{addr}/api/recordings?name=big.jsonl"))
        .header("x-agui-token", TOKEN)
        .body(vec![b' '; 4096])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_broken_recording_shows_its_finding_and_downloads_as_it_came() {
    let (_, addr) = inspector(Limits::default()).await;
    let recording = [
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"other","delta":"x"}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
    ]
    .join("\n")
        + "\n";
    let res = client()
        .post(format!("http://{addr}/api/recordings?name=broken.jsonl"))
        .header("x-agui-token", TOKEN)
        .body(recording.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let id = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lines = feed(addr, &id).await;
    let findings: Vec<Value> = lines
        .iter()
        .filter(|l| l["kind"] == "findings")
        .flat_map(|l| l["items"].as_array().unwrap().clone())
        .collect();
    // The verifier's verdict, and the reducer's warning that it skipped the delta: both
    // on the event that caused them.
    assert!(findings.iter().all(|f| f["index"] == 2), "{findings:?}");
    assert_eq!(
        findings.iter().filter(|f| f["stage"] == "verify").count(),
        1
    );
    // Downloaded as JSON Lines: the same events, line for line.
    let jsonl = client()
        .get(format!(
            "http://{addr}/api/runs/{id}/recording?format=jsonl"
        ))
        .header("x-agui-token", TOKEN)
        .send()
        .await
        .unwrap();
    assert!(jsonl
        .headers()
        .get("content-disposition")
        .is_some_and(|v| v.to_str().unwrap().starts_with("attachment")));
    assert_eq!(jsonl.text().await.unwrap(), recording);
    // As SSE, it reads back as the same recording.
    let sse_body = client()
        .get(format!("http://{addr}/api/runs/{id}/recording?format=sse"))
        .header("x-agui-token", TOKEN)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let res = client()
        .post(format!("http://{addr}/api/recordings?name=again.sse"))
        .header("x-agui-token", TOKEN)
        .body(sse_body)
        .send()
        .await
        .unwrap();
    let again = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lines = feed(addr, &again).await;
    let end = &lines.last().unwrap()["summary"];
    assert_eq!(
        (end["format"].as_str(), end["events"].as_u64()),
        (Some("sse"), Some(5))
    );
    assert_eq!(end["findings"], findings.len());
}

/// An upstream that answers fixed bytes in several writes, with its own headers, and
/// echoes what it was sent in a header.
async fn fixed_upstream(body: Vec<u8>, content_type: &'static str) -> SocketAddr {
    let router = Router::new().route(
        "/{*path}",
        post(
            move |headers: HeaderMap, uri: axum::http::Uri, sent: axum::body::Bytes| {
                let body = body.clone();
                async move {
                    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                        body.chunks(7).map(|c| Ok(c.to_vec())).collect();
                    let echo = format!(
                        "{} {} {} {}",
                        uri,
                        headers
                            .get("x-custom")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-"),
                        sent.len(),
                        headers
                            .get("host")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-"),
                    );
                    axum::response::Response::builder()
                        .header("content-type", content_type)
                        .header("x-upstream", "yes")
                        .header("x-echo", echo)
                        .body(Body::from_stream(futures_util::stream::iter(chunks)))
                        .unwrap()
                }
            },
        ),
    );
    spawn(router).await
}

fn events() -> Vec<Event> {
    [
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"h\u00e9llo, \"world\""}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
    ]
    .iter()
    .map(|j| Event::from_json_slice(j.as_bytes()).unwrap())
    .collect()
}

#[tokio::test]
async fn the_proxy_forwards_byte_for_byte_and_records_the_run() {
    for (content_type, format) in [
        ("text/event-stream", "sse"),
        ("application/vnd.ag-ui.event+proto", "proto"),
    ] {
        let mut body = Vec::new();
        for e in events() {
            if format == "sse" {
                sse::encode_event(&e, &mut body);
            } else {
                proto::encode_event(&e, &mut body);
            }
        }
        // Odd bytes too, which the proxy must pass on however they decode.
        if format == "sse" {
            body.extend_from_slice(b": a comment\r\n\r\n");
        }
        let upstream = fixed_upstream(body.clone(), content_type).await;
        let (inspector, addr) = inspector(Limits::default()).await;
        let proxy = spawn(
            agui_sdk_inspect::proxy::router(inspector.clone(), &format!("http://{upstream}"))
                .unwrap(),
        )
        .await;
        let sent = serde_json::to_vec(&input("hi")).unwrap();
        let res = client()
            .post(format!("http://{proxy}/agents/chat?x=1"))
            .header("x-custom", "kept")
            .header("content-type", "application/json")
            .body(sent.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["x-upstream"], "yes");
        assert_eq!(res.headers()["content-type"], content_type);
        let echo = res.headers()["x-echo"].to_str().unwrap().to_owned();
        assert_eq!(
            echo,
            format!("/agents/chat?x=1 kept {} {upstream}", sent.len()),
            "path, query, headers and body reach the upstream"
        );
        let got = res.bytes().await.unwrap();
        assert_eq!(
            got.as_ref(),
            body.as_slice(),
            "{format}: the body is unchanged"
        );
        // The run is in the inspector, complete.
        let runs = inspector.runs();
        assert_eq!(runs.len(), 1);
        let id = runs[0].id().to_string();
        let lines = feed(addr, &id).await;
        let summary = &lines.last().unwrap()["summary"];
        assert_eq!(summary["source"], "proxy");
        assert_eq!(summary["label"], "POST /agents/chat");
        assert_eq!(summary["format"], format);
        assert_eq!(summary["status"], "finished");
        assert_eq!(summary["events"], 5);
        assert_eq!(summary["bytes"], body.len());
        assert_eq!(summary["input"]["threadId"], "thread-1");
    }
}

#[tokio::test]
async fn the_proxy_passes_other_answers_through_without_recording_them() {
    let agent = demo(0).await;
    let inspector = Inspector::new(InspectorConfig::default());
    let proxy = spawn(
        agui_sdk_inspect::proxy::router(inspector.clone(), &format!("http://{agent}")).unwrap(),
    )
    .await;
    // A 404 from the upstream comes back as it is.
    let direct = client()
        .post(format!("http://{agent}/nope"))
        .json(&input("x"))
        .send()
        .await
        .unwrap();
    let direct_status = direct.status();
    let direct_body = direct.bytes().await.unwrap();
    let via = client()
        .post(format!("http://{proxy}/nope"))
        .json(&input("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(via.status(), direct_status);
    assert_eq!(via.bytes().await.unwrap(), direct_body);
    assert!(inspector.runs().is_empty());
    // A real run through the proxy equals the direct one, byte for byte.
    let direct = client()
        .post(format!("http://{agent}/agentic_chat"))
        .header("accept", "text/event-stream")
        .json(&input("same"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let via = client()
        .post(format!("http://{proxy}/agentic_chat"))
        .header("accept", "text/event-stream")
        .json(&input("same"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(via, direct);
    assert_eq!(inspector.runs().len(), 1);
    // An unreachable upstream is a 502 that says which.
    let dead = Inspector::new(InspectorConfig::default());
    let proxy = spawn(agui_sdk_inspect::proxy::router(dead, "http://127.0.0.1:9").unwrap()).await;
    let res = client()
        .get(format!("http://{proxy}/x"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_GATEWAY);
    assert!(res.text().await.unwrap().contains("127.0.0.1:9"));
}

#[tokio::test]
async fn the_proxy_refuses_foreign_hosts_and_origins_and_an_upstream_that_is_itself() {
    let agent = demo(0).await;
    let inspector = Inspector::new(InspectorConfig::default());
    let proxy = spawn(
        agui_sdk_inspect::proxy::router(inspector.clone(), &format!("http://{agent}")).unwrap(),
    )
    .await;
    let run = |host: Option<&str>, origin: Option<&str>| {
        let mut req = client()
            .post(format!("http://{proxy}/agentic_chat"))
            .header("accept", "text/event-stream")
            .json(&input("hi"));
        if let Some(h) = host {
            req = req.header("host", h);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    // A DNS-rebinding page reaches the proxy under its own name; a page of another
    // site sends its own Origin.
    for (host, origin, code) in [
        (Some("attacker.example:8001"), None, "forbidden_host"),
        (None, Some("https://attacker.example"), "forbidden_origin"),
        (None, Some("null"), "forbidden_origin"),
    ] {
        let res = run(host, origin).await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{host:?} {origin:?}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"], code);
    }
    assert!(inspector.runs().is_empty(), "nothing was forwarded");
    // A front end on this machine, on any port, is served.
    for origin in [
        None,
        Some("http://localhost:3000"),
        Some("http://127.0.0.1:5173"),
    ] {
        let res = run(Some(&format!("localhost:{}", proxy.port())), origin)
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{origin:?}");
        res.bytes().await.unwrap();
    }

    // A proxy whose upstream is its own listener answers 508 at once, not a
    // descriptor per forwarded copy.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let own = listener.local_addr().unwrap();
    let looped = agui_sdk_inspect::proxy::router(
        Inspector::new(InspectorConfig::default()),
        &format!("http://{own}"),
    )
    .unwrap();
    tokio::spawn(async move { axum::serve(listener, looped).await.unwrap() });
    let res = client()
        .post(format!("http://{own}/agentic_chat"))
        .json(&input("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::LOOP_DETECTED);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "loop_detected");
}

#[tokio::test]
async fn all_runs_together_are_bounded_in_bytes() {
    // Each recording keeps some 2.4 KB of event JSON; together at most 5 KB.
    let limits = Limits {
        max_total_bytes: 5_000,
        ..Limits::default()
    };
    let inspector = Inspector::new(InspectorConfig::default().limits(limits));
    let recording = |n: usize| {
        let mut body = Vec::new();
        for i in 0..n {
            sse::encode_event(
                &Event::text_message_content("m", format!("piece {i:04}")),
                &mut body,
            );
        }
        body
    };
    let mut kept = Vec::new();
    for i in 0..4 {
        kept.push(
            inspector
                .add_recording(&format!("r{i}"), &recording(40))
                .unwrap()
                .id(),
        );
    }
    // The oldest finished runs were forgotten to make room; the total stays bounded.
    let runs = inspector.runs();
    let total: u64 = runs.iter().map(|r| r.recording().kept_bytes()).sum();
    assert!(total <= 5_000, "{total}");
    assert!(runs.len() < 4, "{} runs kept", runs.len());
    assert_eq!(
        runs.last().unwrap().id(),
        *kept.last().unwrap(),
        "the newest is kept"
    );

    // A live run that alone needs more than the limit ends its recording with a
    // finding, and takes no more.
    let live = inspector
        .add_run(agui_sdk_inspect::NewRecording {
            source: agui_sdk_inspect::Source::Relay,
            label: "live".into(),
            url: None,
            format: agui_sdk_inspect::Framing::Sse,
            input: None,
        })
        .unwrap();
    live.set_format(agui_sdk_inspect::Framing::Sse);
    let mut accepted = true;
    for _ in 0..10 {
        accepted = live.push(&recording(40));
        if !accepted {
            break;
        }
    }
    assert!(!accepted, "the recording stopped");
    let findings = live.recording().findings().to_vec();
    assert!(
        findings.iter().any(|f| f
            .message
            .contains("runs together passed its limit of 5000 bytes")),
        "{findings:?}"
    );
}
