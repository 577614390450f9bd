//! Interoperability, against our server started in process on a loopback port:
//!
//! * the reference client (`@ag-ui/client` 1.0.0 `HttpAgent`, from the npm registry)
//!   runs every demo agent (`interop/server-client.mjs`), over SSE and over
//!   protobuf; its own pipeline
//!   (enforcement, chunk expansion, verification, reducer) must accept every stream
//!   without a warning;
//! * the conformance validator `ag-ui-validate` 0.4.0 (PyPI) reports no error-level
//!   finding for any demo agent, live and on the follow-up runs (answered tool call,
//!   resumed interrupt).
//!
//! * the clients CopilotKit pages use, `@ag-ui/client` 0.0.48, 0.0.59 and 1.0.0, run every demo
//!   agent through the CopilotKit runtime routes, and every event they get (and the
//!   thread replay of `/connect`) passes that version's own schemas and verifier.
//!
//! All need `scripts/setup-interop.sh` to have run; without it they print `skipped`
//! (a failure under `AGUI_REQUIRE_INTEROP=1`, as `scripts/test-all.sh` sets).

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use agui_sdk_server::Shutdown;
use agui_sdk_testkit::interop as interop_gate;
use common::{start, Client, TestServer};
use serde_json::{json, Value};

const SETUP: &str = "run scripts/setup-interop.sh to install the reference packages";

async fn demo() -> TestServer {
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::ZERO)
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}

async fn reference_client(srv: &TestServer, flags: &[&str]) -> Vec<Value> {
    node_lines(srv, "server-client.mjs", "@ag-ui/client", flags).await
}

/// Runs `interop/{script} http://ADDR [flags]`; its stdout's JSON lines.
async fn node_lines(srv: &TestServer, script: &str, package: &str, flags: &[&str]) -> Vec<Value> {
    let dir = interop_gate::dir();
    assert!(
        dir.join("node_modules")
            .join(package)
            .join("package.json")
            .exists(),
        "{package} is not installed in interop/node_modules: {SETUP}"
    );
    let out = tokio::process::Command::new("node")
        .arg(script)
        .arg(format!("http://{}", srv.addr))
        .args(flags)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .expect("the reference client finishes in time")
        .unwrap_or_else(|e| panic!("cannot run node ({e}): install Node.js and {SETUP}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line ({e}): {l}")))
        .collect()
}

