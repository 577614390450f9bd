//! The fake provider: raw HTTP/1.1 on loopback, keep-alive, the answer chunked (one HTTP
//! chunk and one write per SSE event, as a model server flushes each token), on the
//! wire of the path asked (the shapes of `crates/agui-sdk-model/tests/it/fake_*.rs`):
//!
//! * `…/chat/completions`: `data: {chat.completion.chunk}` with `delta.reasoning_content`
//!   per reasoning token, then `delta.content` per text token, the finish reason, the
//!   usage chunk, `data: [DONE]`;
//! * `…/responses`: `event: response.*` with `sequence_number`: the response created, a
//!   `reasoning` item (`response.reasoning_summary_text.delta` per token, its
//!   `encrypted_content` in `response.output_item.done`), a `message` item
//!   (`response.output_text.delta` per token, the whole text in the `done` events), the
//!   response completed with both items and the usage;
//! * `…/messages`: `event: message_start`, `ping`, a `thinking` block
//!   (`thinking_delta` per token, then `signature_delta`), a `text` block (`text_delta`
//!   per token), `message_delta` with the stop reason and usage, `message_stop`.
//!
//! For a guide's example, `words=1` streams readable words, `tool=1` ends the turn
//! with a call of `show_card` (Responses, Anthropic) until the request carries its
//! result, `redacted=1` adds a `redacted_thinking` block (Anthropic); with
//! `BENCH_LOG_REQUESTS` set, every request body goes to standard error.

use std::io::Write as _;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::Ask;

pub fn main() {
    // One thread: the provider's streaming front is not what is measured.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        crate::announce(listener.local_addr().expect("addr").port());
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let _ = connection(sock).await;
            });
        }
    });
}

const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";

pub const SIGNATURE: &str =
    "EqQBCkYIBRgCIkB+/sig-A/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ==";
pub const REDACTED: &str =
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URv==";
pub const ENCRYPTED: &str =
    "gAAAAABoX1-reasoning+A/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP_qrs==";

async fn connection(mut sock: TcpStream) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        let Some((path, body)) = read_request(&mut sock, &mut buf).await? else {
            return Ok(());
        };
        if std::env::var_os("BENCH_LOG_REQUESTS").is_some() {
            eprintln!("request {path} {}", String::from_utf8_lossy(&body));
        }
        // A follow-up with the tool's result: text only.
        let follow_up = memchr::memmem::find(&body, b"\"tool_result\"").is_some()
            || memchr::memmem::find(&body, b"\"function_call_output\"").is_some();
        let Some(mut ask) = Ask::find(&body) else {
            let msg = br#"{"error":{"message":"the prompt must be benchask reasoning=R tokens=T rate=X","type":"invalid_request_error"}}"#;
            let head = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                msg.len()
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(msg).await?;
            continue;
        };
        if follow_up {
            (ask.reasoning, ask.tool, ask.redacted) = (0, false, false);
        }
        let mut w = Writer {
            sock: &mut sock,
            frame: Vec::with_capacity(1024),
            seq: 0,
        };
        w.sock.write_all(HEAD).await?;
        if path.ends_with("/chat/completions") {
            chat(&mut w, ask).await?;
        } else if path.ends_with("/responses") {
            responses(&mut w, ask).await?;
        } else {
            anthropic(&mut w, ask).await?;
        }
        sock.write_all(b"0\r\n\r\n").await?;
    }
}

