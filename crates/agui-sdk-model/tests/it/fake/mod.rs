//! A fake chat-completions server on loopback: it answers `POST …/chat/completions`
//! with streams written in the exact wire format (SSE `data:` lines of
//! `chat.completion.chunk` JSON, the usage chunk, `data: [DONE]`), sent in small
//! pieces that split strings, escapes and multi-byte characters. The `model` of the
//! request picks the scenario. Every request body is recorded.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The fake server.
#[derive(Clone)]
pub struct Fake {
    pub addr: SocketAddr,
    /// Every request body received, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Requests per model.
    counts: Arc<Mutex<HashMap<String, usize>>>,
    /// Set when the client closed a connection the server was still streaming on.
    pub peer_closed: Arc<AtomicBool>,
    /// The `Authorization` header of each request (`None` when absent).
    pub authorizations: Arc<Mutex<Vec<Option<String>>>>,
}

impl Fake {
    /// The base URL (what `/chat/completions` is appended to).
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests_for(&self, model: &str) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r["model"] == model)
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
        peer_closed: Arc::default(),
        authorizations: Arc::default(),
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

/// A chunk with a delta for choice 0.
pub fn delta(d: Value) -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{ "index": 0, "delta": d, "finish_reason": null }] })
}

pub fn finish(reason: &str) -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{ "index": 0, "delta": {}, "finish_reason": reason }] })
}

pub fn usage(prompt: u64, completion: u64) -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion } })
}

pub fn tool_delta(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    let mut call = json!({ "index": index, "function": { "arguments": args } });
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(n) = name {
        call["function"]["name"] = json!(n);
    }
    delta(json!({ "tool_calls": [call] }))
}

/// What a scenario answers.
pub enum Answer {
    /// A stream: chunks (each one `data:` event), then `[DONE]` when `done`, then the
    /// connection closes.
    Stream {
        chunks: Vec<Value>,
        done: bool,
        pause: Duration,
    },
    /// A non-2xx answer.
    Status {
        status: u16,
        retry_after: Option<&'static str>,
        body: &'static str,
    },
    /// A `500` whose body never ends: one byte every `every`.
    DripError { every: Duration },
    /// A `200` event stream of only comments (`: keep-alive`), one every `every`,
    /// never a data event.
    Comments { every: Duration },
}

fn text_stream(pieces: &[&str]) -> Vec<Value> {
    let mut c = vec![delta(json!({ "role": "assistant", "content": "" }))];
    c.extend(pieces.iter().map(|p| delta(json!({ "content": p }))));
    c.push(finish("stop"));
    c.push(usage(11, pieces.len() as u64));
    c
}

