//! `agui serve --mcp 'COMMAND ARGS…' --mcp-env NAME` gives the `chat` agent an MCP
//! server's tools: the model sees them beside the agent's own (a clashing name with its
//! server's prefix), and a server-side call still runs. A command that does not split
//! is a usage error.

use crate::common;
use crate::fake;

use std::process::{Command, Stdio};

fn hostile() -> String {
    format!(
        "python3 '{}/../agui-sdk-model/tests/it/mcp_servers/hostile.py' clash",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_tools_are_offered_beside_the_agents_own() {
    let fake = fake::start().await;
    let mcp = hostile();
    let srv = common::spawn_serve(
        &[],
        &[
            "--delay-ms",
            "0",
            "--openai-url",
            &fake.url(),
            "--model",
            "server-tool",
            "--mcp",
            &mcp,
            "--mcp-env",
            "PATH",
        ],
        &[],
    );
    let url = format!("{}/chat", srv.base);
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_agui"))
            .args(["run", &url, "--message", "what is 2 + 3?", "--json"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests_for("server-tool");
    assert_eq!(reqs.len(), 2);
    let mut names: Vec<String> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["add", "python3__add", "unique"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("The sum is 5"), "{stdout}");
}

/// `--mcp-url`: the reference server over Streamable HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_url_gives_the_chat_agent_its_tools() {
    let bin = agui_sdk_testkit::interop::dir().join("node_modules/.bin/mcp-server-everything");
    if !bin.is_file() {
        assert!(
            !agui_sdk_testkit::interop::required(),
            "@modelcontextprotocol/server-everything is not installed (AGUI_REQUIRE_INTEROP is set): run scripts/setup-interop.sh"
        );
        println!("skipped cli --mcp-url: @modelcontextprotocol/server-everything is not installed; run scripts/setup-interop.sh");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = tokio::process::Command::new(&bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(t0.elapsed() < std::time::Duration::from_secs(20));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let fake = fake::start().await;
    let mcp_url = format!("http://127.0.0.1:{port}/mcp");
    let srv = common::spawn_serve(
        &[],
        &[
            "--delay-ms",
            "0",
            "--openai-url",
            &fake.url(),
            "--model",
            "text",
            "--mcp-url",
            &mcp_url,
        ],
        &[],
    );
    let url = format!("{}/chat", srv.base);
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_agui"))
            .args(["run", &url, "--message", "hi", "--json"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests_for("text");
    let names: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"add") && names.contains(&"get-sum") && names.contains(&"echo"),
        "{names:?}"
    );
}

#[test]
fn an_mcp_command_that_does_not_split_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--openai-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--mcp",
            "npx 'unclosed",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--mcp") && err.contains("unclosed quote"),
        "{err}"
    );
}
