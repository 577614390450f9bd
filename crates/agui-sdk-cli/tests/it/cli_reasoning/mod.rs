//! A model's signed or encrypted reasoning, through a frontend-tool loop over two runs
//! of `agui serve --model-url … --model-api anthropic|responses`: the first run ends with
//! the model's call to a tool the request offered, the client answers it and runs again
//! with the history it kept. The provider refuses a continuation whose assistant turn
//! lacks its thinking blocks (Anthropic) or the reasoning item before its call
//! (Responses), so the fakes here do too: each second request must carry what the first
//! answer streamed, byte for byte and in order. A value of another provider's type never
//! goes upstream; an untyped value (a 1.0 client keeps no `encryptedValueType`) goes
//! back as the provider's own. The clients: ours (`Conversation`), the reference
//! `@ag-ui/client` 1.0.0, and the 0.0.59 client CopilotKit bundles, through the
//! CopilotKit runtime routes on one thread (the runtime restores what it drops).

use crate::common::{spawn_serve, Served};
use crate::fake_server;

// The model crate's fakes of the two APIs (their pieces: the scripts here are the
// tool loops'); `cli_openai` loads them too, privately.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "../../../../agui-sdk-model/tests/it/fake_anthropic.rs"]
mod fake_anthropic;
#[allow(clippy::duplicate_mod)]
#[path = "../../../../agui-sdk-model/tests/it/fake_responses.rs"]
mod fake_responses;

use std::process::{Command, Stdio};

use agui_sdk_client::agui_sdk_core::semantics::RunOutcome;
use agui_sdk_client::agui_sdk_core::{Content, Message, Tool};
use agui_sdk_client::{Conversation, HttpAgent, RunParams};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use fake_anthropic::{REDACTED, SIG_A, SIG_B};
use fake_responses::ENC_A;

/// A value of OpenAI's type, which an Anthropic request never carries.
const FOREIGN_OPENAI: &str = "gAAAAABforeign-openai+value/0123456789abcdef==";
/// A value of Anthropic's type, which a Responses request never carries.
const FOREIGN_ANTHROPIC: &str = "EqQBforeign-anthropic+signature/0123456789==";

/// The frontend tool every request offers.
fn show_card() -> Value {
    json!({
        "name": "show_card",
        "description": "Shows a card.",
        "parameters": { "type": "object", "properties": { "city": { "type": "string" } } },
    })
}

/// The model's call, as the fakes stream it.
const CALL_PIECES: &[&str] = &["{\"city\":", " \"Os", "lo\"}"];

/// The fake Anthropic Messages API: the model picks a first turn (thinking blocks, then a
/// `show_card` call); a continuation is answered only when its assistant turn replays
/// those blocks unchanged, in order, before the `tool_use`.
mod anthropic {
    use super::*;
    use fake_anthropic::{
        block_start, block_stop, message_delta, message_start, message_stop, text_block,
        thinking_block, tool_block, Ev,
    };

    pub(super) async fn start() -> fake_server::Server {
        fake_server::start(serve).await
    }

    /// The thinking blocks of `model`'s first turn: as streamed, and as they must come
    /// back.
    fn thinking(model: &str) -> Option<(Vec<Ev>, Vec<Value>)> {
        let signed = |text: &str, signature: &str| json!({ "type": "thinking", "thinking": text, "signature": signature });
        match model {
            "sig-tool" => Some((
                thinking_block(0, &["The user wants ", "a card for Oslo."], SIG_A),
                vec![signed("The user wants a card for Oslo.", SIG_A)],
            )),
            "blocks-tool" => {
                let mut evs = vec![
                    block_start(0, json!({ "type": "redacted_thinking", "data": REDACTED })),
                    block_stop(0),
                ];
                evs.extend(thinking_block(1, &["First ", "thought."], SIG_A));
                evs.extend(thinking_block(2, &["Second ", "thought."], SIG_B));
                Some((
                    evs,
                    vec![
                        json!({ "type": "redacted_thinking", "data": REDACTED }),
                        signed("First thought.", SIG_A),
                        signed("Second thought.", SIG_B),
                    ],
                ))
            }
            _ => None,
        }
    }

