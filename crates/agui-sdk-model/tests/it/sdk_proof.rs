//! The fake upstreams and the adapters' requests, proven against the providers' official
//! Python SDKs (`anthropic` and `openai`, pinned in `interop/requirements.txt`).
//!
//! For each API: the adapter runs through a fake (its real requests, recorded); then
//! `interop/sdk_proof.py` gets two fresh fakes and, for each scenario, validates the raw
//! answer strictly against the SDK's event and error types, has the SDK's streaming
//! helper rebuild the message or response (retrying a 429 or 529 itself), and compares
//! it with what the scenario means, written here; it validates every recorded request
//! body against the SDK's request types, unknown keys included. Good cases and bad
//! ones: a cut stream, an error event mid-stream, an overloaded or rate-limited answer
//! before the first token, a refusal, a 400 with a body.
//!
//! Run it with `scripts/setup-interop.sh` done (or `AGUI_REQUIRE_INTEROP=1` to fail
//! when the SDKs are missing): `cargo test -p agui-sdk-model --test it sdk_proof`.

use crate::common::{events_of, Add};
use crate::{fake, fake_anthropic, fake_responses};

use std::process::Stdio;
use std::time::Duration;

use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_model::{Effort, ModelAgent, Thinking, ToolContext, ToolResult};
use agui_sdk_testkit::{interop, reference};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

/// Whether the official SDKs are installed in `interop/.venv`; a failure when they are
/// not and `AGUI_REQUIRE_INTEROP` is set, else one printed line.
fn sdks_ready(test: &str) -> bool {
    if !interop::ready(test) {
        return false;
    }
    let lib = interop::dir().join(".venv/lib");
    let has = |pkg: &str| {
        std::fs::read_dir(&lib).is_ok_and(|d| {
            d.flatten().any(|e| {
                e.path()
                    .join("site-packages")
                    .join(pkg)
                    .join("__init__.py")
                    .is_file()
            })
        })
    };
    if has("anthropic") && has("openai") {
        return true;
    }
    assert!(
        !interop::required(),
        "{test}: the `anthropic` and `openai` Python SDKs are not installed (AGUI_REQUIRE_INTEROP is set): run scripts/setup-interop.sh"
    );
    println!(
        "skipped {test}: the `anthropic` and `openai` Python SDKs are not installed; run scripts/setup-interop.sh, or ./scripts/test-all.sh, to run it"
    );
    false
}

/// Runs `interop/sdk_proof.py <api>` on `spec`; fails with what it printed unless it
/// proved every case.
async fn prove(api: &str, spec: &Value) {
    let mut child = tokio::process::Command::new(reference::python())
        .arg(interop::dir().join("sdk_proof.py"))
        .arg(api)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the interop Python runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(spec.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the proof ends within 2 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{api}: the official SDK disagrees with the fake or the requests:\n{stdout}\n{stderr}"
    );
    print!("{stdout}");
}

fn input(v: Value) -> RunAgentInput {
    serde_json::from_value(v).unwrap()
}

fn go() -> RunAgentInput {
    input(json!({ "threadId": "t", "runId": "r",
                  "messages": [{ "id": "u", "role": "user", "content": "go" }] }))
}

