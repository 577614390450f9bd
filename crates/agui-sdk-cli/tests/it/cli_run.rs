//! `agui run` and `agui demo` end to end, against `agui serve` on loopback.

use crate::common;

use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn serve() -> common::Served {
    common::spawn_serve(&[], &["--delay-ms", "0"], &[])
}

fn agui(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn final_line(out: &Output) -> Value {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn run_json_prints_events_then_the_conversation() {
    let server = serve();
    for proto in [false, true] {
        let url = format!("{}/agentic_chat", server.base);
        let mut args = vec![
            "run",
            url.as_str(),
            "--message",
            "hi there",
            "--thread",
            "t1",
            "--json",
        ];
        if proto {
            args.push("--proto");
        }
        let out = agui(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["type"], "RUN_STARTED");
        assert_eq!(lines[0]["threadId"], "t1");
        assert_eq!(lines[lines.len() - 2]["type"], "RUN_FINISHED");
        let last = final_line(&out);
        assert_eq!(last["outcome"]["type"], "success");
        let messages = last["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "user");
        assert_eq!(messages[0]["content"], "hi there");
        assert_eq!(messages[1]["role"], "assistant");
        assert!(messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("hi there"));
    }
}

#[test]
fn run_exits_0_on_interrupt_and_1_on_failure() {
    let server = serve();
    let out = agui(&[
        "run",
        &format!("{}/interrupt", server.base),
        "--message",
        "send it",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let last = final_line(&out);
    assert_eq!(last["outcome"]["type"], "interrupt");
    assert!(!last["outcome"]["interrupts"].as_array().unwrap().is_empty());

    let out = agui(&["run", &format!("{}/no_such_agent", server.base), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HTTP 404"));

    let out = agui(&["run", "http://127.0.0.1:9/agentic_chat"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("transport error"));
}

#[test]
fn run_renders_for_a_person() {
    let server = serve();
    let out = agui(&[
        "run",
        &format!("{}/reasoning", server.base),
        "--message",
        "why?",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("(thinking)"), "{text}");
    assert!(text.contains("agent: After thinking"), "{text}");
    assert!(
        !text.contains("\u{1b}["),
        "no colours when stdout is not a terminal"
    );
}

#[test]
fn demo_talks_to_every_demo_agent() {
    let out = agui(&["demo", "--delay-ms", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for name in agui_sdk_demo::NAMES {
        assert!(
            text.contains(&format!("── {name} ──")),
            "{name} missing:\n{text}"
        );
    }
    assert!(
        text.contains("(the application renders generate_task_steps"),
        "tool round trip:\n{text}"
    );
    assert!(
        text.contains("Executing the 3 steps you approved."),
        "{text}"
    );
    assert!(text.contains("→ approved automatically"), "{text}");
    assert!(text.contains("Approved: the email is sent."), "{text}");
    assert!(text.contains("Done: 13 runs through 10 agents"), "{text}");
    // Over protobuf too.
    let out = agui(&["demo", "--delay-ms", "0", "--proto"]);
    assert!(out.status.success());
}

/// A one-shot HTTP server on loopback: records the request (head and body) and answers
/// with `sse` as `text/event-stream`.
fn one_shot(sse: &'static str) -> (String, std::thread::JoinHandle<String>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/agent", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 4096];
        // Read the head, then as many body bytes as Content-Length says.
        loop {
            let n = sock.read(&mut buf).unwrap();
            req.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&req).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if req.len() >= end + 4 + len {
                    break;
                }
            }
            assert!(n > 0, "the client closed early");
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            sse.len()
        );
        sock.write_all(head.as_bytes()).unwrap();
        sock.write_all(sse.as_bytes()).unwrap();
        String::from_utf8_lossy(&req).into_owned()
    });
    (url, handle)
}

/// Writes a `RunAgentInput` file for one test; returns its path.
fn input_file(tag: &str, json: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-sdk-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("input.json");
    std::fs::write(&path, json).unwrap();
    path
}

/// The JSON body of a recorded request.
fn body_of(request: &str) -> Value {
    serde_json::from_str(&request[request.find("\r\n\r\n").unwrap() + 4..]).unwrap()
}

#[test]
fn run_sends_input_headers_and_bearer_and_prints_warnings() {
    const SSE: &str = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t-in\",\"runId\":\"r-in\"}\n\n",
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"ok\",\"futureProp\":1}\n\n",
        "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t-in\",\"runId\":\"r-in\"}\n\n",
    );
    let (url, server) = one_shot(SSE);
    let input = input_file(
        "run",
        br#"{"threadId":"t-in","runId":"r-in","state":{"k":1},"messages":[{"id":"u1","role":"user","content":"hi","vendorKey":true}],"tools":[{"name":"search","description":"d","parameters":{}}],"forwardedProps":{"p":1}}"#,
    );
    let out = agui(&[
        "run",
        &url,
        "--input",
        input.to_str().unwrap(),
        "--header",
        "X-Trace: abc 123",
        "-H",
        "X-Other:v",
        "--bearer",
        "s3cret",
        "--json",
    ]);
    let request = server.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lower = request.to_ascii_lowercase();
    assert!(lower.contains("x-trace: abc 123\r\n"), "{request}");
    assert!(lower.contains("x-other: v\r\n"), "{request}");
    assert!(
        lower.contains("authorization: bearer s3cret\r\n"),
        "{request}"
    );
    let body = body_of(&request);
    assert_eq!(body["threadId"], "t-in");
    assert_eq!(body["runId"], "r-in");
    assert_eq!(body["state"], serde_json::json!({"k": 1}));
    assert_eq!(body["tools"][0]["name"], "search");
    assert_eq!(body["forwardedProps"], serde_json::json!({"p": 1}));
    assert_eq!(body["protocolVersion"], "1.1");
    assert!(body["messages"][0].get("vendorKey").is_none());
    // What was stripped, from the input and from the stream, is said on stderr.
    assert!(
        stderr.contains("warning: --input") && stderr.contains("'/messages/0/vendorKey'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: event 1: removed unrecognised material at '/futureProp' on TEXT_MESSAGE_CHUNK"),
        "{stderr}"
    );
    let last = final_line(&out);
    assert_eq!(last["messages"][1]["content"], "ok");
}

#[test]
fn run_rejects_a_malformed_header_and_input() {
    let out = agui(&["run", "http://127.0.0.1:9/x", "--header", "no-colon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected `Name: value`"));
    let out = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["run", "http://127.0.0.1:9/x", "--input", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(
                br#"{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user"}]}"#,
            )?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--input -") && stderr.contains("content"),
        "{stderr}"
    );
}

#[test]
fn run_pinned_to_an_old_peer_omits_the_version_and_flattens_content() {
    const SSE: &str = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
        "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
    );
    let (url, server) = one_shot(SSE);
    let input = input_file("pin", br#"{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":[{"type":"text","text":"look: "},{"type":"binary","mimeType":"image/png","url":"https://e/x.png"}]}]}"#);
    let out = agui(&[
        "run",
        &url,
        "--input",
        input.to_str().unwrap(),
        "--max-protocol-version",
        "0.0.39",
        "--json",
    ]);
    let request = server.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let body = body_of(&request);
    assert!(body.get("protocolVersion").is_none(), "{body}");
    assert_eq!(body["messages"][0]["content"], "look: ");
    assert!(stderr.contains("DROPS non-text parts (image)"), "{stderr}");
}