    /// The assistant turn a continuation must carry: the thinking blocks, then the call.
    pub(super) fn expected_turn(model: &str) -> Value {
        let mut content = thinking(model).unwrap().1;
        content.push(
            json!({ "type": "tool_use", "id": "toolu_01A", "name": "show_card",
                             "input": { "city": "Oslo" } }),
        );
        json!({ "role": "assistant", "content": content })
    }

    fn has_tool_result(body: &Value) -> bool {
        body["messages"].as_array().is_some_and(|m| {
            m.iter().any(|m| {
                m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
            })
        })
    }

    /// `Ok(events)` to stream, or `Err(message)` of a 400.
    fn answer(model: &str, body: &Value) -> Result<Vec<Ev>, String> {
        let Some((mut blocks, _)) = thinking(model) else {
            return Err(format!("no scenario {model}"));
        };
        let mut evs = vec![message_start(
            json!({ "input_tokens": 10, "output_tokens": 1 }),
        )];
        if !has_tool_result(body) {
            // The call is the block after the thinking ones.
            let index = blocks
                .iter()
                .filter(|(name, _)| *name == "content_block_start")
                .count();
            let index = u32::try_from(index).unwrap();
            evs.append(&mut blocks);
            evs.extend(tool_block(index, "toolu_01A", "show_card", CALL_PIECES));
            evs.push(message_delta("tool_use", 9));
            evs.push(message_stop());
            return Ok(evs);
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let turn = messages.iter().position(|m| {
            m["role"] == "assistant"
                && m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["id"] == "toolu_01A"))
        });
        let Some(turn) = turn else {
            return Err("tool_result block(s) provided without a matching tool_use".into());
        };
        if messages[turn] != expected_turn(model) {
            return Err(format!(
                "messages.{turn}.content: with thinking enabled, an assistant turn in a tool loop must start with its thinking blocks, unmodified"
            ));
        }
        evs.extend(text_block(0, &["Card ", "shown."]));
        evs.push(message_delta("end_turn", 3));
        evs.push(message_stop());
        Ok(evs)
    }

    async fn serve(mut sock: TcpStream, f: fake_server::Server) -> std::io::Result<()> {
        let Some(req) = f.take(&mut sock).await else {
            return Ok(());
        };
        match answer(&req.model, &req.body) {
            Err(message) => {
                let body = json!({ "type": "error",
                    "error": { "type": "invalid_request_error", "message": message } });
                fake_server::write_status(&mut sock, 400, None, &body.to_string()).await?;
            }
            Ok(events) => {
                fake_server::write_stream_head(&mut sock, "text/event-stream; charset=utf-8")
                    .await?;
                for (name, data) in events {
                    let frame = format!("event: {name}\ndata: {data}\n\n");
                    if !fake_server::write_pieces(&mut sock, frame.as_bytes()).await {
                        return Ok(());
                    }
                }
            }
        }
        sock.shutdown().await
    }
}

/// The fake OpenAI Responses API: model `reasoning-tool` reasons (item `rs_01A`, its
/// content encrypted) and calls `show_card`; a continuation is answered only when the
/// reasoning item, with its id and encrypted content, comes right before the call.
mod responses {
    use super::*;
    use fake_responses::{call_item, reasoning_item, text_item, Ev};

    pub(super) async fn start() -> fake_server::Server {
        fake_server::start(serve).await
    }

    /// The reasoning item a continuation must carry before the call.
    pub(super) fn expected_reasoning() -> Value {
        json!({ "type": "reasoning", "id": "rs_01A",
                "summary": [{ "type": "summary_text", "text": "The user wants a card for Oslo." }],
                "encrypted_content": ENC_A })
    }

    fn response(status: &str, output: Value) -> Value {
        json!({ "id": "resp_01", "object": "response", "created_at": 1_741_476_777,
                "status": status, "model": "reasoning-tool", "output": output, "error": null,
                "incomplete_details": null, "usage": null })
    }

