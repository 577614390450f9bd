//! An HTTP/1.1 client over a raw socket: the test decides when it reads and when it
//! goes away (a dropped [`Client`] closes the connection), and sees the bytes as sent
//! (chunked transfer decoded, SSE blocks and comments as they are).

use std::net::SocketAddr;
use std::time::Duration;

use agui_sdk_core::Event;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response being read.
#[derive(Debug)]
pub struct Client {
    sock: TcpStream,
    /// The response's status code (0 when the status line has none).
    pub status: u16,
    /// The response's headers, in order, names as sent.
    pub headers: Vec<(String, String)>,
    chunked: bool,
    raw: Vec<u8>,
    /// Decoded body bytes not yet consumed as SSE blocks.
    body: Vec<u8>,
    /// Every decoded body byte so far.
    pub all: Vec<u8>,
    eof: bool,
}

impl Client {
    /// Sends a request and reads the response head.
    pub async fn request(
        addr: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Client {
        let mut sock = TcpStream::connect(addr)
            .await
            .expect("the server accepts the connection");
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        sock.write_all(req.as_bytes())
            .await
            .expect("the request head is sent");
        sock.write_all(body)
            .await
            .expect("the request body is sent");
        let mut c = Client {
            sock,
            status: 0,
            headers: Vec::new(),
            chunked: false,
            raw: Vec::new(),
            body: Vec::new(),
            all: Vec::new(),
            eof: false,
        };
        c.read_head().await;
        c
    }

    /// POSTs a JSON run input (with `Content-Type: application/json`).
    pub async fn post_json(addr: SocketAddr, path: &str, body: &serde_json::Value) -> Client {
        let bytes = serde_json::to_vec(body).expect("a JSON value serializes");
        Client::request(
            addr,
            "POST",
            path,
            &[("Content-Type", "application/json")],
            &bytes,
        )
        .await
    }

    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    async fn fill(&mut self) -> bool {
        let mut buf = [0u8; 8192];
        match self.sock.read(&mut buf).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.raw.extend_from_slice(&buf[..n]);
                true
            }
        }
    }

    async fn read_head(&mut self) {
        loop {
            if let Some(pos) = find(&self.raw, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.raw[..pos]).to_string();
                self.raw.drain(..pos + 4);
                let mut lines = head.split("\r\n");
                let status_line = lines.next().unwrap_or_default();
                self.status = status_line
                    .split(' ')
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                for l in lines {
                    if let Some((k, v)) = l.split_once(':') {
                        self.headers
                            .push((k.trim().to_owned(), v.trim().to_owned()));
                    }
                }
                self.chunked = self
                    .header("transfer-encoding")
                    .is_some_and(|v| v.contains("chunked"));
                return;
            }
            if !self.fill().await {
                panic!("connection closed before the response head");
            }
        }
    }

    /// Decodes what is buffered into `body`; returns whether the body is complete.
    fn decode(&mut self) -> bool {
        if !self.chunked {
            let taken: Vec<u8> = self.raw.drain(..).collect();
            self.all.extend_from_slice(&taken);
            self.body.extend_from_slice(&taken);
            return false;
        }
        loop {
            let Some(eol) = find(&self.raw, b"\r\n") else {
                return false;
            };
            let size_text = String::from_utf8_lossy(&self.raw[..eol]).to_string();
            let size =
                usize::from_str_radix(size_text.split(';').next().unwrap_or_default().trim(), 16)
                    .expect("chunk size");
            if size == 0 {
                return true;
            }
            if self.raw.len() < eol + 2 + size + 2 {
                return false;
            }
            let data: Vec<u8> = self.raw[eol + 2..eol + 2 + size].to_vec();
            self.raw.drain(..eol + 2 + size + 2);
            self.all.extend_from_slice(&data);
            self.body.extend_from_slice(&data);
        }
    }

    /// The next SSE block (comments included), or `None` at the end of the body.
    pub async fn next_block(&mut self) -> Option<String> {
        loop {
            if let Some(pos) = find(&self.body, b"\n\n") {
                let block =
                    String::from_utf8(self.body[..pos].to_vec()).expect("an SSE block is UTF-8");
                self.body.drain(..pos + 2);
                return Some(block);
            }
            if self.eof {
                return None;
            }
            let before = self.body.len();
            if self.decode() {
                self.eof = true;
                continue;
            }
            if self.body.len() > before {
                continue;
            }
            if !self.fill().await {
                self.decode();
                self.eof = true;
            }
        }
    }

    /// The next event (keep-alive comments skipped), or `None` at the end.
    pub async fn next_event(&mut self) -> Option<Event> {
        loop {
            let block = self.next_block().await?;
            // `id:` and `retry:` lines (resumable streams) may precede the data.
            let data = block.lines().find_map(|l| l.strip_prefix("data: "));
            if let Some(data) = data {
                return Some(Event::from_json_str(data).expect("a valid event"));
            }
            assert!(block.starts_with(':'), "unexpected SSE block {block:?}");
        }
    }

    /// The next event, failing the test after `secs` seconds.
    pub async fn next_event_within(&mut self, secs: u64) -> Option<Event> {
        tokio::time::timeout(Duration::from_secs(secs), self.next_event())
            .await
            .expect("an event in time")
    }

    /// Every remaining event.
    pub async fn events(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = tokio::time::timeout(Duration::from_secs(10), self.next_event())
            .await
            .expect("the stream ends in time")
        {
            out.push(e);
        }
        out
    }

    /// The whole remaining body as bytes.
    pub async fn body(&mut self) -> Vec<u8> {
        loop {
            if self.decode() {
                break;
            }
            if !self.fill().await {
                self.decode();
                break;
            }
        }
        std::mem::take(&mut self.body)
    }

    /// The whole body as JSON.
    pub async fn json(&mut self) -> serde_json::Value {
        let b = self.body().await;
        serde_json::from_slice(&b)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&b)))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
