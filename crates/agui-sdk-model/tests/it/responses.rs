//! The agent over the OpenAI Responses API, against a fake server speaking its exact
//! wire (`fake_responses`), served by `agui-sdk-server` with verification on and read
//! by the client: text, reasoning items as reasoning messages with their encrypted
//! content, function calls by `call_id`, usage, refusals, failures; and the stateless
//! history sent back on the next run, each reasoning item byte for byte before the
//! calls it preceded.

use crate::common::{conversation, events_of, go, run_error, serve, types, verify, Add};
use crate::fake_responses as fake;

use std::time::Duration;

use agui_sdk_client::RunParams;
use agui_sdk_core::{Event, Message, RunAgentInput};
use agui_sdk_model::{Effort, ModelAgent, ModelAgentBuilder, ToolContext, ToolResult};
use serde_json::json;

const KEY: &str = "sk-proj-test-0042";

fn builder(fake: &fake::Fake, model: &str) -> ModelAgentBuilder {
    ModelAgent::responses(fake.url(), model)
        .api_key(KEY)
        .reasoning_effort(Effort::Low)
        .retries(2, Duration::from_millis(1))
        .read_timeout(Duration::from_secs(10))
        .tool(
            "add",
            "Adds two numbers.",
            |x: Add, _: ToolContext| async move { Ok(ToolResult::text((x.a + x.b).to_string())) },
        )
}

#[tokio::test]
async fn text_streams_from_a_stateless_request_with_usage_mapped() {
    let fake = fake::start().await;
    let agent = builder(&fake, "text")
        .system_prompt("Be brief.")
        .max_tokens(500)
        .build()
        .unwrap();
    let url = serve(agent).await;
    let sink = std::sync::Arc::default();
    let mut conv = conversation(url, std::sync::Arc::clone(&sink));
    conv.add_message(Message::user("u1", "hello"));
    let r = conv
        .run_agent(RunParams::new().run_id("r1"))
        .await
        .expect("the run succeeds");
    let events = sink.lock().unwrap().clone();
    verify(&events);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    let text = conv.messages().iter().find_map(|m| match m {
        Message::Assistant(a) => a.content.clone(),
        _ => None,
    });
    assert_eq!(text.as_deref(), Some("Hello, w\u{f6}rld! \u{1f600}"));
    let u = &r.usage[0];
    assert_eq!(u.input_tokens, Some(120));
    assert_eq!(u.cached_input_tokens, Some(100));
    assert_eq!(u.output_tokens, Some(30));
    assert_eq!(u.reasoning_tokens, Some(20));
    assert_eq!(u.total_tokens, Some(150));
    assert_eq!(u.provider.as_deref(), Some("openai"));
    assert_eq!(u.model.as_deref(), Some("text"));

    let req = fake.requests_for("text").pop().unwrap();
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(
        req.headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {KEY}").as_str())
    );
    let b = &req.body;
    assert_eq!(b["stream"], true);
    assert_eq!(b["store"], false);
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["reasoning"], json!({ "effort": "low" }));
    assert_eq!(b["max_output_tokens"], 500);
    assert!(b.get("max_tokens").is_none(), "{b}");
    assert_eq!(b["instructions"], "Be brief.");
    assert_eq!(
        b["input"],
        json!([{ "type": "message", "role": "user", "content": "hello" }])
    );
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["tools"][0]["name"], "add");
    assert_eq!(b["tools"][0]["parameters"]["type"], "object");
    assert_eq!(
        b["tools"][1],
        json!({ "type": "function", "name": "show_card", "description": "Shows a card for a city.",
                "parameters": { "type": "object", "properties": { "city": { "type": "string" } } },
                "strict": false })
    );
}

