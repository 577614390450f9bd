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
#[path = "../../../agui-sdk-model/tests/it/fake_anthropic.rs"]
mod fake_anthropic;
#[allow(clippy::duplicate_mod)]
#[path = "../../../agui-sdk-model/tests/it/fake_responses.rs"]
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