/// A client's history with everything the adapters map: context, a system message,
/// reasoning with its value (of each provider's type, and untyped), a turn split into a
/// text and a tool call, a tool error, an image, a frontend tool.
fn history(value_type: &str, value: &str, redacted: Option<&str>) -> RunAgentInput {
    let mut messages = vec![
        json!({ "id": "s", "role": "system", "content": "Sys." }),
        json!({ "id": "u1", "role": "user", "content": "first" }),
    ];
    if let Some(r) = redacted {
        messages.push(json!({ "id": "r0", "role": "reasoning", "content": "",
            "encryptedValue": r, "encryptedValueType": "anthropic.redacted_thinking" }));
    }
    let mut reasoning = json!({ "id": "r1", "role": "reasoning", "content": "Thought.",
                                "encryptedValue": value });
    if !value_type.is_empty() {
        reasoning["encryptedValueType"] = json!(value_type);
    }
    messages.extend([
        reasoning,
        json!({ "id": "a1", "role": "assistant", "content": "Calling." }),
        json!({ "id": "a2", "role": "assistant", "content": "", "toolCalls": [
            { "id": "c1", "type": "function", "function": { "name": "show_card", "arguments": "{\"city\":\"Rome\"}" } }
        ]}),
        json!({ "id": "t1", "role": "tool", "toolCallId": "c1", "content": "", "error": "timeout" }),
        json!({ "id": "a3", "role": "assistant", "content": "", "toolCalls": [
            { "id": "c2", "type": "function", "function": { "name": "show_card", "arguments": "{\"city\":\"Oslo\"}" } }
        ]}),
        json!({ "id": "t2", "role": "tool", "toolCallId": "c2", "content": "shown" }),
        json!({ "id": "u2", "role": "user", "content": [
            { "type": "text", "text": "Look:" },
            { "type": "image", "source": { "type": "data", "value": "QUJD", "mimeType": "image/png" } }
        ]}),
    ]);
    input(json!({
        "threadId": "t", "runId": "r",
        "context": [{ "description": "locale", "value": "fr-CH" }],
        "tools": [{ "name": "show_card", "description": "Shows a card for a city.",
                    "parameters": { "type": "object", "properties": { "city": { "type": "string" } } } }],
        "messages": messages
    }))
}

/// A run that forces the frontend tool `copilotkitSuggest` through `forwardedProps`.
fn forced_tool() -> RunAgentInput {
    crate::common::tool_choice("copilotkitSuggest")
}

fn add(b: agui_sdk_model::ModelAgentBuilder) -> agui_sdk_model::ModelAgentBuilder {
    b.retries(2, Duration::from_millis(1))
        .read_timeout(Duration::from_secs(10))
        .tool(
            "add",
            "Adds two numbers.",
            |x: Add, _: ToolContext| async move { Ok(ToolResult::text((x.a + x.b).to_string())) },
        )
}

fn last_is_run_error(events: &[Event], what: &str) {
    assert!(
        matches!(events.last(), Some(Event::RunError(_))),
        "{what}: {:?}",
        events.last()
    );
}