/// A reasoning item with its summary and encrypted content, then a `function_call` of
/// a frontend tool: the run ends with the call pending (its `call_id` the
/// `toolCallId`) and a reasoning message whose id is the item's, carrying the value;
/// the next run's stateless request sends the reasoning item (same id, summary,
/// encrypted content byte for byte) before the `function_call`, then its
/// `function_call_output`.
#[tokio::test]
async fn reasoning_and_a_frontend_call_round_trip_with_the_encrypted_content_byte_for_byte() {
    let fake = fake::start().await;
    let url = serve(builder(&fake, "reasoning-tool").build().unwrap()).await;
    let sink = std::sync::Arc::default();
    let mut conv = conversation(url, std::sync::Arc::clone(&sink));
    conv.add_message(Message::user("u1", "a card for Oslo"));
    conv.run_agent(RunParams::new().run_id("r1"))
        .await
        .expect("the run succeeds");
    let events = sink.lock().unwrap().clone();
    verify(&events);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_ENCRYPTED_VALUE",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]
    );
    let Some(Event::ReasoningEncryptedValue(e)) = events
        .iter()
        .find(|e| matches!(e, Event::ReasoningEncryptedValue(_)))
    else {
        unreachable!()
    };
    assert_eq!(e.encrypted_value, fake::ENC_A);
    assert_eq!(e.entity_id, "rs_01A");
    assert_eq!(
        e.encrypted_value_type.as_deref(),
        Some("openai.encrypted_content")
    );
    let reasoning = conv
        .messages()
        .iter()
        .find_map(|m| match m {
            Message::Reasoning(r) => Some(r.clone()),
            _ => None,
        })
        .expect("a reasoning message");
    assert_eq!(reasoning.id, "rs_01A");
    assert_eq!(reasoning.content, "The user wants a card for Oslo.");
    assert_eq!(reasoning.encrypted_value.as_deref(), Some(fake::ENC_A));
    assert_eq!(
        reasoning.encrypted_value_type.as_deref(),
        Some("openai.encrypted_content")
    );
    let pending: Vec<_> = conv
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => a.tool_calls.clone(),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, "call_01A");
    assert_eq!(pending[0].function.arguments, "{\"city\": \"Oslo\"}");

    conv.add_message(Message::tool("t1", "call_01A", "shown"));
    conv.run_agent(RunParams::new().run_id("r2"))
        .await
        .expect("the second run succeeds");
    let reqs = fake.requests_for("reasoning-tool");
    assert_eq!(reqs.len(), 2);
    let b = &reqs[1].body;
    assert_eq!(b["store"], false);
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        b["input"],
        json!([
            { "type": "message", "role": "user", "content": "a card for Oslo" },
            { "type": "reasoning", "id": "rs_01A",
              "summary": [{ "type": "summary_text", "text": "The user wants a card for Oslo." }],
              "encrypted_content": fake::ENC_A },
            { "type": "function_call", "call_id": "call_01A", "name": "show_card",
              "arguments": "{\"city\": \"Oslo\"}" },
            { "type": "function_call_output", "call_id": "call_01A", "output": "shown" }
        ])
    );
    assert_eq!(
        conv.messages().last().and_then(|m| match m {
            Message::Assistant(a) => a.content.clone(),
            _ => None,
        }),
        Some("Card shown.".to_owned())
    );
}

/// A server-side tool within one run: the next request of the run carries the turn's
/// items as they came (the reasoning item, the call), then the output.
#[tokio::test]
async fn a_server_side_tool_loops_with_the_turns_items_as_they_came() {
    let fake = fake::start().await;
    let events = events_of(builder(&fake, "server-tool").build().unwrap(), &go()).await;
    verify(&events);
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    let reqs = fake.requests_for("server-tool");
    assert_eq!(reqs.len(), 2);
    let input = reqs[1].body["input"].as_array().unwrap().clone();
    assert_eq!(
        input[1..],
        [
            json!({ "type": "reasoning", "id": "rs_add",
                    "summary": [{ "type": "summary_text", "text": "Add them." }],
                    "encrypted_content": fake::ENC_B }),
            json!({ "type": "function_call", "call_id": "call_add", "name": "add",
                    "arguments": "{\"a\": 2, \"b\": 3}" }),
            json!({ "type": "function_call_output", "call_id": "call_add", "output": "5" }),
        ]
    );
}

