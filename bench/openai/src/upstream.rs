//! The fake chat-completions endpoint: raw HTTP/1.1 on loopback, keep-alive, the answer
//! chunked (`Transfer-Encoding: chunked`, one HTTP chunk and one write per SSE event, as
//! a model server flushes each token), in the shape OpenAI sends: a first chunk with the
//! role, one chunk per token, a chunk with the finish reason, the usage chunk when asked
//! (`stream_options.include_usage`), then `data: [DONE]`.

use std::io::Write as _;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::{now_ns, Ask};

pub fn main(_args: &[String]) {
    // One thread: a model server's streaming front is not what is measured.
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

/// The fields every chunk carries before `choices`.
const PREFIX: &str = r#"{"id":"chatcmpl-bench00000000000000000000001","object":"chat.completion.chunk","created":1750000000,"model":"bench-model-2025-01-01","service_tier":"default","system_fingerprint":"fp_0000bench","#;

async fn connection(mut sock: TcpStream) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        let Some(body) = read_request(&mut sock, &mut buf).await? else {
            return Ok(());
        };
        let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let ask = crate::last_text(&req["messages"]).and_then(|t| Ask::parse(&t));
        let Some(ask) = ask else {
            let msg = br#"{"error":{"message":"the prompt must be tokens=N rate=R","type":"invalid_request_error"}}"#;
            let head = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                msg.len()
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(msg).await?;
            continue;
        };
        let usage = req["stream_options"]["include_usage"] == Value::Bool(true);
        answer(&mut sock, ask, usage).await?;
    }
}

/// Reads one request (head and `content-length` body); `None` when the peer closed.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Option<Vec<u8>>> {
    let mut tmp = [0u8; 16 * 1024];
    loop {
        if let Some(pos) = memchr::memmem::find(buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..pos]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
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
            return Ok(Some(body));
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

/// One SSE event as one HTTP chunk, written at once.
async fn send(sock: &mut TcpStream, frame: &mut Vec<u8>, data: &[u8]) -> std::io::Result<()> {
    frame.clear();
    let len = data.len() + 8; // "data: " and "\n\n"
    let _ = write!(frame, "{len:x}\r\n");
    frame.extend_from_slice(b"data: ");
    frame.extend_from_slice(data);
    frame.extend_from_slice(b"\n\n\r\n");
    sock.write_all(frame).await
}

fn chunk(choices: &str, data: &mut Vec<u8>) {
    data.clear();
    data.extend_from_slice(PREFIX.as_bytes());
    data.extend_from_slice(choices.as_bytes());
    data.push(b'}');
}

async fn answer(sock: &mut TcpStream, ask: Ask, usage: bool) -> std::io::Result<()> {
    sock.write_all(HEAD).await?;
    let mut frame = Vec::with_capacity(512);
    let mut data = Vec::with_capacity(512);
    chunk(
        r#""choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]"#,
        &mut data,
    );
    send(sock, &mut frame, &data).await?;
    let start = tokio::time::Instant::now();
    let mut text = String::with_capacity(64);
    for i in 0..ask.tokens {
        if let Some(due) = ask.due(i) {
            tokio::time::sleep_until(start + due).await;
        }
        text.clear();
        let _ = std::fmt::Write::write_fmt(&mut text, format_args!("{i}:{}", now_ns()));
        data.clear();
        data.extend_from_slice(PREFIX.as_bytes());
        data.extend_from_slice(br#""choices":[{"index":0,"delta":{"content":""#);
        data.extend_from_slice(text.as_bytes());
        data.extend_from_slice(br#""},"logprobs":null,"finish_reason":null}]}"#);
        send(sock, &mut frame, &data).await?;
    }
    chunk(
        r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]"#,
        &mut data,
    );
    send(sock, &mut frame, &data).await?;
    if usage {
        let u = format!(
            r#""choices":[],"usage":{{"prompt_tokens":12,"completion_tokens":{n},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":0,"audio_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}}"#,
            n = ask.tokens,
            t = ask.tokens + 12
        );
        chunk(&u, &mut data);
        send(sock, &mut frame, &data).await?;
    }
    if ask.done {
        send(sock, &mut frame, b"[DONE]").await?;
    }
    sock.write_all(b"0\r\n\r\n").await
}