#[tokio::test]
async fn anthropic_fake_and_requests_are_what_the_official_sdk_reads_and_takes() {
    if !sdks_ready("sdk_proof::anthropic") {
        return;
    }
    // The adapter's requests, each shape it sends.
    let fake_a = fake_anthropic::start().await;
    let agent = |model: &str| {
        add(ModelAgent::anthropic(fake_a.url(), model)
            .api_key("sk-ant-test")
            .max_tokens(8000)
            .thinking(Thinking::Budget(2048)))
    };
    for (model, input) in [
        ("text", go()),
        ("server-tool", go()),
        ("overloaded", go()),
        (
            "echo",
            history(
                "anthropic.thinking_signature",
                fake_anthropic::SIG_A,
                Some(fake_anthropic::REDACTED),
            ),
        ),
        ("echo", history("", "sig-untyped", None)),
        ("echo", forced_tool()),
    ] {
        let events = events_of(
            agent(model).system_prompt("Be brief.").build().unwrap(),
            &input,
        )
        .await;
        assert!(
            matches!(events.last(), Some(Event::RunFinished(_))),
            "{model}: {:?}",
            events.last()
        );
    }
    let events = events_of(agent("bad-request").build().unwrap(), &go()).await;
    last_is_run_error(&events, "bad-request");
    let requests: Vec<Value> = fake_a
        .requests
        .lock()
        .unwrap()
        .iter()
        .inspect(|r| assert_eq!(r.path, "/v1/messages"))
        .map(|r| r.body.clone())
        .collect();
    assert_eq!(
        requests.len(),
        9,
        "one per run, two for the tool loop and the retry"
    );

    // What each scenario means, as the SDK's accumulator must rebuild it.
    let usage = |output: u64| json!({ "input_tokens": 10, "output_tokens": output });
    let text = |t: &str| json!({ "type": "text", "text": t });
    let thinking = |t: &str, s: &str| json!({ "type": "thinking", "thinking": t, "signature": s });
    let tool_use = |id: &str, name: &str, input: Value| json!({ "type": "tool_use", "id": id, "name": name, "input": input });
    let message = |content: Value, stop: Value, usage: Value| {
        json!({ "message": { "id": "msg_01", "type": "message", "role": "assistant",
                             "model": "claude-x", "content": content, "stop_reason": stop,
                             "usage": usage } })
    };
    let tool_result = json!([
        { "role": "user", "content": "a card for Oslo" },
        { "role": "assistant", "content": [
            { "type": "thinking", "thinking": "The user wants a card for Oslo.", "signature": fake_anthropic::SIG_A },
            { "type": "tool_use", "id": "toolu_01A", "name": "show_card", "input": { "city": "Oslo" } }
        ]},
        { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "toolu_01A", "content": "shown" }] }
    ]);
    let cases = json!([
        { "model": "text", "expect": message(
            json!([text("Hello, w\u{f6}rld! \u{1f600}")]), json!("end_turn"),
            json!({ "input_tokens": 10, "output_tokens": 7, "cache_creation_input_tokens": 5,
                    "cache_read_input_tokens": 100, "output_tokens_details": { "thinking_tokens": 0 } })) },
        { "model": "thinking-tool", "expect": message(json!([
            thinking("The user wants a card for Oslo.", fake_anthropic::SIG_A),
            tool_use("toolu_01A", "show_card", json!({ "city": "Oslo" }))
          ]), json!("tool_use"), usage(9)) },
        { "model": "thinking-tool", "input": tool_result,
          "expect": message(json!([text("Card shown.")]), json!("end_turn"), usage(9)) },
        { "model": "blocks", "expect": message(json!([
            { "type": "redacted_thinking", "data": fake_anthropic::REDACTED },
            thinking("", fake_anthropic::SIG_C),
            thinking("Second thought.", fake_anthropic::SIG_B),
            text("Answer.")
          ]), json!("end_turn"), usage(9)) },
        { "model": "server-tool", "expect": message(json!([
            thinking("Add them.", fake_anthropic::SIG_A),
            text("Adding."),
            tool_use("toolu_add", "add", json!({ "a": 2, "b": 3 }))
          ]), json!("tool_use"), usage(9)) },
        { "model": "echo", "expect": message(json!([text("ok")]), json!("end_turn"), usage(9)) },
        { "model": "refusal", "expect": message(json!([text("I ")]), json!("refusal"), usage(9)) },
        { "model": "max-tokens",
          "expect": message(json!([text("Long answ")]), json!("max_tokens"), usage(9)) },
        // Cut: the SDK rebuilds what came, with no stop reason (never a whole message).
        { "model": "cut", "complete": false, "expect": message(json!([
            thinking("Half a ", fake_anthropic::SIG_A),
            tool_use("toolu_cut", "show_card", json!({}))
          ]), Value::Null, json!({ "input_tokens": 3, "output_tokens": 1 })) },
        { "model": "cut-thinking", "complete": false, "expect": message(json!([
            text("First."), thinking("Half a", "")
          ]), Value::Null, json!({ "input_tokens": 3 })) },
        { "model": "no-stop-event", "complete": false,
          "expect": message(json!([text("Whole.")]), json!("end_turn"),
                            json!({ "input_tokens": 3, "output_tokens": 2 })) },
        { "model": "error-mid", "complete": false, "expect": { "raised": {
            "class": "APIStatusError",
            "body": { "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded at shard 10.0.0.7" } } } } },
        // 529 first: the SDK retries, then reads the answer.
        { "model": "overloaded", "raw": [529, 200],
          "expect": message(json!([text("after a retry")]), json!("end_turn"), usage(9)) },
        { "model": "bad-request", "raw": [400], "expect": { "raised": {
            "class": "BadRequestError", "status": 400,
            "body": { "type": "error", "error": { "type": "invalid_request_error",
                      "message": "max_tokens: 999999 > 64000, the maximum for this model" } } } } },
        { "model": "no-such-model", "raw": [404], "expect": { "raised": {
            "class": "NotFoundError", "status": 404,
            "body": { "type": "error", "error": { "type": "not_found_error", "message": "no scenario" } } } } }
    ]);
    let sdk = fake_anthropic::start().await;
    let raw = fake_anthropic::start().await;
    prove(
        "anthropic",
        &json!({ "base_url": format!("http://{}", sdk.addr),
                 "raw_url": format!("{}/messages", raw.url()),
                 "cases": cases, "requests": requests }),
    )
    .await;
    assert_eq!(
        sdk.requests_for("overloaded").len(),
        2,
        "the SDK retried the 529"
    );
    assert!(sdk
        .requests
        .lock()
        .unwrap()
        .iter()
        .all(|r| r.path == "/v1/messages"));
}

