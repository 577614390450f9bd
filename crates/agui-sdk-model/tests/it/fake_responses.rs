//! A fake OpenAI Responses server on loopback: it answers `POST …/responses` with
//! streams in the exact wire format (`event: response.output_text.delta\ndata: {…,
//! "sequence_number": n}\n\n`: the response created, output items added, their deltas,
//! the items done, the response completed, incomplete or failed, `error`), sent in
//! small pieces that split strings, escapes and multi-byte characters. The `model` of
//! the request picks the scenario. Every request's body and headers are recorded.
#![allow(dead_code)]

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::fake_server;

/// The fake server.
pub(crate) type Fake = fake_server::Server;

pub(crate) async fn start() -> Fake {
    fake_server::start(serve).await
}

/// One SSE event of the stream: its type and its other fields (the type and the
/// `sequence_number` are added when it is sent).
pub(crate) type Ev = (&'static str, Value);

/// Encrypted reasoning as the API sends it (base64, long, with `+`, `/` and `=`).
pub(crate) const ENC_A: &str =
    "gAAAAABoX1-reasoning+A/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP_qrs==";
pub(crate) const ENC_B: &str = "gAAAAABoX2-reasoning+B/zyxwvutsrqponmlkjihgfedcba9876543210=";

/// The response object of `response.*` events.
fn response(model: &str, status: &str, output: Value, extra: Value) -> Value {
    let mut r = json!({
        "id": "resp_0123", "object": "response", "created_at": 1_741_476_777,
        "status": status, "model": model, "output": output,
        "error": null, "incomplete_details": null, "instructions": null,
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "usage": null,
    });
    if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            r.insert(k.clone(), v.clone());
        }
    }
    r
}

fn created(model: &str) -> Vec<Ev> {
    vec![
        (
            "response.created",
            json!({ "response": response(model, "in_progress", json!([]), json!({})) }),
        ),
        (
            "response.in_progress",
            json!({ "response": response(model, "in_progress", json!([]), json!({})) }),
        ),
    ]
}

pub(crate) fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({
        "input_tokens": input,
        "input_tokens_details": { "cached_tokens": cached, "cache_write_tokens": 0 },
        "output_tokens": output,
        "output_tokens_details": { "reasoning_tokens": reasoning },
        "total_tokens": input + output,
    })
}

/// The items `evs` finished, in order: the `output` of the response that ends them.
fn output(evs: &[Ev]) -> Value {
    evs.iter()
        .filter(|(name, _)| *name == "response.output_item.done")
        .map(|(_, data)| data["item"].clone())
        .collect()
}

/// The response completed, with the items `evs` finished as its output.
fn completed(model: &str, evs: &[Ev], usage: Value) -> Ev {
    (
        "response.completed",
        json!({ "response": response(model, "completed", output(evs), json!({ "usage": usage })) }),
    )
}

/// A `message` item at `index` whose text streams in `pieces`.
pub(crate) fn text_item(index: u32, id: &str, pieces: &[&str]) -> Vec<Ev> {
    let whole: String = pieces.concat();
    let mut v = vec![
        (
            "response.output_item.added",
            json!({ "output_index": index, "item": {
                "id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": [] } }),
        ),
        (
            "response.content_part.added",
            json!({ "item_id": id, "output_index": index, "content_index": 0,
                    "part": { "type": "output_text", "text": "", "annotations": [] } }),
        ),
    ];
    v.extend(pieces.iter().map(|p| {
        (
            "response.output_text.delta",
            json!({ "item_id": id, "output_index": index, "content_index": 0, "delta": p, "logprobs": [] }),
        )
    }));
    v.push((
        "response.output_text.done",
        json!({ "item_id": id, "output_index": index, "content_index": 0, "text": whole, "logprobs": [] }),
    ));
    v.push((
        "response.content_part.done",
        json!({ "item_id": id, "output_index": index, "content_index": 0,
                "part": { "type": "output_text", "text": whole, "annotations": [] } }),
    ));
    v.push((
        "response.output_item.done",
        json!({ "output_index": index, "item": {
            "id": id, "type": "message", "status": "completed", "role": "assistant",
            "content": [{ "type": "output_text", "text": whole, "annotations": [] }] } }),
    ));
    v
}