    fn answer(model: &str, body: &Value) -> Result<Vec<Ev>, String> {
        if model != "reasoning-tool" {
            return Err(format!("The model `{model}` does not exist"));
        }
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let call = input
            .iter()
            .position(|i| i["type"] == "function_call" && i["call_id"] == "call_01A");
        let mut items = match call {
            None => {
                let mut v = reasoning_item(
                    0,
                    "rs_01A",
                    &["The user wants ", "a card for Oslo."],
                    ENC_A,
                );
                v.extend(call_item(1, "fc_01A", "call_01A", "show_card", CALL_PIECES));
                v
            }
            Some(i) if i > 0 && input[i - 1] == expected_reasoning() => {
                text_item(0, "msg_02", &["Card ", "shown."])
            }
            Some(_) => {
                return Err(
                    "Item 'fc_01A' of type 'function_call' was provided without its required 'reasoning' item: 'rs_01A'."
                        .into(),
                )
            }
        };
        let output: Vec<Value> = items
            .iter()
            .filter(|(n, _)| *n == "response.output_item.done")
            .map(|(_, d)| d["item"].clone())
            .collect();
        let mut evs = vec![(
            "response.created",
            json!({ "response": response("in_progress", json!([])) }),
        )];
        evs.append(&mut items);
        evs.push((
            "response.completed",
            json!({ "response": response("completed", Value::Array(output)) }),
        ));
        Ok(evs)
    }

    async fn serve(mut sock: TcpStream, f: fake_server::Server) -> std::io::Result<()> {
        let Some(req) = f.take(&mut sock).await else {
            return Ok(());
        };
        match answer(&req.model, &req.body) {
            Err(message) => {
                let body = json!({ "error": { "message": message,
                    "type": "invalid_request_error", "param": "input", "code": null } });
                fake_server::write_status(&mut sock, 400, None, &body.to_string()).await?;
            }
            Ok(events) => {
                fake_server::write_stream_head(&mut sock, "text/event-stream; charset=utf-8")
                    .await?;
                for (seq, (name, data)) in events.into_iter().enumerate() {
                    let mut o = serde_json::Map::new();
                    o.insert("type".into(), json!(name));
                    if let Value::Object(fields) = data {
                        o.extend(fields);
                    }
                    o.insert("sequence_number".into(), json!(seq));
                    let frame = format!("event: {name}\ndata: {}\n\n", Value::Object(o));
                    if !fake_server::write_pieces(&mut sock, frame.as_bytes()).await {
                        return Ok(());
                    }
                }
            }
        }
        sock.shutdown().await
    }
}

/// `agui serve` with the `chat` agent on `api` at `url`, model `model`.
fn serve(url: &str, api: &str, model: &str) -> Served {
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
        "REASONING_TEST_KEY",
    ];
    if api == "anthropic" {
        args.extend(["--thinking-budget", "2048"]);
    } else {
        args.extend(["--reasoning-effort", "low"]);
    }
    spawn_serve(
        &[],
        &args,
        &[
            ("REASONING_TEST_KEY", "sk-reasoning-test"),
            ("AGUI_LOG", "debug"),
        ],
    )
}

/// The messages of a conversation, as JSON.
fn as_json(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

fn reasoning_of(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["role"] == "reasoning")
        .cloned()
        .collect()
}

/// A conversation with our client on the `chat` agent of `srv`, offering `show_card`
/// and leaving its calls to the caller.
fn conversation(srv: &Served, thread: &str, messages: Vec<Message>) -> Conversation {
    let http = HttpAgent::builder(format!("{}/chat", srv.base))
        .build()
        .unwrap();
    let tool: Tool = serde_json::from_value(show_card()).unwrap();
    Conversation::builder(http)
        .thread_id(thread)
        .messages(messages)
        .tool(tool, |_args: Value| async {
            Ok::<Content, String>(Content::from("never called"))
        })
        .answer_tools(0)
        .build()
}