#[tokio::test]
async fn responses_fake_and_requests_are_what_the_official_sdk_reads_and_takes() {
    if !sdks_ready("sdk_proof::responses") {
        return;
    }
    let fake_a = fake_responses::start().await;
    let agent = |model: &str| {
        add(ModelAgent::responses(fake_a.url(), model)
            .api_key("sk-proj-test")
            .max_tokens(8000)
            .reasoning_effort(Effort::Low))
    };
    for (model, input) in [
        ("text", go()),
        ("server-tool", go()),
        ("busy", go()),
        (
            "echo",
            history("openai.encrypted_content", fake_responses::ENC_A, None),
        ),
        ("echo", history("", "gAAAA-untyped", None)),
        ("echo", forced_tool()),
    ] {
        let events = events_of(
            agent(model).system_prompt("Be brief.").build().unwrap(),
            &input,
        )
        .await;
        assert!(
            matches!(events.last(), Some(Event::RunFinished(_))),
            "{model}: {:?}",
            events.last()
        );
    }
    let events = events_of(agent("bad-request").build().unwrap(), &go()).await;
    last_is_run_error(&events, "bad-request");
    let events = events_of(agent("cut").build().unwrap(), &go()).await;
    assert!(
        matches!(events.last(), Some(Event::RunError(e)) if e.code.as_deref() == Some("upstream_cut")),
        "cut: {:?}",
        events.last()
    );
    let requests: Vec<Value> = fake_a
        .requests
        .lock()
        .unwrap()
        .iter()
        .inspect(|r| assert_eq!(r.path, "/v1/responses"))
        .map(|r| r.body.clone())
        .collect();
    assert_eq!(
        requests.len(),
        10,
        "one per run, two for the tool loop and the retry"
    );

    let text = |id: &str, t: &str| {
        json!({ "type": "message", "id": id, "role": "assistant", "status": "completed",
                "content": [{ "type": "output_text", "text": t, "annotations": [] }] })
    };
    let reasoning = |id: &str, t: &str, enc: &str| {
        json!({ "type": "reasoning", "id": id, "summary": [{ "type": "summary_text", "text": t }],
                "encrypted_content": enc })
    };
    let call = |id: &str, call_id: &str, name: &str, args: &str| {
        json!({ "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": args, "status": "completed" })
    };
    let usage = |input: u64, cached: u64, output: u64, reasoning: u64| {
        json!({ "input_tokens": input, "input_tokens_details": { "cached_tokens": cached, "cache_write_tokens": 0 },
                "output_tokens": output, "output_tokens_details": { "reasoning_tokens": reasoning },
                "total_tokens": input + output })
    };
    let response = |model: &str, output: Value, usage: Value| {
        json!({ "response": { "id": "resp_0123", "object": "response", "status": "completed",
                              "model": model, "output": output, "usage": usage } })
    };
    let not_completed = json!({ "class": "RuntimeError",
                                "message": "Didn't receive a `response.completed` event." });
    let answered = json!([
        { "role": "user", "content": "a card for Oslo" },
        { "type": "function_call", "call_id": "call_01A", "name": "show_card", "arguments": "{\"city\": \"Oslo\"}" },
        { "type": "function_call_output", "call_id": "call_01A", "output": "shown" }
    ]);
    let cases = json!([
        { "model": "text", "expect": response("text",
            json!([text("msg_01", "Hello, w\u{f6}rld! \u{1f600}")]), usage(120, 100, 30, 20)) },
        { "model": "reasoning-tool", "expect": response("reasoning-tool", json!([
            reasoning("rs_01A", "The user wants a card for Oslo.", fake_responses::ENC_A),
            call("fc_01A", "call_01A", "show_card", "{\"city\": \"Oslo\"}")
          ]), usage(10, 0, 9, 0)) },
        { "model": "reasoning-tool", "input": answered, "expect": response("reasoning-tool",
            json!([text("msg_02", "Card shown.")]), usage(10, 0, 9, 0)) },
        { "model": "server-tool", "expect": response("server-tool", json!([
            reasoning("rs_add", "Add them.", fake_responses::ENC_B),
            call("fc_add", "call_add", "add", "{\"a\": 2, \"b\": 3}")
          ]), usage(10, 0, 9, 0)) },
        { "model": "echo", "expect": response("echo", json!([text("msg_echo", "ok")]), usage(10, 0, 9, 0)) },
        { "model": "refusal", "expect": response("refusal", json!([
            { "type": "message", "id": "msg_r", "status": "completed",
              "content": [{ "type": "refusal", "refusal": "I can't help with that." }] }
          ]), usage(5, 0, 6, 0)) },
        // The bad ends: the SDK has no final response, and says why in its last event.
        { "model": "failed", "complete": false, "expect": { "raised": not_completed,
          "last_event": { "type": "response.failed", "response": { "status": "failed",
            "error": { "code": "server_error", "message": "Internal failure at 10.0.0.7" },
            "output": [text("msg_f", "Partial")] } } } },
        { "model": "incomplete", "complete": false, "expect": { "raised": not_completed,
          "last_event": { "type": "response.incomplete", "response": { "status": "incomplete",
            "incomplete_details": { "reason": "max_output_tokens" },
            "output": [text("msg_i", "Long answ")], "usage": usage(10, 0, 16, 0) } } } },
        // Cut mid-item: the SDK has no final response; what came is as it was sent.
        { "model": "cut", "complete": false, "expect": { "raised": not_completed,
          "last_event": { "type": "response.function_call_arguments.delta", "item_id": "fc_cut",
                          "output_index": 1, "delta": "{\"ci", "snapshot": "{\"ci" } } },
        { "model": "error-top", "complete": false, "expect": { "raised": not_completed,
          "last_event": { "type": "error", "code": "rate_limit_exceeded",
                          "message": "Rate limit at shard 10.0.0.7", "param": null } } },
        // Not the Responses wire (what some compatible servers send): the SDK raises it.
        { "model": "error-nested", "complete": false, "expect": { "raised": {
            "class": "APIError", "message": "Too long, see 10.0.0.7",
            "body": { "type": "invalid_request_error", "code": "context_length_exceeded",
                      "message": "Too long, see 10.0.0.7", "param": "input" } } } },
        // 429 first: the SDK retries, then reads the answer.
        { "model": "busy", "raw": [429, 200], "expect": response("busy",
            json!([text("msg_b", "after a retry")]), usage(10, 0, 9, 0)) },
        { "model": "bad-request", "raw": [400], "expect": { "raised": {
            "class": "BadRequestError", "status": 400,
            "body": { "type": "invalid_request_error", "param": "reasoning.effort", "code": "invalid_value",
                      "message": "Invalid value: 'xhigh'. Supported values are: 'low', 'medium' and 'high'." } } } },
        { "model": "no-such-model", "raw": [404], "expect": { "raised": {
            "class": "NotFoundError", "status": 404,
            "body": { "type": "invalid_request_error", "code": "model_not_found",
                      "message": "The model does not exist" } } } }
    ]);
    let sdk = fake_responses::start().await;
    let raw = fake_responses::start().await;
    prove(
        "responses",
        &json!({ "base_url": sdk.url(), "raw_url": format!("{}/responses", raw.url()),
                 "cases": cases, "requests": requests }),
    )
    .await;
    assert_eq!(sdk.requests_for("busy").len(), 2, "the SDK retried the 429");
    assert!(sdk
        .requests
        .lock()
        .unwrap()
        .iter()
        .all(|r| r.path == "/v1/responses"));
}

