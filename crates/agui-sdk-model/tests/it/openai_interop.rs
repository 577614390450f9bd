//! The reference client (`@ag-ui/client` 1.0.0 `HttpAgent`, from the npm registry)
//! takes in the stream of every fake-endpoint scenario (`interop/openai-clients.mjs`):
//! its own pipeline accepts each, and its final messages are the expected ones. Needs
//! `scripts/setup-interop.sh`; without it the test prints `skipped` (a failure under
//! `AGUI_REQUIRE_INTEROP=1`).

use crate::fake;
use agui_sdk_testkit::interop as interop_gate;

use std::process::Stdio;
use std::time::Duration;

use agui_sdk_model::{OpenAiAgent, ToolContext, ToolResult};
use agui_sdk_server::{AgentRouter, Shutdown};
use serde_json::Value;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

const SCENARIOS: [&str; 9] = [
    "text",
    "tool",
    "parallel",
    "reasoning",
    "reasoning-field",
    "error-mid",
    "cut",
    "refusal",
    "server-tool",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_client_accepts_every_scenario() {
    if !interop_gate::ready("the_reference_client_accepts_every_scenario") {
        return;
    }
    let fake = fake::start().await;
    let shutdown = Shutdown::new();
    let mut router = AgentRouter::new().verify(true).shutdown(shutdown.clone());
    for s in SCENARIOS {
        let agent =
            OpenAiAgent::builder(fake.url(), s)
                .retries(1, Duration::from_millis(1))
                .tool(
                    "add",
                    "Adds two numbers.",
                    |x: Add, _: ToolContext| async move {
                        Ok(ToolResult::text((x.a + x.b).to_string()))
                    },
                )
                .build()
                .unwrap();
        router = router.agent(s, agent);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(agui_sdk_server::serve(
        listener,
        router.into_router(),
        shutdown,
    ));

    let out = tokio::process::Command::new("node")
        .arg("openai-clients.mjs")
        .arg(format!("http://{addr}"))
        .args(SCENARIOS)
        .current_dir(interop_gate::dir())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .expect("the reference client finishes in time")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), SCENARIOS.len());
    let last_assistant = |r: &Value| -> Value {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "assistant")
            .cloned()
            .unwrap_or(Value::Null)
    };
    for r in &results {
        let s = r["scenario"].as_str().unwrap();
        assert_eq!(r["ok"], true, "{s}: {r}");
        assert_eq!(r["warnings"], serde_json::json!([]), "{s}: {r}");
        let expected_error = match s {
            "error-mid" | "cut" => Some("upstream"),
            "refusal" => Some("refusal"),
            _ => None,
        };
        match expected_error {
            Some(prefix) => assert!(
                r["runError"]["code"].as_str().unwrap().starts_with(prefix),
                "{s}: {r}"
            ),
            None => assert!(r["runError"].is_null(), "{s}: {r}"),
        }
        let a = last_assistant(r);
        match s {
            "text" => assert_eq!(a["content"], "Hello, w\u{f6}rld! \u{1f600}"),
            "tool" => assert_eq!(
                a["toolCalls"][0]["function"]["arguments"],
                "{\"city\": \"Z\u{fc}rich \\\"Old Town\\\"\", \"n\": 1}"
            ),
            "parallel" => assert_eq!(a["toolCalls"].as_array().unwrap().len(), 2),
            "reasoning" => assert_eq!(a["content"], "Hi!"),
            "reasoning-field" => assert_eq!(a["content"], "Done."),
            "error-mid" => assert_eq!(a["content"], "Partial answer"),
            "cut" => assert_eq!(a["content"], "Cut here"),
            "server-tool" => assert_eq!(a["content"], "The sum is 5"),
            _ => {}
        }
    }
}