/// The scenario a request's `model` names; `n` is how many requests this model had
/// before.
pub fn scenario(model: &str, n: usize, body: &Value) -> Answer {
    let stream = |chunks| Answer::Stream {
        chunks,
        done: true,
        pause: Duration::ZERO,
    };
    match model {
        "text" => stream(text_stream(&["Hel", "lo, w", "\u{f6}rld! \u{1f600}"])),
        "tool" => stream(vec![
            delta(json!({ "role": "assistant", "content": null })),
            tool_delta(0, Some("call_1"), Some("show_card"), ""),
            tool_delta(0, None, None, "{\"city\": \"Z\u{fc}"),
            tool_delta(0, None, None, "rich \\\"Old"),
            tool_delta(0, None, None, " Town\\\"\", \"n\": 1"),
            tool_delta(0, None, None, "}"),
            finish("tool_calls"),
            usage(20, 9),
        ]),
        "parallel" => stream(vec![
            delta(json!({ "role": "assistant", "content": "Looking up both." })),
            tool_delta(0, Some("call_a"), Some("show_card"), "{\"city\":"),
            tool_delta(1, Some("call_b"), Some("show_card"), "{\"city\":\"Be"),
            tool_delta(0, None, None, "\"Paris\"}"),
            tool_delta(1, None, None, "rlin\"}"),
            finish("tool_calls"),
            usage(30, 12),
        ]),
        "reasoning" => stream(vec![
            delta(json!({ "role": "assistant", "reasoning_content": "The user " })),
            delta(json!({ "reasoning_content": "greets me." })),
            delta(json!({ "content": "Hi!" })),
            finish("stop"),
            usage(5, 7),
        ]),
        "reasoning-field" => stream(vec![
            delta(json!({ "role": "assistant", "reasoning": "Short thought." })),
            delta(json!({ "content": "Done." })),
            finish("stop"),
        ]),
        "error-mid" => stream(vec![
            delta(json!({ "role": "assistant", "content": "Partial " })),
            delta(json!({ "content": "answer" })),
            json!({ "error": { "message": "upstream shard 7 at 10.0.0.3 failed", "type": "server_error" } }),
        ]),
        "no-done" => Answer::Stream {
            chunks: text_stream(&["Whole ", "answer."]),
            done: false,
            pause: Duration::ZERO,
        },
        "cut" => Answer::Stream {
            chunks: vec![
                delta(json!({ "role": "assistant", "content": "Cut " })),
                delta(json!({ "content": "here" })),
            ],
            done: false,
            pause: Duration::ZERO,
        },
        "busy" if n == 0 => Answer::Status {
            status: 429,
            retry_after: Some("0"),
            body: r#"{"error":{"message":"Rate limit reached for org-secret","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        },
        "busy" => stream(text_stream(&["after ", "a retry"])),
        "down" => Answer::Status {
            status: 503,
            retry_after: None,
            body: "backend down",
        },
        "denied" => Answer::Status {
            status: 401,
            retry_after: None,
            body: r#"{"error":{"message":"Incorrect API key provided: sk-abc***","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        },
        "refusal" => stream(vec![
            delta(json!({ "role": "assistant", "content": null, "refusal": "I can't " })),
            delta(json!({ "refusal": "help with that." })),
            finish("stop"),
        ]),
        "server-tool" => {
            // First the call, then, once the result is in the request, the answer.
            let answered = body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            if answered {
                let result = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .rev()
                    .find(|m| m["role"] == "tool")
                    .unwrap()["content"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                stream(text_stream(&[
                    "The sum is ",
                    Box::leak(result.into_boxed_str()),
                ]))
            } else {
                stream(vec![
                    delta(json!({ "role": "assistant", "content": null })),
                    tool_delta(0, Some("call_add"), Some("add"), "{\"a\": 2,"),
                    tool_delta(0, None, None, " \"b\": 3}"),
                    finish("tool_calls"),
                    usage(15, 5),
                ])
            }
        }
        "frontend-roundtrip" => {
            let answered = body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            if answered {
                stream(text_stream(&["Card ", "shown."]))
            } else {
                stream(vec![
                    delta(json!({ "role": "assistant", "content": null })),
                    tool_delta(
                        0,
                        Some("call_card"),
                        Some("show_card"),
                        "{\"city\":\"Oslo\"}",
                    ),
                    finish("tool_calls"),
                ])
            }
        }
        "state-tool" => {
            let answered = body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            if answered {
                stream(text_stream(&["Renamed."]))
            } else {
                stream(vec![
                    delta(json!({ "role": "assistant", "content": null })),
                    tool_delta(
                        0,
                        Some("call_rename"),
                        Some("rename"),
                        "{\"title\":\"Soup\"}",
                    ),
                    finish("tool_calls"),
                ])
            }
        }
        "slow" => Answer::Stream {
            chunks: (0..200)
                .map(|i| delta(json!({ "content": format!("t{i} ") })))
                .collect(),
            done: true,
            pause: Duration::from_millis(50),
        },
        "fast" => {
            let n: usize = body["max_tokens"].as_u64().unwrap_or(1000) as usize;
            let mut c = vec![delta(json!({ "role": "assistant", "content": "" }))];
            c.extend((0..n).map(|i| delta(json!({ "content": format!("w{i} ") }))));
            c.push(finish("stop"));
            stream(c)
        }
        "drip-500" => Answer::DripError {
            every: Duration::from_millis(100),
        },
        "comments" => Answer::Comments {
            every: Duration::from_millis(50),
        },
        other => Answer::Status {
            status: 404,
            retry_after: None,
            body: Box::leak(format!("no scenario {other}").into_boxed_str()),
        },
    }
}

async fn read_request(sock: &mut TcpStream) -> Option<(Value, Option<String>)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let (head_end, len, auth) = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..pos]).into_owned();
            let header = |name: &str| {
                head.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.trim().to_owned())
                })
            };
            let len = header("content-length")
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            break (pos + 4, len, header("authorization"));
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
    Some((body, auth))
}

async fn serve(mut sock: TcpStream, f: Fake) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let Some((body, auth)) = read_request(&mut sock).await else {
        return Ok(());
    };
    f.authorizations.lock().unwrap().push(auth);
    let model = body["model"].as_str().unwrap_or("").to_owned();
    let n = {
        let mut counts = f.counts.lock().unwrap();
        let c = counts.entry(model.clone()).or_default();
        *c += 1;
        *c - 1
    };
    f.requests.lock().unwrap().push(body.clone());
    match scenario(&model, n, &body) {
        Answer::Status {
            status,
            retry_after,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            if let Some(r) = retry_after {
                head.push_str(&format!("Retry-After: {r}\r\n"));
            }
            head.push_str("\r\n");
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(body.as_bytes()).await?;
        }
        Answer::DripError { every } => {
            sock.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
            )
            .await?;
            // No length, no end: the body is whatever comes until the peer goes away.
            loop {
                tokio::time::sleep(every).await;
                if sock.write_all(b"x").await.is_err() {
                    f.peer_closed.store(true, Ordering::SeqCst);
                    return Ok(());
                }
            }
        }
        Answer::Comments { every } => {
            sock.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            )
            .await?;
            loop {
                if sock.write_all(b": keep-alive\n\n").await.is_err() {
                    f.peer_closed.store(true, Ordering::SeqCst);
                    return Ok(());
                }
                tokio::time::sleep(every).await;
            }
        }
        Answer::Stream {
            chunks,
            done,
            pause,
        } => {
            sock.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
            )
            .await?;
            let mut frames: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
            if done {
                frames.push("data: [DONE]\n\n".into());
            }
            for frame in frames {
                // Small pieces: strings, escapes and multi-byte characters split.
                for piece in frame.as_bytes().chunks(5) {
                    if sock.write_all(piece).await.is_err() {
                        f.peer_closed.store(true, Ordering::SeqCst);
                        return Ok(());
                    }
                }
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                    // A closed peer shows on the next write.
                }
            }
        }
    }
    sock.shutdown().await
}
