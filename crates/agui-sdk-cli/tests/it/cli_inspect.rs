//! `agui inspect` as a process: the address it prints, the page and API behind it, the
//! proxy, and the options it refuses.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::{agui, spawn_serve};

/// `agui inspect ARGS…` on a free port; returns the process and the lines it printed
/// until the page's address.
fn spawn_inspect(args: &[&str]) -> (std::process::Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["inspect", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("agui inspect runs");
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "agui inspect exited: {lines:?}"
        );
        let done = line.starts_with("agui inspect: open ");
        lines.push(line.trim().to_owned());
        if done {
            break;
        }
    }
    (child, lines)
}

#[test]
fn inspect_prints_a_tokened_address_and_relays_through_the_proxy() {
    let served = spawn_serve(&[], &["--delay-ms", "0"], &[]);
    let agent = format!("{}/agentic_chat", served.base);
    let (mut child, lines) = spawn_inspect(&[
        "--proxy",
        "--upstream",
        &served.base,
        "--listen",
        "127.0.0.1:0",
        &agent,
    ]);
    let proxy = lines
        .iter()
        .find_map(|l| l.strip_prefix("agui inspect: proxy on "))
        .and_then(|l| l.split(" -> ").next())
        .expect("the proxy's address")
        .to_owned();
    let page = lines
        .last()
        .unwrap()
        .strip_prefix("agui inspect: open ")
        .unwrap()
        .to_owned();
    let (origin, fragment) = page.split_once("/#").unwrap();
    let token = fragment
        .split('&')
        .find_map(|p| p.strip_prefix("token="))
        .unwrap()
        .to_owned();
    assert!(token.len() >= 32, "a long random token: {token}");
    assert!(
        fragment.contains("&url=http%3A%2F%2F127.0.0.1"),
        "{fragment}"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        // The page needs no token; the API does.
        let html = client.get(format!("{origin}/")).send().await.unwrap();
        assert_eq!(html.status(), 200);
        let denied = client
            .get(format!("{origin}/api/info"))
            .send()
            .await
            .unwrap();
        assert_eq!(denied.status(), 401);
        let info: serde_json::Value = client
            .get(format!("{origin}/api/info"))
            .header("x-agui-token", &token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(info["defaultUrl"], agent);
        assert_eq!(info["proxy"]["upstream"], served.base);
        // A run through the proxy shows up in the inspector.
        let input = serde_json::json!({
            "threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": "u", "role": "user", "content": "hi"}]
        });
        let body = client
            .post(format!("{proxy}/agentic_chat"))
            .header("accept", "text/event-stream")
            .json(&input)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(body.contains("RUN_FINISHED"));
        let runs: serde_json::Value = client
            .get(format!("{origin}/api/runs"))
            .header("x-agui-token", &token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let run = &runs["runs"][0];
        assert_eq!(run["source"], "proxy");
        assert_eq!(run["status"], "finished");
    });
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn inspect_refuses_non_loopback_addresses_and_non_http_upstreams() {
    let out = agui(&["inspect", "--addr", "0.0.0.0:0"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public"));
    let out = agui(
        &[
            "inspect",
            "--addr",
            "127.0.0.1:0",
            "--proxy",
            "--upstream",
            "file:///etc",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only http and https"));
    let out = agui(&["inspect", "--addr", "127.0.0.1:0", "ftp://x/agent"], b"");
    assert_eq!(out.status.code(), Some(2));
}
