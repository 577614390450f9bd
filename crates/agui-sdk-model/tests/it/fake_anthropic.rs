//! A fake Anthropic Messages server on loopback: it answers `POST …/messages` with
//! streams in the exact wire format (`event: message_start\ndata: {…}\n\n`, content
//! blocks started, streamed and stopped by `index`, `message_delta`, `message_stop`,
//! `ping`, `error`), sent in small pieces that split strings, escapes and multi-byte
//! characters. The `model` of the request picks the scenario. Every request's body and
//! headers are recorded.

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::fake_server;

/// The fake server.
pub(crate) type Fake = fake_server::Server;

pub(crate) async fn start() -> Fake {
    fake_server::start(serve).await
}

/// One SSE event of the stream: `(event name, data)`.
pub(crate) type Ev = (&'static str, Value);

pub(crate) fn message_start(usage: Value) -> Ev {
    (
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage } }),
    )
}

pub(crate) fn block_start(index: u32, block: Value) -> Ev {
    (
        "content_block_start",
        json!({ "type": "content_block_start", "index": index, "content_block": block }),
    )
}

pub(crate) fn delta(index: u32, delta: Value) -> Ev {
    (
        "content_block_delta",
        json!({ "type": "content_block_delta", "index": index, "delta": delta }),
    )
}

pub(crate) fn block_stop(index: u32) -> Ev {
    (
        "content_block_stop",
        json!({ "type": "content_block_stop", "index": index }),
    )
}

pub(crate) fn message_delta(stop_reason: &str, output_tokens: u64) -> Ev {
    (
        "message_delta",
        json!({ "type": "message_delta", "delta": { "stop_reason": stop_reason, "stop_sequence": null },
                "usage": { "output_tokens": output_tokens } }),
    )
}

pub(crate) fn message_stop() -> Ev {
    ("message_stop", json!({ "type": "message_stop" }))
}

pub(crate) fn ping() -> Ev {
    ("ping", json!({ "type": "ping" }))
}

fn usage(input: u64) -> Value {
    json!({ "input_tokens": input, "output_tokens": 1, "cache_creation_input_tokens": null,
            "cache_read_input_tokens": null })
}

/// A text block `index` streamed in `pieces`.
pub(crate) fn text_block(index: u32, pieces: &[&str]) -> Vec<Ev> {
    let mut v = vec![block_start(
        index,
        json!({ "type": "text", "text": "", "citations": null }),
    )];
    v.extend(
        pieces
            .iter()
            .map(|p| delta(index, json!({ "type": "text_delta", "text": p }))),
    );
    v.push(block_stop(index));
    v
}

/// A thinking block `index`: its text in `pieces` (none: omitted), then its signature.
pub(crate) fn thinking_block(index: u32, pieces: &[&str], signature: &str) -> Vec<Ev> {
    let mut v = vec![block_start(
        index,
        json!({ "type": "thinking", "thinking": "", "signature": "" }),
    )];
    v.extend(
        pieces
            .iter()
            .map(|p| delta(index, json!({ "type": "thinking_delta", "thinking": p }))),
    );
    v.push(delta(
        index,
        json!({ "type": "signature_delta", "signature": signature }),
    ));
    v.push(block_stop(index));
    v
}

/// A `tool_use` block `index` whose input streams in `pieces`.
pub(crate) fn tool_block(index: u32, id: &str, name: &str, pieces: &[&str]) -> Vec<Ev> {
    let mut v = vec![block_start(
        index,
        json!({ "type": "tool_use", "id": id, "name": name, "input": {} }),
    )];
    v.extend(pieces.iter().map(|p| {
        delta(
            index,
            json!({ "type": "input_json_delta", "partial_json": p }),
        )
    }));
    v.push(block_stop(index));
    v
}

/// A signature as the API sends them (base64, long, with `+`, `/` and `=`).
pub(crate) const SIG_A: &str =
    "EqQBCkYIBRgCIkB+/sig-A/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ==";
pub(crate) const SIG_B: &str = "ErUBCkYIBRgCIkC9/sig-B+9876543210ZYXWVUTSRQPONMLKJIHGFEDCBA/zyxw=";
pub(crate) const SIG_C: &str = "EpcBCkYIBRgCIkD1/sig-C-omitted+AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==";
pub(crate) const REDACTED: &str =
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URv==";

