//! The TypeScript clients (the reference `@ag-ui/client` 1.0.0 and the 0.0.59 client
//! CopilotKit bundles) and CopilotKit's aimock through the same reasoning round trips:
//! the first run's reasoning goes back upstream on the second, through the plain route
//! and the CopilotKit runtime's.

use super::*;

/// The TypeScript client `version` (`1.0.0` or `0.0.59`) through
/// `interop/reasoning-roundtrip.mjs` against `url`: its two runs' lines. `None` (the
/// test returns) when the package is not installed, a failure under
/// `AGUI_REQUIRE_INTEROP=1`.
async fn ts_roundtrip(version: &str, url: String, thread: &str) -> Option<Vec<Value>> {
    let package = match version {
        "1.0.0" => "@ag-ui/client",
        _ => "ag-ui-client-0059",
    };
    let dir = agui_sdk_testkit::interop::dir();
    if !dir
        .join("node_modules")
        .join(package)
        .join("package.json")
        .is_file()
    {
        assert!(
            !agui_sdk_testkit::interop::required(),
            "{package} is not installed (AGUI_REQUIRE_INTEROP is set): run scripts/setup-interop.sh"
        );
        println!("skipped the {package} reasoning round trip: not installed; run scripts/setup-interop.sh");
        return None;
    }
    let plan = json!({
        "threadId": thread,
        "tools": [show_card()],
        "messages": [{ "id": format!("{thread}-u1"), "role": "user", "content": "show Oslo" }],
        "answer": "shown",
    });
    let version = version.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = Command::new("node")
            .arg(dir.join("reasoning-roundtrip.mjs"))
            .args([&version, &url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs");
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(plan.to_string().as_bytes()).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for line in &lines {
        assert_eq!(line["terminal"]["type"], "RUN_FINISHED", "{line}");
    }
    Some(lines)
}

/// What a TypeScript client kept of the reasoning messages after its first run, shown
/// in the test's output.
fn kept(client: &str, api: &str, first: &Value) -> Vec<Value> {
    let reasoning = first["reasoning"].as_array().cloned().unwrap_or_default();
    println!(
        "{client} ({api}) kept of the reasoning messages: {}; REASONING_ENCRYPTED_VALUE events as handed on: {}; its warnings: {}",
        Value::Array(reasoning.clone()),
        first["encryptedEvents"],
        first["warnings"]
    );
    reasoning
}

/// The reference client 1.0.0 on the plain endpoint: it keeps a reasoning message's
/// encrypted value but not its type (1.0 has none), so the values go back untyped, as
/// the provider's own: the signature before the `tool_use`, the reasoning item before
/// its `function_call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_client_1_0_carries_reasoning_through_a_tool_loop() {
    let fake = anthropic::start().await;
    let srv = serve(&fake.url(), "anthropic", "sig-tool");
    let Some(lines) = ts_roundtrip("1.0.0", format!("{}/chat", srv.base), "ref-a").await else {
        return;
    };
    let reasoning = kept("@ag-ui/client 1.0.0", "anthropic", &lines[0]);
    assert_eq!(reasoning.len(), 1, "{reasoning:?}");
    assert_eq!(reasoning[0]["encryptedValue"], SIG_A);
    assert_eq!(reasoning[0].get("encryptedValueType"), None);
    let reqs = fake.requests_for("sig-tool");
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1].body["messages"][1],
        anthropic::expected_turn("sig-tool")
    );
    assert_eq!(
        lines[1]["messages"].as_array().unwrap().last().unwrap()["content"],
        "Card shown."
    );

    let fake = responses::start().await;
    let srv = serve(&fake.url(), "responses", "reasoning-tool");
    let Some(lines) = ts_roundtrip("1.0.0", format!("{}/chat", srv.base), "ref-r").await else {
        return;
    };
    let reasoning = kept("@ag-ui/client 1.0.0", "responses", &lines[0]);
    assert_eq!(reasoning.len(), 1, "{reasoning:?}");
    assert_eq!(reasoning[0]["encryptedValue"], ENC_A);
    let reqs = fake.requests_for("reasoning-tool");
    assert_eq!(reqs.len(), 2);
    let input = reqs[1].body["input"].as_array().unwrap();
    let at = input
        .iter()
        .position(|i| i["type"] == "function_call")
        .unwrap();
    assert_eq!(input[at - 1], responses::expected_reasoning());
}

