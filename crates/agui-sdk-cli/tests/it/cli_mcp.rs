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