/// A `reasoning` item at `index`: its summary in `pieces`, then its encrypted content
/// (in the `done` item only, as the API sends it).
pub(crate) fn reasoning_item(index: u32, id: &str, pieces: &[&str], encrypted: &str) -> Vec<Ev> {
    let whole: String = pieces.concat();
    let mut v = vec![
        (
            "response.output_item.added",
            json!({ "output_index": index, "item": {
                "id": id, "type": "reasoning", "summary": [], "encrypted_content": null } }),
        ),
        (
            "response.reasoning_summary_part.added",
            json!({ "item_id": id, "output_index": index, "summary_index": 0,
                    "part": { "type": "summary_text", "text": "" } }),
        ),
    ];
    v.extend(pieces.iter().map(|p| {
        (
            "response.reasoning_summary_text.delta",
            json!({ "item_id": id, "output_index": index, "summary_index": 0, "delta": p }),
        )
    }));
    v.push((
        "response.reasoning_summary_text.done",
        json!({ "item_id": id, "output_index": index, "summary_index": 0, "text": whole }),
    ));
    v.push((
        "response.reasoning_summary_part.done",
        json!({ "item_id": id, "output_index": index, "summary_index": 0,
                "part": { "type": "summary_text", "text": whole } }),
    ));
    v.push((
        "response.output_item.done",
        json!({ "output_index": index, "item": {
            "id": id, "type": "reasoning",
            "summary": [{ "type": "summary_text", "text": whole }],
            "encrypted_content": encrypted } }),
    ));
    v
}

/// A `function_call` item at `index` whose arguments stream in `pieces`.
pub(crate) fn call_item(
    index: u32,
    id: &str,
    call_id: &str,
    name: &str,
    pieces: &[&str],
) -> Vec<Ev> {
    let whole: String = pieces.concat();
    let mut v = vec![(
        "response.output_item.added",
        json!({ "output_index": index, "item": {
            "id": id, "type": "function_call", "status": "in_progress",
            "call_id": call_id, "name": name, "arguments": "" } }),
    )];
    v.extend(pieces.iter().map(|p| {
        (
            "response.function_call_arguments.delta",
            json!({ "item_id": id, "output_index": index, "delta": p }),
        )
    }));
    v.push((
        "response.function_call_arguments.done",
        json!({ "item_id": id, "output_index": index, "arguments": whole }),
    ));
    v.push((
        "response.output_item.done",
        json!({ "output_index": index, "item": {
            "id": id, "type": "function_call", "status": "completed",
            "call_id": call_id, "name": name, "arguments": whole } }),
    ));
    v
}

