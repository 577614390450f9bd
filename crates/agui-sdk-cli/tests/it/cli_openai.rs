//! `agui serve --openai-url … --model …` fronting a (fake, loopback) chat-completions
//! endpoint, driven by `agui run`: a server-side tool loop, and a frontend-tool round
//! trip over two runs. The API key comes from the environment and never shows in the
//! output. `--model-url … --model-api anthropic|responses` in front of the model
//! crate's fakes of those APIs, with the key from the variable `--api-key-env` names.

use crate::common;
use crate::fake;

// The model crate's fakes of the other provider APIs, on loopback.
#[allow(dead_code)]
#[path = "../../../agui-sdk-model/tests/it/fake_anthropic.rs"]
mod fake_anthropic;
#[path = "../../../agui-sdk-model/tests/it/fake_responses.rs"]
mod fake_responses;

use std::process::{Command, Output, Stdio};

use common::{spawn_serve, Served};

use serde_json::{json, Value};

fn serve(url: &str, model: &str) -> Served {
    spawn_serve(
        &[],
        &[
            "--delay-ms",
            "0",
            "--openai-url",
            url,
            "--model",
            model,
            "--api-key-env",
            "AGUI_TEST_MODEL_KEY",
        ],
        &[
            ("AGUI_TEST_MODEL_KEY", "sk-test-secret-123"),
            ("AGUI_LOG", "debug"),
        ],
    )
}

