//! What the fake model servers share: a loopback listener serving each connection on
//! a task of its own, each request read whole (path, headers, JSON body), recorded and
//! counted per `model` (the model picks a fake's scripted answer), and the answer
//! written as a status with a body or as an event stream sent in small pieces that
//! split strings, escapes and multi-byte characters.
#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One recorded request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub path: String,
    /// By lowercase name.
    pub headers: HashMap<String, String>,
    pub body: Value,
}

/// A request as a fake's script takes it.
pub(crate) struct Incoming {
    pub path: String,
    /// The request's `model`.
    pub model: String,
    /// How many requests this model had before.
    pub n: usize,
    pub body: Value,
}

/// The listener's address and every request it received.
#[derive(Clone)]
pub(crate) struct Server {
    pub addr: SocketAddr,
    /// Every request received, in order.
    pub requests: Arc<Mutex<Vec<Request>>>,
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

impl Server {
    /// The base URL (what the API's path is appended to).
    pub(crate) fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The requests for `model`, in order.
    pub(crate) fn requests_for(&self, model: &str) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.body["model"] == model)
            .cloned()
            .collect()
    }

    /// Reads the next request on `sock`, records and counts it (`None`: the peer
    /// went away first, or the body is not JSON).
    pub(crate) async fn take(&self, sock: &mut TcpStream) -> Option<Incoming> {
        let req = read_request(sock).await?;
        let model = req.body["model"].as_str().unwrap_or("").to_owned();
        let n = {
            let mut counts = self.counts.lock().unwrap();
            let c = counts.entry(model.clone()).or_default();
            *c += 1;
            *c - 1
        };
        let incoming = Incoming {
            path: req.path.clone(),
            model,
            n,
            body: req.body.clone(),
        };
        self.requests.lock().unwrap().push(req);
        Some(incoming)
    }
}

/// A server on loopback answering each connection with `serve`.
pub(crate) async fn start<F, Fut>(serve: F) -> Server
where
    F: Fn(TcpStream, Server) -> Fut + Send + Copy + 'static,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
{
    let (listener, server) = bind().await;
    accept(listener, server.clone(), serve);
    server
}

/// A listener on loopback, and the server it records for.
pub(crate) async fn bind() -> (TcpListener, Server) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server {
        addr: listener.local_addr().unwrap(),
        requests: Arc::default(),
        counts: Arc::default(),
    };
    (listener, server)
}

/// Serves every connection `listener` accepts with `serve`, each on a task of its own.
pub(crate) fn accept<S, F, Fut>(listener: TcpListener, state: S, serve: F)
where
    S: Clone + Send + 'static,
    F: Fn(TcpStream, S) -> Fut + Send + Copy + 'static,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let state = state.clone();
            tokio::spawn(async move {
                let _ = serve(sock, state).await;
            });
        }
    });
}

async fn read_request(sock: &mut TcpStream) -> Option<Request> {
    sock.set_nodelay(true).ok()?;
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

/// A non-2xx answer with a JSON `body` (and a `Retry-After`, when given).
pub(crate) async fn write_status(
    sock: &mut TcpStream,
    status: u16,
    retry_after: Option<&str>,
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(r) = retry_after {
        head.push_str(&format!("Retry-After: {r}\r\n"));
    }
    head.push_str("\r\n");
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body.as_bytes()).await
}

/// The head of a `200` event stream of `content_type`.
pub(crate) async fn write_stream_head(
    sock: &mut TcpStream,
    content_type: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    );
    sock.write_all(head.as_bytes()).await
}

/// Writes `frame` in pieces of 5 bytes; `false` when the peer is gone.
pub(crate) async fn write_pieces(sock: &mut TcpStream, frame: &[u8]) -> bool {
    for piece in frame.chunks(5) {
        if sock.write_all(piece).await.is_err() {
            return false;
        }
    }
    true
}
