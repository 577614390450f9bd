//! The agent against a fake chat-completions server speaking the exact wire format
//! (`tests/fake`): every scenario's AG-UI stream passes the verifier (the server
//! verifies what the agent emits, and so does the client) and ends with the expected
//! messages; the request sent upstream is checked field by field.

use crate::common::{run_error, serve, tool_choice, types, verify, Add};
use crate::fake;

use std::sync::atomic::Ordering;
use std::time::Duration;

use agui_sdk_client::{ClientError, Conversation, HttpAgent, RunParams};
use agui_sdk_core::{Event, Message, RunAgentInput, Tool};
use agui_sdk_model::{OpenAiAgent, OpenAiAgentBuilder, ToolContext, ToolResult};
use serde_json::{json, Value};

fn builder(fake: &fake::Fake, model: &str) -> OpenAiAgentBuilder {
    OpenAiAgent::builder(fake.url(), model)
        .retries(2, Duration::from_millis(1))
        .read_timeout(Duration::from_secs(10))
        .tool("add", "Adds two numbers.", |x: Add, _ctx: ToolContext| async move {
            Ok(ToolResult::text((x.a + x.b).to_string()))
        })
}

struct Outcome {
    result: Result<agui_sdk_client::RunResult, ClientError>,
    events: Vec<Event>,
    conv: Conversation,
}

/// One conversation turn against scenario `model`, the client offering the frontend
/// tool `show_card` (unanswered unless `answer` is set).
async fn turn(fake: &fake::Fake, model: &str, answer: bool) -> Outcome {
    let url = serve(builder(fake, model).build().unwrap()).await;
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let card = Tool::new(
        "show_card",
        "Shows a card for a city.",
        json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] }),
    );
    let mut b = Conversation::builder(HttpAgent::builder(url).build().unwrap())
        .thread_id("t")
        .on_event(move |e| sink.lock().unwrap().push(e.clone()));
    if answer {
        b = b
            .tool(card, |_args: Value| async move {
                Ok(agui_sdk_core::Content::from("shown"))
            })
            .answer_tools(2);
    } else {
        // Offered, not answered: the run ends with the call (a conversation answers
        // its registered tools by default).
        b = b
            .tool(card, |_args: Value| async move {
                Ok(agui_sdk_core::Content::from("unused"))
            })
            .answer_tools(0);
    }
    let mut conv = b.build();
    conv.add_message(Message::user("u1", "hello"));
    let result = conv
        .run_agent(RunParams::new().run_id(format!("{model}-run")))
        .await;
    let events = events.lock().unwrap().clone();
    Outcome {
        result,
        events,
        conv,
    }
}

fn assistant(conv: &Conversation) -> &agui_sdk_core::types::AssistantMessage {
    conv.messages()
        .iter()
        .find_map(|m| match m {
            Message::Assistant(a) => Some(a),
            _ => None,
        })
        .expect("an assistant message")
}

#[tokio::test]
async fn plain_text_streams_and_reports_usage() {
    let fake = fake::start().await;
    let o = turn(&fake, "text", false).await;
    let r = o.result.expect("the run succeeds");
    verify(&o.events);
    assert_eq!(
        types(&o.events),
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
    assert_eq!(
        assistant(&o.conv).content.as_deref(),
        Some("Hello, w\u{f6}rld! \u{1f600}")
    );
    assert_eq!(r.usage.len(), 1);
    assert_eq!(
        (r.usage[0].input_tokens, r.usage[0].output_tokens),
        (Some(11), Some(3))
    );
    assert_eq!(r.usage[0].model.as_deref(), Some("text"));
}

#[tokio::test]
async fn a_frontend_tool_call_ends_the_run_with_its_arguments_whole() {
    let fake = fake::start().await;
    let o = turn(&fake, "tool", false).await;
    o.result.expect("the run succeeds");
    verify(&o.events);
    assert!(types(&o.events).contains(&"TOOL_CALL_START"));
    let calls = assistant(&o.conv).tool_calls.clone().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "call_1");
    assert_eq!(calls[0].function.name, "show_card");
    assert_eq!(
        calls[0].function.arguments,
        "{\"city\": \"Z\u{fc}rich \\\"Old Town\\\"\", \"n\": 1}"
    );
    assert!(
        o.conv
            .messages()
            .iter()
            .all(|m| !matches!(m, Message::Tool(_))),
        "no result: the client answers"
    );
}