/// The first run: it ends with the `show_card` call pending; its id.
async fn first_run(chat: &mut Conversation) -> String {
    chat.add_message(Message::user("u1", "show Oslo"));
    let result = chat.run_agent(RunParams::new()).await.unwrap();
    let RunOutcome::Success {
        pending_tool_call_ids,
        ..
    } = &result.outcome
    else {
        panic!("{:?}", result.outcome);
    };
    assert_eq!(pending_tool_call_ids.len(), 1, "{pending_tool_call_ids:?}");
    pending_tool_call_ids[0].clone()
}

/// The second run, with the call's result: it ends with the model's answer.
async fn second_run(chat: &mut Conversation, call: &str) {
    chat.add_message(Message::tool("t1", call, "shown"));
    let result = chat.run_agent(RunParams::new()).await.unwrap();
    assert!(
        matches!(&result.outcome, RunOutcome::Success { pending_tool_call_ids, .. } if pending_tool_call_ids.is_empty()),
        "{:?}",
        result.outcome
    );
    let last = as_json(chat.messages()).pop().unwrap();
    assert_eq!(last["content"], "Card shown.", "{last}");
}

/// Our client, Anthropic: one signed thinking block before a frontend tool call comes
/// back byte for byte before the `tool_use`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_sends_a_thinking_signature_back_before_its_tool_use() {
    let fake = anthropic::start().await;
    let srv = serve(&fake.url(), "anthropic", "sig-tool");
    let mut chat = conversation(&srv, "sig", Vec::new());
    let call = first_run(&mut chat).await;
    assert_eq!(call, "toolu_01A");
    let reasoning = reasoning_of(&as_json(chat.messages()));
    assert_eq!(reasoning.len(), 1, "{reasoning:?}");
    assert_eq!(reasoning[0]["encryptedValue"], SIG_A);
    assert_eq!(
        reasoning[0]["encryptedValueType"],
        "anthropic.thinking_signature"
    );
    second_run(&mut chat, &call).await;
    let reqs = fake.requests_for("sig-tool");
    assert_eq!(reqs.len(), 2);
    let offered: Vec<&Value> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert!(offered.contains(&&json!("show_card")), "{offered:?}");
    let messages = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[1], anthropic::expected_turn("sig-tool"));
    assert_eq!(messages[1]["content"][0]["signature"], SIG_A);
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
}

/// Our client, Anthropic: a redacted thinking block and two signed ones in one turn
/// come back unchanged and in order before the `tool_use`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_sends_redacted_and_two_thinking_blocks_back_in_order() {
    let fake = anthropic::start().await;
    let srv = serve(&fake.url(), "anthropic", "blocks-tool");
    let mut chat = conversation(&srv, "blocks", Vec::new());
    let call = first_run(&mut chat).await;
    let reasoning = reasoning_of(&as_json(chat.messages()));
    let kept: Vec<(&Value, &Value)> = reasoning
        .iter()
        .map(|r| (&r["encryptedValue"], &r["encryptedValueType"]))
        .collect();
    assert_eq!(
        kept,
        [
            (&json!(REDACTED), &json!("anthropic.redacted_thinking")),
            (&json!(SIG_A), &json!("anthropic.thinking_signature")),
            (&json!(SIG_B), &json!("anthropic.thinking_signature")),
        ]
    );
    second_run(&mut chat, &call).await;
    let reqs = fake.requests_for("blocks-tool");
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1].body["messages"][1],
        anthropic::expected_turn("blocks-tool")
    );
}