/// Reads one request: its path and its body (`content-length`, or chunked).
async fn read_request(
    sock: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut tmp = [0u8; 16 * 1024];
    loop {
        if let Some(pos) = memchr::memmem::find(buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..pos]).to_ascii_lowercase();
            let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
            let chunked = head.contains("transfer-encoding: chunked");
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if chunked {
                // Until the last chunk; the body is decoded from buf[pos + 4..].
                loop {
                    if let Some((body, used)) = dechunk(&buf[pos + 4..]) {
                        buf.drain(..pos + 4 + used);
                        return Ok(Some((path, body)));
                    }
                    let n = sock.read(&mut tmp).await?;
                    if n == 0 {
                        return Ok(None);
                    }
                    buf.extend_from_slice(&tmp[..n]);
                }
            }
            let end = pos + 4 + len;
            while buf.len() < end {
                let n = sock.read(&mut tmp).await?;
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            let body = buf[pos + 4..end].to_vec();
            buf.drain(..end);
            return Ok(Some((path, body)));
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

/// A whole chunked body: (the body, the bytes it took), or `None` if not all there.
fn dechunk(mut b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let total = b.len();
    let mut out = Vec::new();
    loop {
        let eol = memchr::memmem::find(b, b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            let end = memchr::memmem::find(b, b"\r\n")?;
            b = &b[end + 2..];
            return Some((out, total - b.len()));
        }
        if b.len() < size + 2 {
            return None;
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

struct Writer<'a> {
    sock: &'a mut TcpStream,
    frame: Vec<u8>,
    seq: u64,
}

impl Writer<'_> {
    /// One SSE event (`event:` line when named) as one HTTP chunk, written at once.
    async fn send(&mut self, event: Option<&str>, data: &str) -> std::io::Result<()> {
        let mut ev = Vec::with_capacity(data.len() + 64);
        if let Some(name) = event {
            let _ = write!(ev, "event: {name}\n");
        }
        let _ = write!(ev, "data: {data}\n\n");
        self.frame.clear();
        let _ = write!(self.frame, "{:x}\r\n", ev.len());
        self.frame.extend_from_slice(&ev);
        self.frame.extend_from_slice(b"\r\n");
        self.sock.write_all(&self.frame).await
    }

    /// A Responses event: the type first, the sequence number last, as the API writes.
    async fn resp(&mut self, name: &str, fields: Value) -> std::io::Result<()> {
        let mut o = serde_json::Map::new();
        o.insert("type".into(), json!(name));
        if let Value::Object(f) = fields {
            o.extend(f);
        }
        o.insert("sequence_number".into(), json!(self.seq));
        self.seq += 1;
        let data = Value::Object(o).to_string();
        self.send(Some(name), &data).await
    }
}

/// Paces delta `i` when the ask has a rate.
async fn pace(ask: &Ask, start: tokio::time::Instant, i: usize) {
    if let Some(due) = ask.due(i) {
        tokio::time::sleep_until(start + due).await;
    }
}

const THOUGHT: [&str; 7] = [
    "The user ",
    "wants ",
    "a card ",
    "for ",
    "Oslo; ",
    "show_card ",
    "does it.",
];
const ANSWER: [&str; 4] = ["Here ", "is ", "the ", "card."];

fn reasoning_token(ask: &Ask, i: usize) -> String {
    if ask.words {
        return THOUGHT[i % THOUGHT.len()].to_owned();
    }
    format!("r{i} ")
}

fn text_token(ask: &Ask, i: usize) -> String {
    if ask.words {
        return ANSWER[i % ANSWER.len()].to_owned();
    }
    format!("t{i} ")
}

const CHAT_PREFIX: &str = r#"{"id":"chatcmpl-bench00000000000000000000001","object":"chat.completion.chunk","created":1750000000,"model":"bench-model-2025-01-01","service_tier":"default","system_fingerprint":"fp_0000bench","#;

async fn chat(w: &mut Writer<'_>, ask: Ask) -> std::io::Result<()> {
    let chunk = |choices: &str| format!("{CHAT_PREFIX}{choices}}}");
    w.send(None, &chunk(r#""choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]"#)).await?;
    let start = tokio::time::Instant::now();
    for i in 0..ask.reasoning {
        pace(&ask, start, i).await;
        let c = format!(
            r#""choices":[{{"index":0,"delta":{{"reasoning_content":"{}"}},"logprobs":null,"finish_reason":null}}]"#,
            reasoning_token(&ask, i)
        );
        w.send(None, &chunk(&c)).await?;
    }
    for i in 0..ask.tokens {
        pace(&ask, start, ask.reasoning + i).await;
        let c = format!(
            r#""choices":[{{"index":0,"delta":{{"content":"{}"}},"logprobs":null,"finish_reason":null}}]"#,
            text_token(&ask, i)
        );
        w.send(None, &chunk(&c)).await?;
    }
    w.send(
        None,
        &chunk(r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]"#),
    )
    .await?;
    let n = ask.reasoning + ask.tokens;
    let u = format!(
        r#""choices":[],"usage":{{"prompt_tokens":12,"completion_tokens":{n},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":0,"audio_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":{r},"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}}"#,
        t = n + 12,
        r = ask.reasoning
    );
    w.send(None, &chunk(&u)).await?;
    w.send(None, "[DONE]").await
}

fn response(status: &str, output: Value, usage: Value) -> Value {
    json!({
        "id": "resp_0123", "object": "response", "created_at": 1_741_476_777,
        "status": status, "model": "bench-model", "output": output,
        "error": null, "incomplete_details": null, "instructions": null,
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "usage": usage,
    })
}

async fn responses(w: &mut Writer<'_>, ask: Ask) -> std::io::Result<()> {
    let (rs, msg) = ("rs_0123", "msg_0123");
    w.resp(
        "response.created",
        json!({ "response": response("in_progress", json!([]), Value::Null) }),
    )
    .await?;
    w.resp(
        "response.in_progress",
        json!({ "response": response("in_progress", json!([]), Value::Null) }),
    )
    .await?;
    let start = tokio::time::Instant::now();
    let mut items = Vec::new();
    if ask.reasoning > 0 {
        w.resp(
            "response.output_item.added",
            json!({ "output_index": 0, "item": {
            "id": rs, "type": "reasoning", "summary": [], "encrypted_content": null } }),
        )
        .await?;
        w.resp(
            "response.reasoning_summary_part.added",
            json!({ "item_id": rs, "output_index": 0,
            "summary_index": 0, "part": { "type": "summary_text", "text": "" } }),
        )
        .await?;
        let mut summary = String::new();
        for i in 0..ask.reasoning {
            pace(&ask, start, i).await;
            let t = reasoning_token(&ask, i);
            summary.push_str(&t);
            // Written by hand: the bytes serde_json would give, without a Value a token.
            let data = format!(
                r#"{{"type":"response.reasoning_summary_text.delta","item_id":"{rs}","output_index":0,"summary_index":0,"delta":"{t}","sequence_number":{}}}"#,
                w.seq
            );
            w.seq += 1;
            w.send(Some("response.reasoning_summary_text.delta"), &data)
                .await?;
        }
        w.resp(
            "response.reasoning_summary_text.done",
            json!({ "item_id": rs, "output_index": 0,
            "summary_index": 0, "text": summary }),
        )
        .await?;
        w.resp(
            "response.reasoning_summary_part.done",
            json!({ "item_id": rs, "output_index": 0,
            "summary_index": 0, "part": { "type": "summary_text", "text": summary } }),
        )
        .await?;
        let rs_item = json!({ "id": rs, "type": "reasoning",
            "summary": [{ "type": "summary_text", "text": summary }], "encrypted_content": ENCRYPTED });
        w.resp(
            "response.output_item.done",
            json!({ "output_index": 0, "item": rs_item }),
        )
        .await?;
        items.push(rs_item);
    }
    let index = items.len();
    if ask.tool {
        let (id, call) = ("fc_0123", "call_01A");
        w.resp(
            "response.output_item.added",
            json!({ "output_index": index, "item": {
            "id": id, "type": "function_call", "status": "in_progress", "call_id": call,
            "name": "show_card", "arguments": "" } }),
        )
        .await?;
        for p in ["{\"city\":", " \"Oslo\"}"] {
            w.resp(
                "response.function_call_arguments.delta",
                json!({ "item_id": id,
                "output_index": index, "delta": p }),
            )
            .await?;
        }
        let args = "{\"city\": \"Oslo\"}";
        w.resp(
            "response.function_call_arguments.done",
            json!({ "item_id": id,
            "output_index": index, "arguments": args }),
        )
        .await?;
        let item = json!({ "id": id, "type": "function_call", "status": "completed",
            "call_id": call, "name": "show_card", "arguments": args });
        w.resp(
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
        )
        .await?;
        items.push(item);
    } else {
        w.resp("response.output_item.added", json!({ "output_index": index, "item": {
            "id": msg, "type": "message", "status": "in_progress", "role": "assistant", "content": [] } })).await?;
        w.resp(
            "response.content_part.added",
            json!({ "item_id": msg, "output_index": index, "content_index": 0,
            "part": { "type": "output_text", "text": "", "annotations": [] } }),
        )
        .await?;
        let mut text = String::new();
        for i in 0..ask.tokens {
            pace(&ask, start, ask.reasoning + i).await;
            let t = text_token(&ask, i);
            text.push_str(&t);
            let data = format!(
                r#"{{"type":"response.output_text.delta","item_id":"{msg}","output_index":{index},"content_index":0,"delta":"{t}","logprobs":[],"sequence_number":{}}}"#,
                w.seq
            );
            w.seq += 1;
            w.send(Some("response.output_text.delta"), &data).await?;
        }
        w.resp(
            "response.output_text.done",
            json!({ "item_id": msg, "output_index": index, "content_index": 0,
            "text": text, "logprobs": [] }),
        )
        .await?;
        w.resp(
            "response.content_part.done",
            json!({ "item_id": msg, "output_index": index, "content_index": 0,
            "part": { "type": "output_text", "text": text, "annotations": [] } }),
        )
        .await?;
        let item = json!({ "id": msg, "type": "message", "status": "completed", "role": "assistant",
            "content": [{ "type": "output_text", "text": text, "annotations": [] }] });
        w.resp(
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
        )
        .await?;
        items.push(item);
    }
    let n = (ask.reasoning + ask.tokens) as u64;
    let usage = json!({ "input_tokens": 12, "input_tokens_details": { "cached_tokens": 0 },
        "output_tokens": n, "output_tokens_details": { "reasoning_tokens": ask.reasoning },
        "total_tokens": n + 12 });
    w.resp(
        "response.completed",
        json!({ "response": response("completed", Value::Array(items), usage) }),
    )
    .await
}

async fn anthropic(w: &mut Writer<'_>, ask: Ask) -> std::io::Result<()> {
    let ev = |v: Value| v.to_string();
    w.send(
        Some("message_start"),
        &ev(json!({ "type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "bench-model",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": { "input_tokens": 12, "output_tokens": 1, "cache_creation_input_tokens": null,
                   "cache_read_input_tokens": null } } })),
    )
    .await?;
    w.send(Some("ping"), r#"{"type":"ping"}"#).await?;
    let mut index = 0;
    if ask.redacted {
        w.send(
            Some("content_block_start"),
            &ev(json!({ "type": "content_block_start", "index": index,
            "content_block": { "type": "redacted_thinking", "data": REDACTED } })),
        )
        .await?;
        w.send(
            Some("content_block_stop"),
            &ev(json!({ "type": "content_block_stop", "index": index })),
        )
        .await?;
        index += 1;
    }
    let start = tokio::time::Instant::now();
    if ask.reasoning > 0 {
        w.send(
            Some("content_block_start"),
            &ev(json!({ "type": "content_block_start", "index": index,
            "content_block": { "type": "thinking", "thinking": "", "signature": "" } })),
        )
        .await?;
        for i in 0..ask.reasoning {
            pace(&ask, start, i).await;
            let data = format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"thinking_delta","thinking":"{}"}}}}"#,
                reasoning_token(&ask, i)
            );
            w.send(Some("content_block_delta"), &data).await?;
        }
        w.send(
            Some("content_block_delta"),
            &ev(json!({ "type": "content_block_delta", "index": index,
            "delta": { "type": "signature_delta", "signature": SIGNATURE } })),
        )
        .await?;
        w.send(
            Some("content_block_stop"),
            &ev(json!({ "type": "content_block_stop", "index": index })),
        )
        .await?;
        index += 1;
    }
    let stop = if ask.tool {
        w.send(Some("content_block_start"), &ev(json!({ "type": "content_block_start", "index": index,
            "content_block": { "type": "tool_use", "id": "toolu_01A", "name": "show_card", "input": {} } }))).await?;
        for p in ["{\"city\":", " \"Oslo\"}"] {
            w.send(
                Some("content_block_delta"),
                &ev(json!({ "type": "content_block_delta", "index": index,
                "delta": { "type": "input_json_delta", "partial_json": p } })),
            )
            .await?;
        }
        "tool_use"
    } else {
        w.send(
            Some("content_block_start"),
            &ev(json!({ "type": "content_block_start", "index": index,
            "content_block": { "type": "text", "text": "", "citations": null } })),
        )
        .await?;
        for i in 0..ask.tokens {
            pace(&ask, start, ask.reasoning + i).await;
            let data = format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{}"}}}}"#,
                text_token(&ask, i)
            );
            w.send(Some("content_block_delta"), &data).await?;
        }
        "end_turn"
    };
    w.send(
        Some("content_block_stop"),
        &ev(json!({ "type": "content_block_stop", "index": index })),
    )
    .await?;
    let n = ask.reasoning + ask.tokens;
    w.send(
        Some("message_delta"),
        &ev(json!({ "type": "message_delta",
        "delta": { "stop_reason": stop, "stop_sequence": null },
        "usage": { "output_tokens": n } })),
    )
    .await?;
    w.send(Some("message_stop"), r#"{"type":"message_stop"}"#)
        .await
}