#[tokio::test]
async fn parallel_tool_calls_belong_to_the_text_message() {
    let fake = fake::start().await;
    let o = turn(&fake, "parallel", false).await;
    o.result.expect("the run succeeds");
    verify(&o.events);
    let a = assistant(&o.conv);
    assert_eq!(a.content.as_deref(), Some("Looking up both."));
    let calls = a.tool_calls.clone().unwrap();
    let args: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.id.as_str(), c.function.arguments.as_str()))
        .collect();
    assert_eq!(
        args,
        [
            ("call_a", "{\"city\":\"Paris\"}"),
            ("call_b", "{\"city\":\"Berlin\"}")
        ]
    );
}

#[tokio::test]
async fn reasoning_deltas_in_either_spelling_become_a_reasoning_message() {
    let fake = fake::start().await;
    for (model, thought, answer) in [
        ("reasoning", "The user greets me.", "Hi!"),
        ("reasoning-field", "Short thought.", "Done."),
    ] {
        let o = turn(&fake, model, false).await;
        o.result.expect("the run succeeds");
        verify(&o.events);
        assert!(types(&o.events).contains(&"REASONING_START"), "{model}");
        let reasoning = o.conv.messages().iter().find_map(|m| match m {
            Message::Reasoning(r) => Some(r.content.clone()),
            _ => None,
        });
        assert_eq!(reasoning.as_deref(), Some(thought), "{model}");
        assert_eq!(assistant(&o.conv).content.as_deref(), Some(answer));
    }
}

#[tokio::test]
async fn an_error_mid_stream_keeps_what_came_and_says_nothing_internal() {
    let fake = fake::start().await;
    let o = turn(&fake, "error-mid", false).await;
    assert!(
        matches!(o.result, Err(ClientError::RunFailed { .. })),
        "{:?}",
        o.result.err()
    );
    verify(&o.events);
    let (message, code) = run_error(&o.events);
    assert_eq!(code, "upstream_error");
    assert_eq!(
        message,
        "the model endpoint reported an error (server_error)"
    );
    assert_eq!(
        assistant(&o.conv).content.as_deref(),
        Some("Partial answer")
    );
}

#[tokio::test]
async fn a_cut_stream_ends_in_run_error_with_the_partial_answer_kept() {
    let fake = fake::start().await;
    let o = turn(&fake, "cut", false).await;
    verify(&o.events);
    let (_, code) = run_error(&o.events);
    assert_eq!(code, "upstream_cut");
    assert_eq!(assistant(&o.conv).content.as_deref(), Some("Cut here"));
}