/// What a scenario answers.
pub(crate) enum Answer {
    Stream(Vec<Ev>),
    Status { status: u16, body: &'static str },
}

fn has_output(body: &Value) -> bool {
    body["input"]
        .as_array()
        .is_some_and(|i| i.iter().any(|i| i["type"] == "function_call_output"))
}

fn whole(model: &str, items: Vec<Ev>) -> Answer {
    let mut v = created(model);
    v.extend(items);
    v.push(completed(model, &v, usage(10, 0, 9, 0)));
    Answer::Stream(v)
}

pub(crate) fn scenario(model: &str, n: usize, body: &Value) -> Answer {
    match model {
        "text" => {
            let mut v = created(model);
            v.extend(text_item(
                0,
                "msg_01",
                &["Hel", "lo, w", "\u{f6}rld! \u{1f600}"],
            ));
            v.push(completed(model, &v, usage(120, 100, 30, 20)));
            Answer::Stream(v)
        }
        "reasoning-tool" if has_output(body) => {
            whole(model, text_item(0, "msg_02", &["Card ", "shown."]))
        }
        "reasoning-tool" => {
            let mut v =
                reasoning_item(0, "rs_01A", &["The user wants ", "a card for Oslo."], ENC_A);
            v.extend(call_item(
                1,
                "fc_01A",
                "call_01A",
                "show_card",
                &["{\"city\":", " \"Os", "lo\"}"],
            ));
            whole(model, v)
        }
        "server-tool" if has_output(body) => {
            whole(model, text_item(0, "msg_03", &["The sum is 5"]))
        }
        "server-tool" => {
            let mut v = reasoning_item(0, "rs_add", &["Add them."], ENC_B);
            v.extend(call_item(
                1,
                "fc_add",
                "call_add",
                "add",
                &["{\"a\": 2,", " \"b\": 3}"],
            ));
            whole(model, v)
        }
        "echo" => whole(model, text_item(0, "msg_echo", &["ok"])),
        // Cut inside a reasoning summary's text and a call's arguments: no item done,
        // no response completed.
        "cut" => {
            let mut v = created(model);
            v.extend(
                reasoning_item(0, "rs_cut", &["Half a "], ENC_A)
                    .into_iter()
                    .take(3),
            );
            v.extend(
                call_item(1, "fc_cut", "call_cut", "show_card", &["{\"ci"])
                    .into_iter()
                    .take(2),
            );
            Answer::Stream(v)
        }
        "bad-request" => Answer::Status {
            status: 400,
            body: r#"{"error":{"message":"Invalid value: 'xhigh'. Supported values are: 'low', 'medium' and 'high'.","type":"invalid_request_error","param":"reasoning.effort","code":"invalid_value"}}"#,
        },
        "refusal" => {
            let mut v = created(model);
            v.push((
                "response.output_item.added",
                json!({ "output_index": 0, "item": {
                    "id": "msg_r", "type": "message", "status": "in_progress", "role": "assistant", "content": [] } }),
            ));
            for p in ["I can't ", "help with that."] {
                v.push((
                    "response.refusal.delta",
                    json!({ "item_id": "msg_r", "output_index": 0, "content_index": 0, "delta": p }),
                ));
            }
            v.push((
                "response.refusal.done",
                json!({ "item_id": "msg_r", "output_index": 0, "content_index": 0, "refusal": "I can't help with that." }),
            ));
            v.push((
                "response.output_item.done",
                json!({ "output_index": 0, "item": {
                    "id": "msg_r", "type": "message", "status": "completed", "role": "assistant",
                    "content": [{ "type": "refusal", "refusal": "I can't help with that." }] } }),
            ));
            v.push(completed(model, &v, usage(5, 0, 6, 0)));
            Answer::Stream(v)
        }
        "failed" => {
            let mut v = created(model);
            v.extend(text_item(0, "msg_f", &["Partial"]));
            v.push((
                "response.failed",
                json!({ "response": response(model, "failed", output(&v), json!({
                    "error": { "code": "server_error", "message": "Internal failure at 10.0.0.7" } })) }),
            ));
            Answer::Stream(v)
        }
        "incomplete" => {
            let mut v = created(model);
            v.extend(text_item(0, "msg_i", &["Long ", "answ"]));
            v.push((
                "response.incomplete",
                json!({ "response": response(model, "incomplete", output(&v), json!({
                    "incomplete_details": { "reason": "max_output_tokens" },
                    "usage": usage(10, 0, 16, 0) })) }),
            ));
            Answer::Stream(v)
        }
        "error-top" => {
            let mut v = created(model);
            v.extend(text_item(0, "msg_e", &["Partial"]));
            v.push((
                "error",
                json!({ "code": "rate_limit_exceeded", "message": "Rate limit at shard 10.0.0.7", "param": null }),
            ));
            Answer::Stream(v)
        }
        "error-nested" => {
            let mut v = created(model);
            v.extend(text_item(0, "msg_e", &["Partial"]));
            v.push((
                "error",
                json!({ "error": { "type": "invalid_request_error", "code": "context_length_exceeded",
                                   "message": "Too long, see 10.0.0.7", "param": "input" } }),
            ));
            Answer::Stream(v)
        }
        "busy" if n == 0 => Answer::Status {
            status: 429,
            body: r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        },
        "busy" => whole(model, text_item(0, "msg_b", &["after ", "a retry"])),
        _ => Answer::Status {
            status: 404,
            body: r#"{"error":{"message":"The model does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
        },
    }
}

async fn serve(mut sock: TcpStream, f: Fake) -> std::io::Result<()> {
    let Some(req) = f.take(&mut sock).await else {
        return Ok(());
    };
    let answer = if req.path.ends_with("/responses") {
        scenario(&req.model, req.n, &req.body)
    } else {
        Answer::Status {
            status: 404,
            body: r#"{"error":{"message":"Unknown path","type":"invalid_request_error"}}"#,
        }
    };
    match answer {
        Answer::Status { status, body } => {
            fake_server::write_status(&mut sock, status, None, body).await?;
        }
        Answer::Stream(events) => {
            fake_server::write_stream_head(&mut sock, "text/event-stream; charset=utf-8").await?;
            for (seq, (name, data)) in events.into_iter().enumerate() {
                // The type first, the sequence number last, as the API writes them.
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
