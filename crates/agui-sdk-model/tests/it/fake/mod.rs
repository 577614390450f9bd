//! A fake chat-completions server on loopback: it answers `POST …/chat/completions`
//! with streams written in the exact wire format (SSE `data:` lines of
//! `chat.completion.chunk` JSON, the usage chunk, `data: [DONE]`), sent in small
//! pieces that split strings, escapes and multi-byte characters. The `model` of the
//! request picks the scenario. Every request body is recorded.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::fake_server;

/// The fake server.
#[derive(Clone)]
pub(crate) struct Fake {
    pub addr: SocketAddr,
    server: fake_server::Server,
    /// Set when the client closed a connection the server was still streaming on.
    pub peer_closed: Arc<AtomicBool>,
}

impl Fake {
    /// The base URL (what `/chat/completions` is appended to).
    pub(crate) fn url(&self) -> String {
        self.server.url()
    }

    /// The request bodies for `model`, in order.
    pub(crate) fn requests_for(&self, model: &str) -> Vec<Value> {
        self.server
            .requests_for(model)
            .into_iter()
            .map(|r| r.body)
            .collect()
    }

    /// Every request body received, in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        let requests = self.server.requests.lock().unwrap();
        requests.iter().map(|r| r.body.clone()).collect()
    }

    /// Every request's `Authorization` header, in order (`None`: it had none).
    pub(crate) fn authorizations(&self) -> Vec<Option<String>> {
        let requests = self.server.requests.lock().unwrap();
        requests
            .iter()
            .map(|r| r.headers.get("authorization").cloned())
            .collect()
    }
}

pub(crate) async fn start() -> Fake {
    let (listener, server) = fake_server::bind().await;
    let fake = Fake {
        addr: server.addr,
        server,
        peer_closed: Arc::default(),
    };
    fake_server::accept(listener, fake.clone(), serve);
    fake
}

/// A chunk with a delta for choice 0.
pub(crate) fn delta(d: Value) -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{ "index": 0, "delta": d, "finish_reason": null }] })
}

pub(crate) fn finish(reason: &str) -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{ "index": 0, "delta": {}, "finish_reason": reason }] })
}

pub(crate) fn usage(prompt: u64, completion: u64) -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion } })
}

pub(crate) fn tool_delta(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
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
pub(crate) enum Answer {
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
pub(crate) fn scenario(model: &str, n: usize, body: &Value) -> Answer {
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

async fn serve(mut sock: TcpStream, f: Fake) -> std::io::Result<()> {
    let Some(req) = f.server.take(&mut sock).await else {
        return Ok(());
    };
    match scenario(&req.model, req.n, &req.body) {
        Answer::Status {
            status,
            retry_after,
            body,
        } => {
            fake_server::write_status(&mut sock, status, retry_after, body).await?;
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
            fake_server::write_stream_head(&mut sock, "text/event-stream").await?;
            let mut frames: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
            if done {
                frames.push("data: [DONE]\n\n".into());
            }
            for frame in frames {
                // Small pieces: strings, escapes and multi-byte characters split.
                if !fake_server::write_pieces(&mut sock, frame.as_bytes()).await {
                    f.peer_closed.store(true, Ordering::SeqCst);
                    return Ok(());
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