/// Our client, Responses: the reasoning item, with its id and encrypted content, comes
/// back right before its `function_call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_sends_a_reasoning_item_back_before_its_function_call() {
    let fake = responses::start().await;
    let srv = serve(&fake.url(), "responses", "reasoning-tool");
    let mut chat = conversation(&srv, "items", Vec::new());
    let call = first_run(&mut chat).await;
    assert_eq!(call, "call_01A");
    let reasoning = reasoning_of(&as_json(chat.messages()));
    assert_eq!(reasoning.len(), 1, "{reasoning:?}");
    assert_eq!(reasoning[0]["encryptedValue"], ENC_A);
    assert_eq!(
        reasoning[0]["encryptedValueType"],
        "openai.encrypted_content"
    );
    second_run(&mut chat, &call).await;
    let reqs = fake.requests_for("reasoning-tool");
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].body["include"],
        json!(["reasoning.encrypted_content"])
    );
    let input = reqs[1].body["input"].as_array().unwrap();
    let at = input
        .iter()
        .position(|i| i["type"] == "function_call")
        .unwrap();
    assert_eq!(input[at - 1], responses::expected_reasoning());
    assert_eq!(input[at]["call_id"], "call_01A");
}

/// The history between the runs, as a client that keeps no types and another provider's
/// reasoning left it: the turn's reasoning untyped, and a reasoning message of
/// `foreign_type` before it.
fn untyped_with_foreign(messages: &[Message], foreign: &str, foreign_type: &str) -> Vec<Message> {
    let mut out = Vec::new();
    for mut m in as_json(messages) {
        if m["role"] == "reasoning" {
            if out.iter().all(|o: &Value| o["id"] != "foreign-1") {
                out.push(json!({ "id": "foreign-1", "role": "reasoning",
                    "content": "Another provider's thought.", "encryptedValue": foreign,
                    "encryptedValueType": foreign_type }));
            }
            m.as_object_mut().unwrap().remove("encryptedValueType");
        }
        out.push(m);
    }
    out.into_iter()
        .map(|m| serde_json::from_value(m).unwrap())
        .collect()
}

/// A value of another provider's type does not go upstream; an untyped value goes back
/// as the provider's own (Anthropic: a thinking block's signature; Responses: a
/// reasoning item's encrypted content).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_value_is_dropped_and_an_untyped_one_goes_back_as_the_providers_own() {
    // Anthropic.
    let fake = anthropic::start().await;
    let srv = serve(&fake.url(), "anthropic", "sig-tool");
    let mut chat = conversation(&srv, "foreign-a", Vec::new());
    let call = first_run(&mut chat).await;
    let history = untyped_with_foreign(chat.messages(), FOREIGN_OPENAI, "openai.encrypted_content");
    assert_eq!(reasoning_of(&as_json(&history)).len(), 2);
    let mut chat = conversation(&srv, "foreign-a", history);
    second_run(&mut chat, &call).await;
    let reqs = fake.requests_for("sig-tool");
    assert_eq!(reqs.len(), 2);
    let sent = reqs[1].body.to_string();
    assert!(!sent.contains(FOREIGN_OPENAI), "{sent}");
    assert!(!sent.contains("Another provider's thought."), "{sent}");
    assert_eq!(
        reqs[1].body["messages"][1],
        anthropic::expected_turn("sig-tool")
    );

    // Responses.
    let fake = responses::start().await;
    let srv = serve(&fake.url(), "responses", "reasoning-tool");
    let mut chat = conversation(&srv, "foreign-r", Vec::new());
    let call = first_run(&mut chat).await;
    let history = untyped_with_foreign(
        chat.messages(),
        FOREIGN_ANTHROPIC,
        "anthropic.thinking_signature",
    );
    let mut chat = conversation(&srv, "foreign-r", history);
    second_run(&mut chat, &call).await;
    let reqs = fake.requests_for("reasoning-tool");
    assert_eq!(reqs.len(), 2);
    let sent = reqs[1].body.to_string();
    assert!(!sent.contains(FOREIGN_ANTHROPIC), "{sent}");
    assert!(!sent.contains("foreign-1"), "{sent}");
    let input = reqs[1].body["input"].as_array().unwrap();
    let at = input
        .iter()
        .position(|i| i["type"] == "function_call")
        .unwrap();
    assert_eq!(input[at - 1], responses::expected_reasoning());
}

mod clients;
