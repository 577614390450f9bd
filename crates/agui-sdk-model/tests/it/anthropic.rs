//! The agent over the Anthropic Messages API, against a fake server speaking its exact
//! wire (`fake_anthropic`), served by `agui-sdk-server` with verification on and read
//! by the client: text, thinking blocks as reasoning messages with their signatures,
//! redacted thinking, tool calls, usage, stop reasons, errors; and the history sent
//! back on the next run, thinking blocks byte for byte before the `tool_use`.

use crate::common::{
    conversation, events_of, go, run_error, serve, tool_choice, types, verify, Add,
};
use crate::fake_anthropic as fake;

use std::time::Duration;

use agui_sdk_client::RunParams;
use agui_sdk_core::{Event, Message, RunAgentInput};
use agui_sdk_model::{ModelAgent, ModelAgentBuilder, Thinking, ToolContext, ToolResult};
use serde_json::json;

const KEY: &str = "sk-ant-test-0042";

fn builder(fake: &fake::Fake, model: &str) -> ModelAgentBuilder {
    ModelAgent::anthropic(fake.url(), model)
        .api_key(KEY)
        .max_tokens(8000)
        .thinking(Thinking::Budget(2048))
        .retries(2, Duration::from_millis(1))
        .read_timeout(Duration::from_secs(10))
        .tool(
            "add",
            "Adds two numbers.",
            |x: Add, _: ToolContext| async move { Ok(ToolResult::text((x.a + x.b).to_string())) },
        )
}

#[tokio::test]
async fn text_streams_with_the_headers_the_api_wants_and_usage_mapped() {
    let fake = fake::start().await;
    let agent = builder(&fake, "text")
        .system_prompt("Be brief.")
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
    assert_eq!(
        u.input_tokens,
        Some(115),
        "the whole prompt: 10 + 100 read + 5 written"
    );
    assert_eq!(u.cached_input_tokens, Some(100));
    assert_eq!(u.cache_write_input_tokens, Some(5));
    assert_eq!(u.output_tokens, Some(7));
    assert_eq!(u.total_tokens, Some(122));
    assert_eq!(u.reasoning_tokens, Some(0));
    assert_eq!(u.provider.as_deref(), Some("anthropic"));
    assert_eq!(u.model.as_deref(), Some("text"));

    let req = fake.requests_for("text").pop().unwrap();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.headers.get("x-api-key").map(String::as_str), Some(KEY));
    assert_eq!(
        req.headers.get("anthropic-version").map(String::as_str),
        Some("2023-06-01")
    );
    assert!(!req.headers.contains_key("authorization"));
    let b = &req.body;
    assert_eq!(b["max_tokens"], 8000);
    assert_eq!(b["stream"], true);
    assert_eq!(
        b["thinking"],
        json!({ "type": "enabled", "budget_tokens": 2048 })
    );
    assert_eq!(b["system"], "Be brief.");
    assert_eq!(
        b["messages"],
        json!([{ "role": "user", "content": [{ "type": "text", "text": "hello" }] }])
    );
    assert_eq!(b["tools"][0]["name"], "add");
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(b["tools"][1]["name"], "show_card");
    assert_eq!(
        b["tools"][1]["input_schema"],
        json!({ "type": "object", "properties": { "city": { "type": "string" } } })
    );
}