#[tokio::test]
async fn chat_fake_and_requests_are_what_the_official_sdk_reads_and_takes() {
    if !sdks_ready("sdk_proof::chat") {
        return;
    }
    let fake_a = fake::start().await;
    let agent = |model: &str| {
        add(ModelAgent::chat_completions(fake_a.url(), model)
            .api_key("sk-test")
            .max_tokens(8000))
    };
    for (model, input) in [
        ("text", go()),
        ("server-tool", go()),
        ("busy", go()),
        ("text", history("", "ignored", None)),
        ("text", forced_tool()),
    ] {
        let events = events_of(
            agent(model).system_prompt("Be brief.").build().unwrap(),
            &input,
        )
        .await;
        assert!(
            matches!(events.last(), Some(Event::RunFinished(_))),
            "{model}: {:?}",
            events.last()
        );
    }
    let events = events_of(agent("denied").build().unwrap(), &go()).await;
    last_is_run_error(&events, "denied");
    let requests = fake_a.requests();
    assert_eq!(
        requests.len(),
        8,
        "one per run, two for the tool loop and the retry"
    );

    let message = |m: Value, finish: &str| {
        json!({ "completion": { "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{ "index": 0, "finish_reason": finish, "message": m }] } })
    };
    let with_usage = |mut c: Value, prompt: u64, completion: u64| {
        c["completion"]["usage"] = json!({ "prompt_tokens": prompt, "completion_tokens": completion,
                                           "total_tokens": prompt + completion });
        c
    };
    let call = |id: &str, name: &str, args: &str| json!({ "id": id, "type": "function", "function": { "name": name, "arguments": args } });
    let mut cut = message(
        json!({ "role": "assistant", "content": "Cut here", "tool_calls": null }),
        "stop",
    );
    cut["completion"]["choices"][0]["finish_reason"] = Value::Null;
    let cases = json!([
        { "model": "text", "expect": with_usage(message(json!({ "role": "assistant",
            "content": "Hello, w\u{f6}rld! \u{1f600}", "tool_calls": null }), "stop"), 11, 3) },
        { "model": "tool", "expect": with_usage(message(json!({ "role": "assistant", "content": null,
            "tool_calls": [call("call_1", "show_card", "{\"city\": \"Z\u{fc}rich \\\"Old Town\\\"\", \"n\": 1}")] }),
            "tool_calls"), 20, 9) },
        { "model": "parallel", "expect": with_usage(message(json!({ "role": "assistant",
            "content": "Looking up both.", "tool_calls": [
                call("call_a", "show_card", "{\"city\":\"Paris\"}"),
                call("call_b", "show_card", "{\"city\":\"Berlin\"}")
            ] }), "tool_calls"), 30, 12) },
        // What compatible servers send besides OpenAI's fields: the SDK keeps the content.
        { "model": "reasoning", "extras": ["reasoning_content"],
          "expect": with_usage(message(json!({ "role": "assistant", "content": "Hi!" }), "stop"), 5, 7) },
        { "model": "reasoning-field", "extras": ["reasoning"],
          "expect": message(json!({ "role": "assistant", "content": "Done." }), "stop") },
        { "model": "refusal", "expect": message(json!({ "role": "assistant", "content": null,
            "refusal": "I can't help with that." }), "stop") },
        { "model": "server-tool", "expect": with_usage(message(json!({ "role": "assistant",
            "content": null, "tool_calls": [call("call_add", "add", "{\"a\": 2, \"b\": 3}")] }),
            "tool_calls"), 15, 5) },
        { "model": "error-mid", "expect": { "raised": { "class": "APIError",
            "message": "upstream shard 7 at 10.0.0.3 failed",
            "body": { "message": "upstream shard 7 at 10.0.0.3 failed", "type": "server_error" } } } },
        // No `[DONE]`, but a finish reason: whole.
        { "model": "no-done", "complete": false, "expect": with_usage(message(json!({
            "role": "assistant", "content": "Whole answer." }), "stop"), 11, 2) },
        // Cut: neither a finish reason nor `[DONE]`; the SDK has no finish reason either.
        { "model": "cut", "complete": false, "expect": cut },
        // 429 first: the SDK retries, then reads the answer.
        { "model": "busy", "raw": [429, 200], "expect": with_usage(message(json!({
            "role": "assistant", "content": "after a retry" }), "stop"), 11, 2) },
        { "model": "denied", "raw": [401], "expect": { "raised": {
            "class": "AuthenticationError", "status": 401,
            "body": { "message": "Incorrect API key provided: sk-abc***", "type": "invalid_request_error",
                      "code": "invalid_api_key" } } } }
    ]);
    let sdk = fake::start().await;
    let raw = fake::start().await;
    prove(
        "chat",
        &json!({ "base_url": sdk.url(), "raw_url": format!("{}/chat/completions", raw.url()),
                 "cases": cases, "requests": requests }),
    )
    .await;
    assert_eq!(sdk.requests_for("busy").len(), 2, "the SDK retried the 429");
}