/// What a scenario answers.
pub(crate) enum Answer {
    Stream(Vec<Ev>),
    Status { status: u16, body: &'static str },
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

fn whole(mut evs: Vec<Ev>, stop_reason: &str) -> Answer {
    let mut v = vec![message_start(usage(10)), ping()];
    v.append(&mut evs);
    v.push(message_delta(stop_reason, 9));
    v.push(message_stop());
    Answer::Stream(v)
}

pub(crate) fn scenario(model: &str, n: usize, body: &Value) -> Answer {
    match model {
        "text" => {
            let mut v = vec![message_start(json!({
                "input_tokens": 10, "output_tokens": 1,
                "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100 }))];
            v.extend(text_block(0, &["Hel", "lo, w", "\u{f6}rld! \u{1f600}"]));
            v.push((
                "message_delta",
                json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn", "stop_sequence": null },
                        "usage": { "output_tokens": 7, "output_tokens_details": { "thinking_tokens": 0 } } }),
            ));
            v.push(message_stop());
            Answer::Stream(v)
        }
        "thinking-tool" if has_tool_result(body) => {
            whole(text_block(0, &["Card ", "shown."]), "end_turn")
        }
        "thinking-tool" => {
            let mut v = thinking_block(0, &["The user wants ", "a card for Oslo."], SIG_A);
            v.extend(tool_block(
                1,
                "toolu_01A",
                "show_card",
                &["{\"city\":", " \"Os", "lo\"}"],
            ));
            whole(v, "tool_use")
        }
        "blocks" => {
            let mut v = vec![block_start(
                0,
                json!({ "type": "redacted_thinking", "data": REDACTED }),
            )];
            v.push(block_stop(0));
            v.extend(thinking_block(1, &[], SIG_C));
            v.extend(thinking_block(2, &["Second ", "thought."], SIG_B));
            v.extend(text_block(3, &["Answer."]));
            whole(v, "end_turn")
        }
        "server-tool" if has_tool_result(body) => {
            whole(text_block(0, &["The sum is 5"]), "end_turn")
        }
        "server-tool" => {
            let mut v = thinking_block(0, &["Add them."], SIG_A);
            v.extend(text_block(1, &["Adding."]));
            v.extend(tool_block(
                2,
                "toolu_add",
                "add",
                &["{\"a\": 2,", " \"b\": 3}"],
            ));
            whole(v, "tool_use")
        }
        "refusal" => whole(text_block(0, &["I "]), "refusal"),
        "max-tokens" => whole(text_block(0, &["Long ", "answ"]), "max_tokens"),
        "error-mid" => {
            let mut v = vec![message_start(usage(3))];
            v.extend(text_block(0, &["Partial"]));
            v.push((
                "error",
                json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded at shard 10.0.0.7" } }),
            ));
            Answer::Stream(v)
        }
        "overloaded" if n == 0 => Answer::Status {
            status: 529,
            body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        },
        "overloaded" => whole(text_block(0, &["after ", "a retry"]), "end_turn"),
        "echo" => whole(text_block(0, &["ok"]), "end_turn"),
        "bad-request" => Answer::Status {
            status: 400,
            body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 999999 > 64000, the maximum for this model"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}"#,
        },
        // Cut inside a thinking block and a tool call: no stop reason, no message_stop.
        "cut" => {
            let mut v = vec![message_start(usage(3))];
            v.extend(thinking_block(0, &["Half a "], SIG_A));
            v.push(block_start(
                1,
                json!({ "type": "tool_use", "id": "toolu_cut", "name": "show_card", "input": {} }),
            ));
            v.push(delta(
                1,
                json!({ "type": "input_json_delta", "partial_json": "{\"ci" }),
            ));
            Answer::Stream(v)
        }
        // Cut inside a thinking block, before its signature.
        "cut-thinking" => {
            let mut v = vec![message_start(usage(3))];
            v.extend(text_block(0, &["First."]));
            v.push(block_start(
                1,
                json!({ "type": "thinking", "thinking": "", "signature": "" }),
            ));
            v.push(delta(
                1,
                json!({ "type": "thinking_delta", "thinking": "Half a" }),
            ));
            Answer::Stream(v)
        }
        // A stop reason, then the connection ends before `message_stop`: whole.
        "no-stop-event" => {
            let mut v = vec![message_start(usage(3))];
            v.extend(text_block(0, &["Whole."]));
            v.push(message_delta("end_turn", 2));
            Answer::Stream(v)
        }
        _ => Answer::Status {
            status: 404,
            body: r#"{"type":"error","error":{"type":"not_found_error","message":"no scenario"}}"#,
        },
    }
}

async fn serve(mut sock: TcpStream, f: Fake) -> std::io::Result<()> {
    let Some(req) = f.take(&mut sock).await else {
        return Ok(());
    };
    match scenario(&req.model, req.n, &req.body) {
        Answer::Status { status, body } => {
            fake_server::write_status(&mut sock, status, None, body).await?;
        }
        Answer::Stream(events) => {
            fake_server::write_stream_head(&mut sock, "text/event-stream; charset=utf-8").await?;
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