/// A thinking block then a `tool_use` of a frontend tool: the run ends with the call
/// pending and a reasoning message carrying the signature; the next run (the client
/// answered) sends the thinking block with the same signature byte for byte before the
/// `tool_use`, then the `tool_result`.
#[tokio::test]
async fn thinking_and_a_frontend_tool_round_trip_with_the_signature_byte_for_byte() {
    let fake = fake::start().await;
    let url = serve(builder(&fake, "thinking-tool").build().unwrap()).await;
    let sink = std::sync::Arc::default();
    let mut conv = conversation(url.clone(), std::sync::Arc::clone(&sink));
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
    assert_eq!(e.encrypted_value, fake::SIG_A);
    assert_eq!(
        e.encrypted_value_type.as_deref(),
        Some("anthropic.thinking_signature")
    );
    let reasoning = conv.messages().iter().find_map(|m| match m {
        Message::Reasoning(r) => Some(r.clone()),
        _ => None,
    });
    let reasoning = reasoning.expect("a reasoning message");
    assert_eq!(reasoning.content, "The user wants a card for Oslo.");
    assert_eq!(reasoning.encrypted_value.as_deref(), Some(fake::SIG_A));
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
    assert_eq!(pending[0].id, "toolu_01A");
    assert_eq!(pending[0].function.arguments, "{\"city\": \"Oslo\"}");

    // The client answers the call and runs again, with the history.
    conv.add_message(Message::tool("t1", "toolu_01A", "shown"));
    conv.run_agent(RunParams::new().run_id("r2"))
        .await
        .expect("the second run succeeds");
    let reqs = fake.requests_for("thinking-tool");
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "a card for Oslo" }] },
            { "role": "assistant", "content": [
                { "type": "thinking", "thinking": "The user wants a card for Oslo.", "signature": fake::SIG_A },
                { "type": "tool_use", "id": "toolu_01A", "name": "show_card", "input": { "city": "Oslo" } }
            ]},
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_01A", "content": "shown" }
            ]}
        ])
    );
}

/// Redacted thinking, a signed thinking block whose text is omitted, and a thinking
/// block with text: three reasoning messages, each with its value and type; on the next
/// run they go back in their order, before the text.
#[tokio::test]
async fn several_thinking_blocks_and_redacted_thinking_each_become_a_reasoning_message() {
    let fake = fake::start().await;
    let url = serve(builder(&fake, "blocks").build().unwrap()).await;
    let sink = std::sync::Arc::default();
    let mut conv = conversation(url, std::sync::Arc::clone(&sink));
    conv.add_message(Message::user("u1", "think"));
    conv.run_agent(RunParams::new().run_id("r1"))
        .await
        .expect("the run succeeds");
    verify(&sink.lock().unwrap());
    let reasoning: Vec<(String, Option<String>, Option<String>)> = conv
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::Reasoning(r) => Some((
                r.content.clone(),
                r.encrypted_value.clone(),
                r.encrypted_value_type.clone(),
            )),
            _ => None,
        })
        .collect();
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        reasoning,
        [
            (
                String::new(),
                some(fake::REDACTED),
                some("anthropic.redacted_thinking")
            ),
            (
                String::new(),
                some(fake::SIG_C),
                some("anthropic.thinking_signature")
            ),
            (
                "Second thought.".to_owned(),
                some(fake::SIG_B),
                some("anthropic.thinking_signature")
            ),
        ]
    );
    conv.add_message(Message::user("u2", "and?"));
    conv.run_agent(RunParams::new().run_id("r2"))
        .await
        .expect("the second run succeeds");
    let reqs = fake.requests_for("blocks");
    assert_eq!(
        reqs[1].body["messages"][1],
        json!({ "role": "assistant", "content": [
            { "type": "redacted_thinking", "data": fake::REDACTED },
            { "type": "thinking", "thinking": "", "signature": fake::SIG_C },
            { "type": "thinking", "thinking": "Second thought.", "signature": fake::SIG_B },
            { "type": "text", "text": "Answer." }
        ]})
    );
}