#[tokio::test]
async fn a_stream_with_a_finish_reason_but_no_done_is_whole() {
    let fake = fake::start().await;
    let o = turn(&fake, "no-done", false).await;
    o.result.expect("a finish reason makes the turn whole");
    verify(&o.events);
    assert_eq!(assistant(&o.conv).content.as_deref(), Some("Whole answer."));
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_before_the_first_token() {
    let fake = fake::start().await;
    let o = turn(&fake, "busy", false).await;
    o.result.expect("the retry succeeds");
    assert_eq!(fake.requests_for("busy").len(), 2);
    assert_eq!(assistant(&o.conv).content.as_deref(), Some("after a retry"));

    let o = turn(&fake, "down", false).await;
    let (message, code) = run_error(&o.events);
    assert_eq!(
        (message.as_str(), code.as_str()),
        (
            format!(
                "the model endpoint failed: POST {}/chat/completions answered 503",
                fake.url()
            )
            .as_str(),
            "upstream_error"
        )
    );
    assert_eq!(
        fake.requests_for("down").len(),
        3,
        "the first try and two retries"
    );

    let o = turn(&fake, "denied", false).await;
    let (message, _) = run_error(&o.events);
    assert_eq!(
        message,
        format!(
            "the model endpoint failed: POST {}/chat/completions answered 401",
            fake.url()
        )
    );
    assert_eq!(
        fake.requests_for("denied").len(),
        1,
        "a refused key is not retried"
    );
}

#[tokio::test]
async fn a_refusal_is_a_run_error_with_the_models_words() {
    let fake = fake::start().await;
    let o = turn(&fake, "refusal", false).await;
    verify(&o.events);
    let (message, code) = run_error(&o.events);
    assert_eq!(code, "refusal");
    assert_eq!(message, "the model refused: I can't help with that.");
}

#[tokio::test]
async fn a_server_side_tool_runs_in_a_loop_and_the_model_answers() {
    let fake = fake::start().await;
    let o = turn(&fake, "server-tool", false).await;
    o.result.expect("the run succeeds");
    verify(&o.events);
    let result = o.events.iter().find_map(|e| match e {
        Event::ToolCallResult(r) => Some(r.content.to_text()),
        _ => None,
    });
    assert_eq!(result.as_deref(), Some("5"));
    let last_text = o.conv.messages().iter().rev().find_map(|m| match m {
        Message::Assistant(a) => a.content.clone(),
        _ => None,
    });
    assert_eq!(last_text.as_deref(), Some("The sum is 5"));
    let reqs = fake.requests_for("server-tool");
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let n = msgs.len();
    assert_eq!(
        msgs[n - 2]["tool_calls"][0]["function"],
        json!({ "name": "add", "arguments": "{\"a\": 2, \"b\": 3}" })
    );
    assert_eq!(
        msgs[n - 1],
        json!({ "role": "tool", "tool_call_id": "call_add", "content": "5" })
    );
}

#[tokio::test]
async fn a_frontend_tool_round_trip_continues_on_the_next_run() {
    let fake = fake::start().await;
    let o = turn(&fake, "frontend-roundtrip", true).await;
    let r = o.result.expect("the round trip succeeds");
    assert_eq!(r.runs, 2);
    let last = o.conv.messages().last().unwrap();
    match last {
        Message::Assistant(a) => assert_eq!(a.content.as_deref(), Some("Card shown.")),
        other => panic!("{other:?}"),
    }
    let second = &fake.requests_for("frontend-roundtrip")[1];
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(
        msgs.last().unwrap(),
        &json!({ "role": "tool", "tool_call_id": "call_card", "content": "shown" })
    );
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_upstream_request() {
    let fake = fake::start().await;
    let url = serve(builder(&fake, "slow").build().unwrap()).await;
    let agent = HttpAgent::builder(url).build().unwrap();
    let input = RunAgentInput::new("t", "r", vec![Message::user("u", "go")]);
    let mut events = agent.run(&input);
    use futures_util::StreamExt;
    for _ in 0..4 {
        events.next().await.unwrap().unwrap();
    }
    drop(events);
    let t0 = std::time::Instant::now();
    while !fake.peer_closed.load(Ordering::SeqCst) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the upstream stream was not closed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_upstream_request_is_built_field_by_field() {
    let fake = fake::start().await;
    let agent = builder(&fake, "text")
        .system_prompt("Be brief.")
        .param("temperature", json!(0.2))
        .forward_params(&["max_tokens"])
        .build()
        .unwrap();
    let url = serve(agent).await;
    let input: RunAgentInput = serde_json::from_value(json!({
        "threadId": "t", "runId": "r",
        "state": { "x": 1 },
        "context": [{ "description": "locale", "value": "fr-CH" }],
        "tools": [{ "name": "show_card", "description": "Shows a card.", "parameters": { "type": "object" } }],
        "forwardedProps": { "max_tokens": 64, "temperature": 1.5, "api_key": "nope", "model": "other" },
        "messages": [
            { "id": "s", "role": "system", "content": "Sys." },
            { "id": "d", "role": "developer", "content": "Dev." },
            { "id": "u1", "role": "user", "content": "Plain.", "name": "ana" },
            { "id": "u2", "role": "user", "content": [
                { "type": "text", "text": "Look:" },
                { "type": "image", "source": { "type": "url", "value": "https://e/x.png", "mimeType": "image/png" } },
                { "type": "image", "source": { "type": "data", "value": "QUJD", "mimeType": "image/jpeg" } },
                { "type": "document", "source": { "type": "url", "value": "https://e/a.pdf" } }
            ]},
            { "id": "a1", "role": "assistant", "content": "Calling.", "toolCalls": [
                { "id": "c1", "type": "function", "function": { "name": "show_card", "arguments": "{\"city\":\"Rome\"}" } }
            ]},
            { "id": "t1", "role": "tool", "toolCallId": "c1", "content": "ok" },
            { "id": "t2", "role": "tool", "toolCallId": "c2", "content": "", "error": "timeout" },
            { "id": "r1", "role": "reasoning", "content": "hidden" },
            { "id": "x1", "role": "activity", "activityType": "plan", "content": { "a": 1 } }
        ]
    }))
    .unwrap();
    let agent = HttpAgent::builder(url).build().unwrap();
    use futures_util::StreamExt;
    let events: Vec<_> = agent.run(&input).collect().await;
    assert!(events.iter().all(|e| e.is_ok()));
    let req = fake.requests_for("text").pop().unwrap();
    let expected = json!({
        "model": "text",
        "messages": [
            { "role": "system", "content": "Be brief." },
            { "role": "system", "content": "Context from the application:\n- locale: fr-CH" },
            { "role": "system", "content": "Sys." },
            { "role": "developer", "content": "Dev." },
            { "role": "user", "content": "Plain.", "name": "ana" },
            { "role": "user", "content": [
                { "type": "text", "text": "Look:" },
                { "type": "image_url", "image_url": { "url": "https://e/x.png" } },
                { "type": "image_url", "image_url": { "url": "data:image/jpeg;base64,QUJD" } },
                { "type": "text", "text": "[document attachment at https://e/a.pdf not supported by this model endpoint]" }
            ]},
            { "role": "assistant", "content": "Calling.", "tool_calls": [
                { "id": "c1", "type": "function", "function": { "name": "show_card", "arguments": "{\"city\":\"Rome\"}" } }
            ]},
            { "role": "tool", "tool_call_id": "c1", "content": "ok" },
            { "role": "tool", "tool_call_id": "c2", "content": "error: timeout" }
        ],
        "stream": true,
        "stream_options": { "include_usage": true },
        "temperature": 0.2,
        "max_tokens": 64,
        "tools": [
            { "type": "function", "function": { "name": "add", "description": "Adds two numbers.", "parameters": req["tools"][0]["function"]["parameters"].clone() } },
            { "type": "function", "function": { "name": "show_card", "description": "Shows a card.", "parameters": { "type": "object" } } }
        ]
    });
    assert_eq!(req, expected);
    let schema = &req["tools"][0]["function"]["parameters"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["a"]["type"], "number");
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert!(OpenAiAgent::builder(fake.url(), "m")
        .forward_params(&["api_key"])
        .build()
        .is_err());
}

/// CopilotKit's suggestion run names the tool to call in `forwardedProps.toolChoice`:
/// the model is asked for exactly that call; a choice naming a tool not offered is not
/// passed on.
#[tokio::test]
async fn a_tool_choice_in_forwarded_props_reaches_the_model() {
    let fake = fake::start().await;
    let agent = builder(&fake, "text").build().unwrap();
    let url = serve(agent).await;
    use futures_util::StreamExt;
    let client = HttpAgent::builder(url).build().unwrap();
    let _: Vec<_> = client
        .run(&tool_choice("copilotkitSuggest"))
        .collect()
        .await;
    let req = fake.requests_for("text").pop().unwrap();
    assert_eq!(
        req["tool_choice"],
        json!({ "type": "function", "function": { "name": "copilotkitSuggest" } })
    );
    let _: Vec<_> = client.run(&tool_choice("not_offered")).collect().await;
    let req = fake.requests_for("text").pop().unwrap();
    assert!(req.get("tool_choice").is_none(), "{req}");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Rename {
    /// The new title.
    title: String,
}

/// A server-side tool changes the shared state (a `STATE_DELTA` the client applies),
/// and the model is shown the state, before and after.
#[tokio::test]
async fn a_server_side_tool_updates_the_shared_state_the_model_sees() {
    let fake = fake::start().await;
    let agent = OpenAiAgent::builder(fake.url(), "state-tool")
        .expose_state(true)
        .tool(
            "rename",
            "Renames the recipe.",
            |x: Rename, ctx: ToolContext| async move {
                assert_eq!(ctx.state["title"], "Stew", "the tool sees the state");
                let op: agui_sdk_core::types::PatchOperation = serde_json::from_value(
                    json!({ "op": "replace", "path": "/title", "value": x.title }),
                )
                .unwrap();
                Ok(ToolResult::text("renamed").with_state_patch(vec![op]))
            },
        )
        .build()
        .unwrap();
    let url = serve(agent).await;
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let mut conv = Conversation::builder(HttpAgent::builder(url).build().unwrap())
        .thread_id("t")
        .state(json!({ "title": "Stew" }))
        .on_event(move |e| sink.lock().unwrap().push(e.clone()))
        .build();
    conv.add_message(Message::user("u1", "call it soup"));
    conv.run_agent(RunParams::new().run_id("s1"))
        .await
        .expect("the run succeeds");
    verify(&events.lock().unwrap());
    assert!(types(&events.lock().unwrap()).contains(&"STATE_DELTA"));
    assert_eq!(conv.state(), &json!({ "title": "Soup" }));
    let reqs = fake.requests_for("state-tool");
    let state_msg = |r: &Value| -> String {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("The shared application state"))
            })
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert!(
        state_msg(&reqs[0]).contains("\"Stew\""),
        "{}",
        state_msg(&reqs[0])
    );
    assert!(
        state_msg(&reqs[1]).contains("\"Soup\""),
        "the model sees the change: {}",
        state_msg(&reqs[1])
    );
}

/// A model that stalls mid-answer ends the run with `upstream_timeout` after the read
/// timeout, the text so far kept.
#[tokio::test]
async fn a_stalled_stream_times_out() {
    let fake = fake::start().await;
    let agent = builder(&fake, "slow")
        .read_timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    let url = serve(agent).await;
    let agent = HttpAgent::builder(url).build().unwrap();
    let input = RunAgentInput::new("t", "r", vec![Message::user("u", "go")]);
    use futures_util::StreamExt;
    let events: Vec<Event> = agent
        .run(&input)
        .filter_map(|e| async move { e.ok() })
        .collect()
        .await;
    verify(&events);
    let (message, code) = run_error(&events);
    assert_eq!(code, "upstream_timeout");
    assert!(message.contains("sent nothing"), "{message}");
    assert!(
        types(&events).contains(&"TEXT_MESSAGE_CONTENT"),
        "what came is kept"
    );
}

/// Runs one turn of `agent` and returns its events.
async fn events_of(agent: agui_sdk_server::FnAgent) -> Vec<Event> {
    crate::common::events_of(agent, &crate::common::go()).await
}

/// An answer is bounded in bytes, in time (however it trickles: each read is within
/// the read timeout) and in the size of one call's arguments, each ending the run with
/// its own code and what came kept.
#[tokio::test]
async fn an_answer_is_bounded_in_size_time_and_tool_arguments() {
    let fake = fake::start().await;
    // "fast" streams 1,000 content chunks (some 60 KB).
    let events = events_of(
        builder(&fake, "fast")
            .max_answer_bytes(10_000)
            .build()
            .unwrap(),
    )
    .await;
    verify(&events);
    let (message, code) = run_error(&events);
    assert_eq!(code, "upstream_too_large");
    assert!(message.contains("10000 bytes"), "{message}");
    assert!(types(&events).contains(&"TEXT_MESSAGE_CONTENT"));

    // "slow" sends a chunk every 50 ms for 10 s: no read waits long, the whole does.
    let events = events_of(
        builder(&fake, "slow")
            .answer_deadline(Duration::from_millis(300))
            .build()
            .unwrap(),
    )
    .await;
    verify(&events);
    let (message, code) = run_error(&events);
    assert_eq!(code, "upstream_timeout");
    assert!(message.contains("took longer than 0.3 s"), "{message}");

    // "tool" streams a call's arguments in pieces (41 bytes in all).
    let events = events_of(
        builder(&fake, "tool")
            .max_tool_arguments(16)
            .build()
            .unwrap(),
    )
    .await;
    verify(&events);
    let (message, code) = run_error(&events);
    assert_eq!(code, "tool_arguments_too_large");
    assert!(message.contains("16 bytes"), "{message}");
    assert_eq!(
        types(&events).last(),
        Some(&"RUN_ERROR"),
        "the call is not run"
    );
}