/// CopilotKit's 0.0.59 client on the runtime route, both runs on one thread: whatever it
/// keeps of the reasoning (shown in the output), the second upstream request carries the
/// signature, restored by the runtime from the thread's history when the client dropped it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilotkit_0_0_59_on_one_thread_gets_the_signature_upstream() {
    let fake = anthropic::start().await;
    let srv = serve(&fake.url(), "anthropic", "blocks-tool");
    let url = format!("{}/copilotkit/agent/chat/run", srv.base);
    let Some(lines) = ts_roundtrip("0.0.59", url, "ck-a").await else {
        return;
    };
    // It keeps each value and drops its type: the redacted block's data would go back
    // as a signature, had the runtime not restored the type from the thread's history.
    let reasoning = kept("ag-ui-client 0.0.59", "anthropic", &lines[0]);
    let values: Vec<&Value> = reasoning.iter().map(|r| &r["encryptedValue"]).collect();
    assert_eq!(values, [&json!(REDACTED), &json!(SIG_A), &json!(SIG_B)]);
    assert!(
        reasoning
            .iter()
            .all(|r| r.get("encryptedValueType").is_none()),
        "{reasoning:?}"
    );
    let reqs = fake.requests_for("blocks-tool");
    assert_eq!(reqs.len(), 2);
    let sent = reqs[1].body.to_string();
    assert!(sent.contains(SIG_A) && sent.contains(SIG_B), "{sent}");
    assert_eq!(
        reqs[1].body["messages"][1],
        anthropic::expected_turn("blocks-tool")
    );
    assert_eq!(
        lines[1]["messages"].as_array().unwrap().last().unwrap()["content"],
        "Card shown."
    );

    let fake = responses::start().await;
    let srv = serve(&fake.url(), "responses", "reasoning-tool");
    let url = format!("{}/copilotkit/agent/chat/run", srv.base);
    let Some(lines) = ts_roundtrip("0.0.59", url, "ck-r").await else {
        return;
    };
    let reasoning = kept("ag-ui-client 0.0.59", "responses", &lines[0]);
    assert_eq!(reasoning.len(), 1, "{reasoning:?}");
    assert_eq!(reasoning[0]["encryptedValue"], ENC_A);
    let reqs = fake.requests_for("reasoning-tool");
    assert_eq!(reqs.len(), 2);
    let input = reqs[1].body["input"].as_array().unwrap();
    let at = input
        .iter()
        .position(|i| i["type"] == "function_call")
        .unwrap();
    assert_eq!(input[at - 1], responses::expected_reasoning());
}

/// The fakes refuse a continuation whose assistant turn lacks its reasoning, as the
/// providers do: what makes the round trips above fail when a value is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_without_its_reasoning_is_refused() {
    for (api, model, says) in [
        (
            "anthropic",
            "sig-tool",
            "must start with its thinking blocks",
        ),
        (
            "responses",
            "reasoning-tool",
            "without its required 'reasoning' item",
        ),
    ] {
        let fake = match api {
            "anthropic" => anthropic::start().await,
            _ => responses::start().await,
        };
        let srv = serve(&fake.url(), api, model);
        let mut chat = conversation(&srv, "lost", Vec::new());
        let call = first_run(&mut chat).await;
        let history: Vec<Message> = chat
            .messages()
            .iter()
            .filter(|m| !matches!(m, Message::Reasoning(_)))
            .cloned()
            .collect();
        let mut chat = conversation(&srv, "lost", history);
        chat.add_message(Message::tool("t1", call.as_str(), "shown"));
        let error = chat.run_agent(RunParams::new()).await.unwrap_err();
        assert!(error.to_string().contains("answered 400"), "{api}: {error}");
        let log = log_with(&srv, says).await;
        assert!(log.contains(says), "{api}: {log}");
        let reqs = fake.requests_for(model);
        assert_eq!(reqs.len(), 2);
        let sent = reqs[1].body.to_string();
        assert!(!sent.contains(SIG_A) && !sent.contains(ENC_A), "{sent}");
    }
}