/// A client's history, as 1.0 clients and others keep it: an untyped value (taken as
/// Anthropic's own), a value of OpenAI's type (dropped), a turn split into a text
/// message and a tool call message without a parent (one turn), an empty text (never
/// sent), a tool error.
#[tokio::test]
async fn a_clients_history_is_replayed_as_one_turn_per_assistant_turn() {
    let fake = fake::start().await;
    let input: RunAgentInput = serde_json::from_value(json!({
        "threadId": "t", "runId": "r",
        "context": [{ "description": "locale", "value": "fr-CH" }],
        "messages": [
            { "id": "s", "role": "system", "content": "Sys." },
            { "id": "u1", "role": "user", "content": "first" },
            { "id": "r1", "role": "reasoning", "content": "Untyped.", "encryptedValue": "sig-untyped" },
            { "id": "r2", "role": "reasoning", "content": "From OpenAI.", "encryptedValue": "gAAAA-openai", "encryptedValueType": "openai.encrypted_content" },
            { "id": "a1", "role": "assistant", "content": "Calling." },
            { "id": "a2", "role": "assistant", "content": "", "toolCalls": [
                { "id": "c1", "type": "function", "function": { "name": "show_card", "arguments": "{\"city\":\"Rome\"}" } }
            ]},
            { "id": "t1", "role": "tool", "toolCallId": "c1", "content": "", "error": "timeout" },
            { "id": "u2", "role": "user", "content": "again" },
            { "id": "a3", "role": "assistant", "content": "" },
            { "id": "u3", "role": "user", "content": [
                { "type": "text", "text": "Look:" },
                { "type": "image", "source": { "type": "data", "value": "QUJD", "mimeType": "image/png" } }
            ]}
        ]
    }))
    .unwrap();
    let events = events_of(builder(&fake, "echo").build().unwrap(), &input).await;
    verify(&events);
    let req = fake.requests_for("echo").pop().unwrap();
    assert_eq!(
        req.body["system"],
        "Context from the application:\n- locale: fr-CH\n\nSys."
    );
    assert_eq!(
        req.body["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "first" }] },
            { "role": "assistant", "content": [
                { "type": "thinking", "thinking": "Untyped.", "signature": "sig-untyped" },
                { "type": "text", "text": "Calling." },
                { "type": "tool_use", "id": "c1", "name": "show_card", "input": { "city": "Rome" } }
            ]},
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "c1", "content": "error: timeout", "is_error": true },
                { "type": "text", "text": "again" },
                { "type": "text", "text": "Look:" },
                { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "QUJD" } }
            ]}
        ])
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

/// A value of another provider's type is not sent: the warning names the message and
/// the type, at `warn`, the level a server logs by default.
#[tokio::test]
async fn a_value_of_another_providers_type_is_dropped_with_a_warning() {
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
            { "id": "rs-openai-7", "role": "reasoning", "content": "", "encryptedValue": "gAAAA-openai", "encryptedValueType": "openai.encrypted_content" },
            { "id": "a1", "role": "assistant", "content": "Hi." },
            { "id": "u2", "role": "user", "content": "again" }
        ]
    }))
    .unwrap();
    let events = events_of(builder(&fake, "echo").build().unwrap(), &input).await;
    verify(&events);
    let req = fake.requests_for("echo").pop().unwrap();
    assert_eq!(
        req.body["messages"][1],
        json!({ "role": "assistant", "content": [{ "type": "text", "text": "Hi." }] })
    );
    assert!(!req.body.to_string().contains("gAAAA-openai"));
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let line = logs
        .lines()
        .find(|l| l.contains("another provider's type"))
        .unwrap_or_else(|| panic!("no warning in {logs:?}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("rs-openai-7"), "{line}");
    assert!(line.contains("openai.encrypted_content"), "{line}");
}

/// CopilotKit's suggestion run names the tool to call in `forwardedProps.toolChoice`:
/// the model is asked for exactly that call, without thinking (the API refuses a forced
/// tool with thinking on); a tool not offered is not asked for.
#[tokio::test]
async fn a_tool_choice_in_forwarded_props_forces_that_tool_without_thinking() {
    let fake = fake::start().await;
    events_of(
        builder(&fake, "echo").build().unwrap(),
        &tool_choice("copilotkitSuggest"),
    )
    .await;
    let req = fake.requests_for("echo").pop().unwrap();
    assert_eq!(
        req.body["tool_choice"],
        json!({ "type": "tool", "name": "copilotkitSuggest" })
    );
    assert!(req.body.get("thinking").is_none(), "{}", req.body);
    events_of(
        builder(&fake, "echo").build().unwrap(),
        &tool_choice("not_offered"),
    )
    .await;
    let req = fake.requests_for("echo").pop().unwrap();
    assert!(req.body.get("tool_choice").is_none(), "{}", req.body);
    assert_eq!(req.body["thinking"]["type"], "enabled");
}

/// A server-side tool within one run: the next request of the run carries the turn as
/// it came (thinking, text, `tool_use`), then the result.
#[tokio::test]
async fn a_server_side_tool_loops_with_the_turn_as_it_came() {
    let fake = fake::start().await;
    let events = events_of(builder(&fake, "server-tool").build().unwrap(), &go()).await;
    verify(&events);
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    let reqs = fake.requests_for("server-tool");
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        msgs[1..],
        [
            json!({ "role": "assistant", "content": [
                { "type": "thinking", "thinking": "Add them.", "signature": fake::SIG_A },
                { "type": "text", "text": "Adding." },
                { "type": "tool_use", "id": "toolu_add", "name": "add", "input": { "a": 2, "b": 3 } }
            ]}),
            json!({ "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_add", "content": "5" }
            ]})
        ]
    );
}