fn check_reference_client(results: &[Value], content_type: &str) {
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    assert_eq!(names, agui_sdk_demo::NAMES);
    for r in results {
        let name = r["agent"].as_str().unwrap();
        assert_eq!(
            r["ok"], true,
            "{name}: the reference client rejected the run: {}",
            r["error"]
        );
        assert_eq!(
            r["warnings"],
            json!([]),
            "{name}: the reference client warned"
        );
        for ct in r["contentTypes"].as_array().unwrap() {
            assert_eq!(ct, content_type, "{name}");
        }
    }
    let by = |n: &str| results.iter().find(|r| r["agent"] == n).unwrap();

    // What the reference reducer built from our streams.
    let chat = by("agentic_chat");
    let texts: Vec<&str> = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(texts.iter().any(|t| t.contains("hello there")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("background is blue")),
        "{texts:?}"
    );

    let steps = &by("agentic_generative_ui")["state"]["steps"];
    assert_eq!(steps.as_array().unwrap().len(), 4);
    assert!(steps
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["status"] == "completed"));

    let recipe = &by("shared_state")["state"];
    assert_eq!(recipe["title"], "Soup");
    assert_eq!(
        recipe["instructions"],
        json!(["Boil", "Step 2: taste and adjust"])
    );

    let doc = &by("predictive_state_updates")["state"]["document"];
    assert!(doc.as_str().unwrap().starts_with("Once upon a time"));

    let hitl = by("human_in_the_loop");
    assert_eq!(hitl["outcomes"], json!(["success", "success"]));
    let last = hitl["messages"].as_array().unwrap().last().unwrap();
    assert!(last["content"]
        .as_str()
        .unwrap()
        .contains("Executing the 3 steps"));

    let reasoning = by("reasoning");
    let thought = reasoning["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "reasoning")
        .expect("a reasoning message");
    assert!(thought["encryptedValue"].is_string());

    let subagents = by("subagents");
    assert!(subagents["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["subagentRunId"].is_string()));

    let interrupt = by("interrupt");
    assert_eq!(interrupt["outcomes"], json!(["interrupt", "success"]));
    let last = interrupt["messages"].as_array().unwrap().last().unwrap();
    assert!(last["content"].as_str().unwrap().contains("Approved"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_client_accepts_every_demo_agent_over_sse() {
    if !interop_gate::ready("reference_client_accepts_every_demo_agent_over_sse") {
        return;
    }
    let srv = demo().await;
    let results = reference_client(&srv, &[]).await;
    check_reference_client(&results, "text/event-stream");
}

/// The reference client asks for resumable runs (`AGUI-Resumable: 1` and a token
/// through its `headers`): every frame carries an `id:` line, which it must ignore.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_client_accepts_resumable_streams_unchanged() {
    if !interop_gate::ready("reference_client_accepts_resumable_streams_unchanged") {
        return;
    }
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::ZERO)
        .verify(true)
        .resumable(agui_sdk_server::runs::Resumable::default())
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    for (flags, content_type) in [
        (&["--resumable"][..], "text/event-stream"),
        (
            &["--resumable", "--proto"][..],
            "application/vnd.ag-ui.event+proto",
        ),
    ] {
        let results = reference_client(&srv, flags).await;
        check_reference_client(&results, content_type);
        for r in &results {
            let seqs = r["firstSeqs"].as_array().unwrap();
            assert!(
                !seqs.is_empty() && seqs.iter().all(|s| s == "1"),
                "every run was resumable: {r}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_client_accepts_every_demo_agent_over_protobuf() {
    if !interop_gate::ready("reference_client_accepts_every_demo_agent_over_protobuf") {
        return;
    }
    let srv = demo().await;
    let results = reference_client(&srv, &["--proto"]).await;
    check_reference_client(&results, "application/vnd.ag-ui.event+proto");
}

/// Runs `interop/copilotkit-clients.mjs`: the clients CopilotKit pages use
/// (`@ag-ui/client` 0.0.48 and 0.0.59, and 1.0.0) through the CopilotKit runtime routes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilotkit_routes_pass_the_0_0_48_0_0_59_and_1_0_reference_clients() {
    if !interop_gate::ready("copilotkit_routes_pass_the_0_0_48_0_0_59_and_1_0_reference_clients") {
        return;
    }
    let shutdown = Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.verify = true;
    let app = agui_sdk_demo::app(Duration::ZERO, config, shutdown.clone(), None);
    let srv = start(app, shutdown).await;
    let lines = node_lines(&srv, "copilotkit-clients.mjs", "ag-ui-client-0048", &[]).await;
    let (control, results) = lines.split_last().expect("output");
    assert_eq!(control["control"], true);
    assert!(
        !control["schemaErrors"].as_array().unwrap().is_empty(),
        "the undowngraded control stream must fail the 0.0.48 schemas: {control}"
    );
    for version in ["0.0.48", "0.0.59", "1.0.0"] {
        let names: Vec<&str> = results
            .iter()
            .filter(|r| r["client"] == version)
            .map(|r| r["agent"].as_str().unwrap())
            .collect();
        assert_eq!(names, agui_sdk_demo::NAMES, "client {version}");
    }
    for r in results {
        assert_eq!(r["ok"], true, "{r}");
        assert!(r["replay"]["runs"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["runs"].as_u64().unwrap() >= 1, "{r}");
    }
}

/// Runs `interop/copilotkit-stop.mjs`: a run stopped from outside at its first delta,
/// through each client CopilotKit pages use (0.0.48, 0.0.59, 1.0.0), its raw stream and
/// the thread's replay after it against that version's schemas and verifier.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_copilotkit_run_passes_the_0_0_48_0_0_59_and_1_0_reference_clients() {
    if !interop_gate::ready(
        "a_stopped_copilotkit_run_passes_the_0_0_48_0_0_59_and_1_0_reference_clients",
    ) {
        return;
    }
    let shutdown = Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.verify = true;
    // Slow enough that a stop lands mid-reply.
    let app = agui_sdk_demo::app(Duration::from_millis(300), config, shutdown.clone(), None);
    let srv = start(app, shutdown).await;
    let lines = node_lines(&srv, "copilotkit-stop.mjs", "ag-ui-client-0059", &[]).await;
    let (control, results) = lines.split_last().expect("output");
    // Declared 1.1, the stopped run ends with the `cancelled` outcome, which 0.0.59's
    // schemas refuse: the downgrade is what makes the checks below pass.
    assert_eq!(control["control"], true);
    assert_eq!(
        control["finished"]["outcome"],
        json!({"type": "cancelled"}),
        "{control}"
    );
    assert!(
        !control["schemaErrors"].as_array().unwrap().is_empty(),
        "the undowngraded stopped run must fail the 0.0.59 schemas: {control}"
    );
    let versions: Vec<&str> = results
        .iter()
        .map(|r| r["client"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["0.0.48", "0.0.59", "1.0.0"]);
    for r in results {
        assert_eq!(r["ok"], true, "{r}");
        let finished = &r["finished"];
        assert_eq!(finished["type"], "RUN_FINISHED", "{r}");
        assert!(
            finished["threadId"].is_string() && finished["runId"].is_string(),
            "{r}"
        );
        if r["client"] == "1.0.0" {
            assert_eq!(finished["outcome"], json!({"type": "cancelled"}), "{r}");
        } else {
            assert!(finished.get("outcome").is_none(), "{r}");
            assert_eq!(finished["result"], json!({"cancelled": true}), "{r}");
        }
        // The replay holds the stopped run, ended.
        let replay: Vec<&str> = r["replay"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(replay.first(), Some(&"RUN_STARTED"), "{r}");
        assert_eq!(replay.last(), Some(&"RUN_FINISHED"), "{r}");
    }
}

fn validator() -> PathBuf {
    let v = interop_gate::dir().join(".venv/bin/ag-ui-validate");
    assert!(
        v.exists(),
        "ag-ui-validate is not installed in interop/.venv: {SETUP}"
    );
    v
}

/// Runs the validator on `target` (a URL, or `-` with `stdin`); returns its JSON report.
async fn validate(target: &str, features: Option<&str>, stdin: Option<Vec<u8>>) -> Value {
    let mut cmd = tokio::process::Command::new(validator());
    cmd.arg(target).arg("--json").arg("--timeout").arg("30");
    if let Some(f) = features {
        cmd.arg("--features").arg(f);
    }
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let mut child = cmd.spawn().expect("ag-ui-validate starts");
    if let Some(bytes) = stdin {
        use tokio::io::AsyncWriteExt;
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(&bytes).await.unwrap();
        drop(pipe);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the validator finishes in time")
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report for {target} ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let errors: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(
        errors.is_empty(),
        "{target}: error-level findings: {errors:#?}"
    );
    assert_eq!(report["summary"]["errors"], 0, "{target}");
    // Not required, but the demo agents are clean at warning level too.
    assert_eq!(report["summary"]["warnings"], 0, "{target}: {report}");
    assert!(
        report["eventCount"].as_u64().unwrap() > 2,
        "{target}: {report}"
    );
    assert_eq!(out.status.code(), Some(0), "{target}: {report}");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_validator_finds_no_error_in_any_demo_agent() {
    if !interop_gate::ready("conformance_validator_finds_no_error_in_any_demo_agent") {
        return;
    }
    let srv = demo().await;
    // The validator's own feature inference, for the agents it can recognise.
    let exercised = [
        ("agentic_chat", "agentic-chat"),
        ("backend_tool_rendering", "backend-tool-rendering"),
        ("agentic_generative_ui", "shared-state"),
        ("shared_state", "shared-state"),
        ("predictive_state_updates", "predictive-state-updates"),
        ("interrupt", "human-in-the-loop"),
    ];
    for name in agui_sdk_demo::NAMES {
        let url = format!("http://{}/{name}", srv.addr);
        // Declaring shared-state turns on the rule that the state gets established.
        let declared = (name == "shared_state").then_some("shared-state");
        let report = validate(&url, declared, None).await;
        for (agent, feature) in exercised {
            if agent == name {
                assert_eq!(report["features"][feature], "exercised", "{name}: {report}");
            }
        }
    }

    // Follow-up runs the live mode cannot drive: a resumed interrupt and an answered
    // frontend tool call, recorded and validated as SSE captures.
    let first = Client::post_json(srv.addr, "/interrupt", &common::input("tv", "rv1", "send"))
        .await
        .events()
        .await;
    let id = match first.last() {
        Some(agui_sdk_core::Event::RunFinished(f)) => match &f.outcome {
            Some(agui_sdk_core::RunFinishedOutcome::Interrupt(i)) => i.interrupts[0].id.clone(),
            _ => panic!("no interrupt"),
        },
        _ => panic!("no RUN_FINISHED"),
    };
    let mut body = common::input("tv", "rv2", "send");
    body["resume"] =
        json!([{ "interruptId": id, "status": "resolved", "payload": { "approved": true } }]);
    let mut c = Client::post_json(srv.addr, "/interrupt", &body).await;
    let sse = c.body().await;
    validate("-", None, Some(sse)).await;

    let answered = json!({
        "threadId": "th", "runId": "rh2",
        "messages": [
            { "id": "u1", "role": "user", "content": "plan" },
            { "id": "a1", "role": "assistant", "toolCalls": [{ "id": "c1", "type": "function", "function": { "name": "generate_task_steps", "arguments": "{\"steps\":[]}" } }] },
            { "id": "t1", "role": "tool", "toolCallId": "c1", "content": "{\"steps\":[]}" }
        ]
    });
    let mut c = Client::post_json(srv.addr, "/human_in_the_loop", &answered).await;
    let sse = c.body().await;
    validate("-", Some("human-in-the-loop"), Some(sse)).await;
}