/// The reference client 1.0.0 on the CopilotKit route, both runs on one thread: it
/// drops the types, and the runtime restores them from the thread's history, so the
/// redacted block goes back as one (untyped, its data would go as a signature).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_client_1_0_on_one_copilotkit_thread_gets_redacted_thinking_back() {
    let fake = anthropic::start().await;
    let srv = serve(&fake.url(), "anthropic", "blocks-tool");
    let url = format!("{}/copilotkit/agent/chat/run", srv.base);
    let Some(lines) = ts_roundtrip("1.0.0", url, "ref-ck").await else {
        return;
    };
    let reasoning = kept(
        "@ag-ui/client 1.0.0",
        "anthropic, CopilotKit route",
        &lines[0],
    );
    assert_eq!(reasoning.len(), 3, "{reasoning:?}");
    assert!(
        reasoning
            .iter()
            .all(|r| r.get("encryptedValueType").is_none()),
        "{reasoning:?}"
    );
    let reqs = fake.requests_for("blocks-tool");
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1].body["messages"][1],
        anthropic::expected_turn("blocks-tool")
    );
}

/// CopilotKit's aimock (strict) as the Anthropic upstream: it refuses a tool-loop
/// continuation whose assistant turn does not begin with a signed thinking block. The
/// loop over two runs completes through it; the same continuation without the
/// reasoning is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reasoning_tool_loop_through_aimock_completes() {
    use std::io::{BufRead, BufReader};
    let dir = agui_sdk_testkit::interop::dir();
    if !dir
        .join("node_modules/@copilotkit/aimock/package.json")
        .is_file()
    {
        assert!(
            !agui_sdk_testkit::interop::required(),
            "@copilotkit/aimock is not installed (AGUI_REQUIRE_INTEROP is set): run scripts/setup-interop.sh"
        );
        println!("skipped the aimock reasoning loop: @copilotkit/aimock is not installed; run scripts/setup-interop.sh");
        return;
    }
    let mut mock = Command::new("node")
        .arg(dir.join("aimock-upstream.mjs"))
        .arg(SIG_A)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node runs");
    let mut lines = BufReader::new(mock.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let url = format!("{}/v1", first["url"].as_str().unwrap());
    let srv = serve(&url, "anthropic", "claude-aimock");

    let mut chat = conversation(&srv, "aimock", Vec::new());
    let call = first_run(&mut chat).await;
    assert_eq!(call, "toolu_aimock");
    let reasoning = reasoning_of(&as_json(chat.messages()));
    assert_eq!(reasoning.len(), 1, "{reasoning:?}");
    assert_eq!(reasoning[0]["encryptedValue"], SIG_A);
    assert_eq!(reasoning[0]["content"], "The user wants a card for Oslo.");
    second_run(&mut chat, &call).await;

    // The control: the same loop without the reasoning is refused.
    let mut chat = conversation(&srv, "aimock-lost", Vec::new());
    let call = first_run(&mut chat).await;
    let history: Vec<Message> = chat
        .messages()
        .iter()
        .filter(|m| !matches!(m, Message::Reasoning(_)))
        .cloned()
        .collect();
    let mut chat = conversation(&srv, "aimock-lost", history);
    chat.add_message(Message::tool("t1", call.as_str(), "shown"));
    let error = chat.run_agent(RunParams::new()).await.unwrap_err();
    assert!(error.to_string().contains("answered 400"), "{error}");
    let log = log_with(&srv, "must begin with a `thinking` block").await;
    assert!(log.contains("must begin with a `thinking` block"), "{log}");

    drop(mock.stdin.take());
    let last: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    mock.wait().unwrap();
    let statuses: Vec<&Value> = last["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert_eq!(
        statuses,
        [&json!(200), &json!(200), &json!(200), &json!(400)],
        "{last}"
    );
}

/// The server's log once it holds `text`, or after 10 s: the server logs an upstream's
/// answer as the run ends, which may be just after the client has read the RUN_ERROR.
async fn log_with(srv: &Served, text: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = srv.log.lock().unwrap().clone();
        if log.contains(text) || std::time::Instant::now() > deadline {
            return log;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