/// Log lines written to a buffer, for one test's thread.
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A client's history: a value of Anthropic's type is not sent (the warning names the
/// message and the type, at `warn`, the level a server logs by default); a value
/// without a type (a 1.0 client does not keep `encryptedValueType`) is taken as
/// OpenAI's own and sent as the reasoning item's encrypted content.
#[tokio::test]
async fn another_providers_value_is_dropped_with_a_warning_and_an_untyped_one_is_sent() {
    let logs = Logs::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let fake = fake::start().await;
    let input: RunAgentInput = serde_json::from_value(json!({
        "threadId": "t", "runId": "r",
        "messages": [
            { "id": "u1", "role": "user", "content": "first" },
            { "id": "rs-claude-7", "role": "reasoning", "content": "Claude thought.", "encryptedValue": "EqQBsig-anthropic", "encryptedValueType": "anthropic.thinking_signature" },
            { "id": "rs_untyped", "role": "reasoning", "content": "", "encryptedValue": "gAAAA-untyped" },
            { "id": "a1", "role": "assistant", "content": "Hi.", "toolCalls": [
                { "id": "call_9", "type": "function", "function": { "name": "show_card", "arguments": "{}" } }
            ]},
            { "id": "t1", "role": "tool", "toolCallId": "call_9", "content": "", "error": "timeout" },
            { "id": "u2", "role": "user", "content": "again" }
        ]
    }))
    .unwrap();
    let events = events_of(builder(&fake, "echo").build().unwrap(), &input).await;
    verify(&events);
    let req = fake.requests_for("echo").pop().unwrap();
    assert_eq!(
        req.body["input"],
        json!([
            { "type": "message", "role": "user", "content": "first" },
            { "type": "reasoning", "id": "rs_untyped", "summary": [], "encrypted_content": "gAAAA-untyped" },
            { "type": "message", "role": "assistant", "content": "Hi." },
            { "type": "function_call", "call_id": "call_9", "name": "show_card", "arguments": "{}" },
            { "type": "function_call_output", "call_id": "call_9", "output": "error: timeout" },
            { "type": "message", "role": "user", "content": "again" }
        ])
    );
    assert!(!req.body.to_string().contains("EqQBsig-anthropic"));
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let line = logs
        .lines()
        .find(|l| l.contains("another provider's type"))
        .unwrap_or_else(|| panic!("no warning in {logs:?}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("rs-claude-7"), "{line}");
    assert!(line.contains("anthropic.thinking_signature"), "{line}");
}

/// `response.failed`, `response.incomplete` (its reason) and `error` events (their
/// fields at the top level or under `error`) end the run with `RUN_ERROR` and a code,
/// after what came; the endpoint's own words (an address here) are not shown.
#[tokio::test]
async fn failed_incomplete_and_error_events_end_the_run_with_a_code() {
    let fake = fake::start().await;
    for (model, code, says) in [
        ("failed", "upstream_error", "failed response (server_error)"),
        ("incomplete", "max_tokens", "max_output_tokens"),
        (
            "error-top",
            "upstream_error",
            "an error (rate_limit_exceeded)",
        ),
        (
            "error-nested",
            "upstream_error",
            "an error (context_length_exceeded)",
        ),
    ] {
        let events = events_of(builder(&fake, model).build().unwrap(), &go()).await;
        verify(&events);
        let (message, c) = run_error(&events);
        assert_eq!(c, code, "{model}: {message}");
        assert!(message.contains(says), "{model}: {message}");
        assert!(!message.contains("10.0.0.7"), "{message}");
        assert!(
            types(&events).contains(&"TEXT_MESSAGE_CONTENT"),
            "{model}: what came is kept"
        );
    }
}

#[tokio::test]
async fn a_refusal_is_a_run_error_with_the_models_words() {
    let fake = fake::start().await;
    let events = events_of(builder(&fake, "refusal").build().unwrap(), &go()).await;
    verify(&events);
    let (message, code) = run_error(&events);
    assert_eq!(code, "refusal");
    assert_eq!(message, "the model refused: I can't help with that.");
}

#[tokio::test]
async fn a_rate_limit_before_the_first_token_is_retried() {
    let fake = fake::start().await;
    let events = events_of(builder(&fake, "busy").build().unwrap(), &go()).await;
    verify(&events);
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    assert_eq!(fake.requests_for("busy").len(), 2);
}

/// An endpoint's error answer names the URL called.
#[tokio::test]
async fn an_error_answer_names_the_url_called() {
    let fake = fake::start().await;
    let events = events_of(builder(&fake, "no-such-model").build().unwrap(), &go()).await;
    verify(&events);
    let (message, code) = run_error(&events);
    assert_eq!(code, "upstream_error");
    assert_eq!(
        message,
        format!(
            "the model endpoint failed: POST http://{}/v1/responses answered 404",
            fake.addr
        )
    );
    assert!(!message.contains(KEY));
}

#[test]
fn thinking_and_effort_are_each_for_their_own_apis() {
    let err = ModelAgent::responses("http://127.0.0.1:9/v1", "m")
        .thinking(agui_sdk_model::Thinking::Adaptive)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("reasoning_effort"), "{err}");
    #[cfg(feature = "anthropic")]
    {
        let err = ModelAgent::anthropic("http://127.0.0.1:9/v1", "m")
            .reasoning_effort(Effort::High)
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("ModelAgentBuilder::thinking"), "{err}");
    }
    assert_eq!("medium".parse::<Effort>().unwrap(), Effort::Medium);
    assert!("max".parse::<Effort>().is_err());
}
