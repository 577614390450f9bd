//! A fake OpenAI Responses server on loopback: it answers `POST …/responses` with
//! streams in the exact wire format (`event: response.output_text.delta\ndata: {…,
//! "sequence_number": n}\n\n`: the response created, output items added, their deltas,
//! the items done, the response completed, incomplete or failed, `error`), sent in
//! small pieces that split strings, escapes and multi-byte characters. The `model` of
//! the request picks the scenario. Every request's body and headers are recorded.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

/// The fake server.
#[derive(Clone)]
pub struct Fake {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<Request>>>,
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

impl Fake {
    /// The base URL (what `/responses` is appended to).
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests_for(&self, model: &str) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.body["model"] == model)
            .cloned()
            .collect()
    }
}

pub async fn start() -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fake = Fake {
        addr: listener.local_addr().unwrap(),
        requests: Arc::default(),
        counts: Arc::default(),
    };
    let f = fake.clone();
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let f = f.clone();
            tokio::spawn(async move {
                let _ = serve(sock, f).await;
            });
        }
    });
    fake
}

/// One SSE event of the stream: its type and its other fields (the type and the
/// `sequence_number` are added when it is sent).
pub type Ev = (&'static str, Value);

/// Encrypted reasoning as the API sends it (base64, long, with `+`, `/` and `=`).
pub const ENC_A: &str =
    "gAAAAABoX1-reasoning+A/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP_qrs==";
pub const ENC_B: &str = "gAAAAABoX2-reasoning+B/zyxwvutsrqponmlkjihgfedcba9876543210=";

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

pub fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
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
pub fn text_item(index: u32, id: &str, pieces: &[&str]) -> Vec<Ev> {
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
pub fn reasoning_item(index: u32, id: &str, pieces: &[&str], encrypted: &str) -> Vec<Ev> {
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
pub fn call_item(index: u32, id: &str, call_id: &str, name: &str, pieces: &[&str]) -> Vec<Ev> {
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
pub enum Answer {
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

pub fn scenario(model: &str, n: usize, body: &Value) -> Answer {
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

async fn read_request(sock: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let (head_end, len, path, headers) = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..pos]).into_owned();
            let mut lines = head.lines();
            let path = lines.next()?.split(' ').nth(1)?.to_owned();
            let headers: HashMap<String, String> = lines
                .filter_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                })
                .collect();
            let len = headers
                .get("content-length")
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            break (pos + 4, len, path, headers);
        }
    };
    while buf.len() < head_end + len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + len]).ok()?;
    Some(Request {
        path,
        headers,
        body,
    })
}

async fn serve(mut sock: TcpStream, f: Fake) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let Some(req) = read_request(&mut sock).await else {
        return Ok(());
    };
    let model = req.body["model"].as_str().unwrap_or("").to_owned();
    let n = {
        let mut counts = f.counts.lock().unwrap();
        let c = counts.entry(model.clone()).or_default();
        *c += 1;
        *c - 1
    };
    let body = req.body.clone();
    let path = req.path.clone();
    f.requests.lock().unwrap().push(req);
    let answer = if path.ends_with("/responses") {
        scenario(&model, n, &body)
    } else {
        Answer::Status {
            status: 404,
            body: r#"{"error":{"message":"Unknown path","type":"invalid_request_error"}}"#,
        }
    };
    match answer {
        Answer::Status { status, body } => {
            let head = format!(
                "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(body.as_bytes()).await?;
        }
        Answer::Stream(events) => {
            sock.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
            )
            .await?;
            for (seq, (name, data)) in events.into_iter().enumerate() {
                // The type first, the sequence number last, as the API writes them.
                let mut o = serde_json::Map::new();
                o.insert("type".into(), json!(name));
                if let Value::Object(fields) = data {
                    o.extend(fields);
                }
                o.insert("sequence_number".into(), json!(seq));
                let frame = format!("event: {name}\ndata: {}\n\n", Value::Object(o));
                for piece in frame.as_bytes().chunks(5) {
                    if sock.write_all(piece).await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
    sock.shutdown().await
}