#[tokio::test]
async fn refusal_max_tokens_and_an_error_event_end_the_run_with_a_code() {
    let fake = fake::start().await;
    for (model, code, says) in [
        ("refusal", "refusal", "refused"),
        ("max-tokens", "max_tokens", "max_tokens"),
        (
            "error-mid",
            "upstream_error",
            "reported an error (overloaded_error)",
        ),
    ] {
        let events = events_of(builder(&fake, model).build().unwrap(), &go()).await;
        verify(&events);
        let (message, c) = run_error(&events);
        assert_eq!(c, code, "{model}");
        assert!(message.contains(says), "{model}: {message}");
        assert!(!message.contains("10.0.0.7"), "{message}");
        assert!(
            types(&events).contains(&"TEXT_MESSAGE_CONTENT"),
            "{model}: what came is kept"
        );
    }
}

/// A stream cut mid-block ends the run with `upstream_cut`, every open message and call
/// closed in an order the verifier accepts; one that said its stop reason is whole even
/// without `message_stop`.
#[tokio::test]
async fn a_cut_stream_is_closed_cleanly_and_a_stop_reason_makes_it_whole() {
    let fake = fake::start().await;
    let events = events_of(builder(&fake, "cut").build().unwrap(), &go()).await;
    verify(&events);
    let (_, code) = run_error(&events);
    assert_eq!(code, "upstream_cut");
    let t = types(&events);
    assert!(t.contains(&"TOOL_CALL_END"), "{t:?}");

    let events = events_of(builder(&fake, "cut-thinking").build().unwrap(), &go()).await;
    verify(&events);
    let (_, code) = run_error(&events);
    assert_eq!(code, "upstream_cut");
    let t = types(&events);
    let n = t.len();
    assert_eq!(
        t[n - 4..],
        [
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "RUN_ERROR"
        ],
        "the cut block is closed, with no value (it had no signature): {t:?}"
    );

    let events = events_of(builder(&fake, "no-stop-event").build().unwrap(), &go()).await;
    verify(&events);
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn an_overloaded_answer_before_the_first_token_is_retried() {
    let fake = fake::start().await;
    let events = events_of(builder(&fake, "overloaded").build().unwrap(), &go()).await;
    verify(&events);
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    assert_eq!(fake.requests_for("overloaded").len(), 2);
}

#[test]
fn a_thinking_budget_must_fit_below_max_tokens() {
    let err = ModelAgent::anthropic("http://127.0.0.1:9/v1", "m")
        .thinking(Thinking::Budget(8000))
        .build()
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "max_tokens (4096) must be above the thinking budget (8000 tokens): raise it with ModelAgentBuilder::max_tokens"
    );
    assert!(ModelAgent::anthropic("http://127.0.0.1:9/v1", "m")
        .thinking(Thinking::Budget(512))
        .build()
        .is_err());
    assert!(ModelAgent::anthropic("http://127.0.0.1:9/v1", "m")
        .thinking(Thinking::Adaptive)
        .build()
        .is_ok());
}

#[cfg(feature = "chat")]
#[test]
fn thinking_is_refused_on_chat_completions() {
    let err = ModelAgent::chat_completions("http://127.0.0.1:9/v1", "m")
        .thinking(Thinking::Adaptive)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("Anthropic Messages API only"), "{err}");
}