fn agui_run(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .arg("run")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn final_line(out: &Output) -> Value {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        out.status.success(),
        "agui run failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_side_tool_loop_through_agui_run() {
    let fake = fake::start().await;
    let srv = serve(&fake.url(), "server-tool");
    let url = format!("{}/chat", srv.base);
    let out = tokio::task::spawn_blocking(move || {
        agui_run(&[&url, "--message", "what is 2 + 3?", "--json"], None)
    })
    .await
    .unwrap();
    let fin = final_line(&out);
    let msgs = fin["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"], "The sum is 5");
    assert!(
        msgs.iter()
            .any(|m| m["role"] == "tool" && m["content"] == "5"),
        "{fin}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"TOOL_CALL_RESULT\""));
    // The key went upstream, and nowhere else.
    let auths = fake.authorizations();
    assert!(
        auths
            .iter()
            .all(|a| a.as_deref() == Some("Bearer sk-test-secret-123")),
        "{auths:?}"
    );
    let log = srv.log.lock().unwrap().clone();
    assert!(!log.contains("sk-test-secret-123") && !stdout.contains("sk-test-secret-123"));
    assert_eq!(fake.requests_for("server-tool").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frontend_tool_round_trip_through_agui_run() {
    let fake = fake::start().await;
    let srv = serve(&fake.url(), "frontend-roundtrip");
    let url = format!("{}/chat", srv.base);
    let tool = json!({ "name": "show_card", "description": "Shows a card.", "parameters": { "type": "object" } });
    let first = json!({
        "threadId": "t", "runId": "r1", "state": {}, "context": [], "forwardedProps": {},
        "tools": [tool],
        "messages": [{ "id": "u1", "role": "user", "content": "show Oslo" }],
    });
    let u = url.clone();
    let out = tokio::task::spawn_blocking(move || {
        agui_run(&[&u, "--input", "-", "--json"], Some(&first.to_string()))
    })
    .await
    .unwrap();
    let fin = final_line(&out);
    let msgs = fin["messages"].as_array().unwrap().clone();
    let call = msgs.last().unwrap()["toolCalls"][0].clone();
    assert_eq!(call["function"]["name"], "show_card");
    assert_eq!(call["function"]["arguments"], "{\"city\":\"Oslo\"}");
    // The client ran the tool: the next run carries its result.
    let mut next = msgs;
    next.push(json!({ "id": "t1", "role": "tool", "toolCallId": call["id"], "content": "shown" }));
    let second = json!({
        "threadId": "t", "runId": "r2", "state": {}, "context": [], "forwardedProps": {},
        "tools": [tool], "messages": next,
    });
    let out = tokio::task::spawn_blocking(move || {
        agui_run(&[&url, "--input", "-", "--json"], Some(&second.to_string()))
    })
    .await
    .unwrap();
    let fin = final_line(&out);
    assert_eq!(
        fin["messages"].as_array().unwrap().last().unwrap()["content"],
        "Card shown."
    );
    let reqs = fake.requests_for("frontend-roundtrip");
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1]["messages"].as_array().unwrap().last().unwrap(),
        &json!({ "role": "tool", "tool_call_id": "call_card", "content": "shown" })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_a_url_shows_in_any_output() {
    let fake = fake::start().await;
    // The model endpoint's URL with credentials in it, as a user may pass it.
    let url = fake
        .url()
        .replacen("://", "://model-user:model-url-secret-42@", 1);
    let srv = serve(&url, "server-tool");
    let http = reqwest::Client::new();
    let mut seen = String::new();
    for path in ["/agents", "/chat", "/copilotkit/info"] {
        let body = http
            .get(format!("{}{path}", srv.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        seen.push_str(&body);
    }
    assert!(seen.contains("server-tool at http://***@"), "{seen}");
    let run_url = format!("{}/chat", srv.base);
    let out = tokio::task::spawn_blocking(move || {
        agui_run(&[&run_url, "--message", "what is 2 + 3?", "--json"], None)
    })
    .await
    .unwrap();
    seen.push_str(&String::from_utf8_lossy(&out.stdout));
    seen.push_str(&String::from_utf8_lossy(&out.stderr));
    seen.push_str(&srv.log.lock().unwrap());
    assert!(!seen.contains("model-url-secret-42"), "{seen}");

    // A store URL with a password: the start-up log and the error name it redacted.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["serve", "--addr", "127.0.0.1:0", "--store"])
        .arg("redis://:store-url-secret-42@127.0.0.1:1/0")
        .env("AGUI_LOG", "debug")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "nothing listens on port 1: {text}");
    assert!(text.contains("redis://***@127.0.0.1:1/0"), "{text}");
    assert!(!text.contains("store-url-secret-42"), "{text}");
}

/// `agui serve --model-url URL --model-api API --model NAME --api-key-env VAR` and
/// `extra` flags, the key in `VAR`.
fn serve_model(url: &str, api: &str, model: &str, extra: &[&str]) -> Served {
    let mut args = vec![
        "--delay-ms",
        "0",
        "--model-url",
        url,
        "--model-api",
        api,
        "--model",
        model,
        "--api-key-env",
        "SOME_MODEL_KEY_VAR",
    ];
    args.extend_from_slice(extra);
    spawn_serve(
        &[],
        &args,
        &[
            ("SOME_MODEL_KEY_VAR", "sk-some-secret-777"),
            ("AGUI_LOG", "debug"),
        ],
    )
}

/// One run through `POST /chat`: the final line of `agui run --json`.
async fn run_chat(srv: &Served) -> Output {
    let url = format!("{}/chat", srv.base);
    tokio::task::spawn_blocking(move || agui_run(&[&url, "--message", "hello", "--json"], None))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_api_with_the_key_of_the_named_variable_and_thinking() {
    let fake = fake_anthropic::start().await;
    let srv = serve_model(
        &fake.url(),
        "anthropic",
        "text",
        &["--thinking-budget", "2048"],
    );
    let out = run_chat(&srv).await;
    let fin = final_line(&out);
    assert_eq!(
        fin["messages"].as_array().unwrap().last().unwrap()["content"],
        "Hello, w\u{f6}rld! \u{1f600}"
    );
    let req = fake.requests_for("text").pop().unwrap();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(
        req.headers.get("x-api-key").map(String::as_str),
        Some("sk-some-secret-777")
    );
    assert_eq!(
        req.body["thinking"],
        json!({ "type": "enabled", "budget_tokens": 2048 })
    );
    assert!(req.body["max_tokens"].as_u64().unwrap() > 2048);
    let log = srv.log.lock().unwrap().clone();
    assert!(!log.contains("sk-some-secret-777"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_api_with_the_key_of_the_named_variable_and_an_effort() {
    let fake = fake_responses::start().await;
    let srv = serve_model(
        &fake.url(),
        "responses",
        "text",
        &["--reasoning-effort", "high"],
    );
    let out = run_chat(&srv).await;
    let fin = final_line(&out);
    assert_eq!(
        fin["messages"].as_array().unwrap().last().unwrap()["content"],
        "Hello, w\u{f6}rld! \u{1f600}"
    );
    let req = fake.requests_for("text").pop().unwrap();
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(
        req.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-some-secret-777")
    );
    assert_eq!(req.body["store"], false);
    assert_eq!(req.body["reasoning"], json!({ "effort": "high" }));
}

/// An endpoint answering 404 (a wrong base URL, say): the run's error names the
/// request, and not the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_error_names_the_url_it_called() {
    let fake = fake_anthropic::start().await;
    let srv = serve_model(&fake.url(), "anthropic", "no-such-model", &[]);
    let out = run_chat(&srv).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let error = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "RUN_ERROR")
        .unwrap_or_else(|| panic!("no RUN_ERROR in {stdout}"));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "POST http://{}/v1/messages answered 404",
            fake.addr
        )),
        "{message}"
    );
    assert!(!stdout.contains("sk-some-secret-777"), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("sk-some-secret-777"));
}

/// The flags that do not fit together are refused before anything listens.
#[test]
fn model_flags_that_do_not_fit_are_refused() {
    for (args, says) in [
        (&["--model", "m"][..], "--model needs the endpoint"),
        (
            &[
                "--model-url",
                "http://127.0.0.1:9/v1",
                "--model-api",
                "anthropic",
            ][..],
            "--model",
        ),
        (
            &[
                "--openai-url",
                "http://127.0.0.1:9/v1",
                "--model-api",
                "responses",
                "--model",
                "m",
            ][..],
            "give it as --model-url URL",
        ),
        (
            &[
                "--model-url",
                "http://127.0.0.1:9/v1",
                "--model-api",
                "anthropic",
                "--model",
                "m",
                "--reasoning-effort",
                "low",
            ][..],
            "ModelAgentBuilder::thinking",
        ),
        (
            &[
                "--model-url",
                "http://127.0.0.1:9/v1",
                "--model-api",
                "responses",
                "--model",
                "m",
                "--thinking-budget",
                "2048",
            ][..],
            "Anthropic Messages API only",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_agui"))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_named_by_approve_tools_waits_for_the_users_answer() {
    let fake = fake::start().await;
    let srv = spawn_serve(
        &[],
        &[
            "--delay-ms",
            "0",
            "--openai-url",
            &fake.url(),
            "--model",
            "server-tool",
            "--approve-tools",
            "add",
        ],
        &[],
    );
    let url = format!("{}/chat", srv.base);
    let first = json!({
        "threadId": "approve-t", "runId": "r1", "state": {}, "context": [], "forwardedProps": {},
        "tools": [],
        "messages": [{ "id": "u1", "role": "user", "content": "what is 2 + 3?" }],
    });
    let u = url.clone();
    let out = tokio::task::spawn_blocking(move || {
        agui_run(&[&u, "--input", "-", "--json"], Some(&first.to_string()))
    })
    .await
    .unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    // The call streamed, was not run, and the run paused on it.
    assert!(lines.iter().any(|e| e["type"] == "TOOL_CALL_START"));
    assert!(
        !lines.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "{lines:?}"
    );
    let finished = lines
        .iter()
        .find(|e| e["type"] == "RUN_FINISHED")
        .unwrap_or_else(|| panic!("no RUN_FINISHED: {lines:?}"));
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(finished["outcome"]["type"], "interrupt");
    assert_eq!(interrupt["reason"], "tool_call");
    let call_id = interrupt["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(fake.requests_for("server-tool").len(), 1);

    // Approved: the tool runs in the resumed run and the model gets its result.
    let second = json!({
        "threadId": "approve-t", "runId": "r2", "state": {}, "context": [], "forwardedProps": {},
        "tools": [],
        "messages": [
            { "id": "u1", "role": "user", "content": "what is 2 + 3?" },
            { "id": "a1", "role": "assistant", "toolCalls": [
                { "id": call_id, "type": "function",
                  "function": { "name": "add", "arguments": "{\"a\":2,\"b\":3}" } }
            ] }
        ],
        "resume": [{ "interruptId": interrupt["id"], "status": "resolved", "payload": { "approved": true } }],
    });
    let out = tokio::task::spawn_blocking(move || {
        agui_run(&[&url, "--input", "-", "--json"], Some(&second.to_string()))
    })
    .await
    .unwrap();
    let fin = final_line(&out);
    let msgs = fin["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"], "The sum is 5", "{fin}");
    let reqs = fake.requests_for("server-tool");
    assert_eq!(reqs.len(), 2);
    let sent = reqs[1]["messages"].as_array().unwrap();
    assert!(
        sent.iter()
            .any(|m| m["role"] == "tool" && m["content"] == "5"),
        "{sent:?}"
    );
}
