//! Listeners that answer with redirects, and record every request they get with its
//! headers: a stand-in for an endpoint that sends its caller elsewhere, and for the
//! foreign host it sends it to (bound on `127.0.0.2`, another address of the Linux
//! loopback, so that it is another origin than `127.0.0.1`).
//!
//! Each listener runs on a thread of its own with blocking sockets, so that a test may
//! use it from async code or while it waits for a child process (the `agui` binary).
//! One request per connection (`Connection: close`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// One request a [`Listener`] got.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// Every header, its name in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body (as long as its `Content-Length`).
    pub body: Vec<u8>,
}

impl Seen {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What a listener answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A redirect (`status` 301, 302, 303, 307 or 308) to `location`.
    Redirect {
        /// The status.
        status: u16,
        /// The `Location` header.
        location: String,
    },
    /// `200` with this `Content-Type` and body.
    Ok {
        /// The `Content-Type`.
        content_type: &'static str,
        /// The body.
        body: String,
    },
}

impl Reply {
    /// A `307` to `location`.
    pub fn temporary(location: impl Into<String>) -> Reply {
        Reply::Redirect {
            status: 307,
            location: location.into(),
        }
    }

    /// A whole run as SSE answering the `RunAgentInput` in `seen`'s body (its thread and
    /// run ids echoed; `t`/`r` when the body is not one): `RUN_STARTED`, one text
    /// message saying `hello`, `RUN_FINISHED`.
    pub fn run(seen: &Seen) -> Reply {
        let input: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
        let thread = input["threadId"].as_str().unwrap_or("t");
        let run = input["runId"].as_str().unwrap_or("r");
        let events = [
            json!({"type": "RUN_STARTED", "threadId": thread, "runId": run}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hello"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
            json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run}),
        ];
        Reply::Ok {
            content_type: "text/event-stream",
            body: events.iter().map(|e| format!("data: {e}\n\n")).collect(),
        }
    }
}

type Answer = dyn Fn(usize, &Seen) -> Reply + Send + Sync;

/// A listener on `ip`, port 0, answering its `n`-th request (0-based) as the closure
/// says; stopped when dropped.
pub struct Listener {
    /// Where it listens.
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Listener {
    /// Starts a listener on `ip` (`127.0.0.1`, `127.0.0.2`, …).
    pub fn start(ip: &str, answer: impl Fn(usize, &Seen) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind((ip, 0)).expect("bind a loopback listener");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("its address");
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let (s, st) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let (s, answer) = (s.clone(), answer.clone());
                        std::thread::spawn(move || serve(sock, &s, &*answer));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Listener { addr, seen, stop }
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many requests received so far carried header `name` with a value holding
    /// `needle`.
    pub fn carrying(&self, name: &str, needle: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.header(name).is_some_and(|v| v.contains(needle)))
            .count()
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// An endpoint on `127.0.0.1` that answers `307` to a foreign host on `127.0.0.2`,
/// which answers `307` to itself `hops` times, then a run ([`Reply::run`]): the chain
/// a redirect to another origin makes. Returns `(home, foreign)`; the endpoint's URL is
/// `home.url("/agent")`.
pub fn cross_origin_chain(hops: usize) -> (Listener, Listener) {
    let foreign = Listener::start("127.0.0.2", move |n, seen| {
        if n < hops {
            Reply::temporary(format!("/hop/{}", n + 1))
        } else {
            Reply::run(seen)
        }
    });
    let target = foreign.url("/hop/0");
    let home = Listener::start("127.0.0.1", move |_, _| Reply::temporary(target.clone()));
    (home, foreign)
}

fn serve(mut sock: TcpStream, seen: &Mutex<Vec<Seen>>, answer: &Answer) {
    let _ = sock.set_nonblocking(false);
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_request(&mut sock) else {
        return;
    };
    let n = {
        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.push(request.clone());
        seen.len() - 1
    };
    let response = match answer(n, &request) {
        Reply::Redirect { status, location } => format!(
            "HTTP/1.1 {status} Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Reply::Ok { content_type, body } => format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    };
    let _ = sock.write_all(response.as_bytes());
    let _ = sock.flush();
}

fn read_request(sock: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = sock.read(&mut tmp).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > 1 << 20 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        })
        .collect();
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(64 << 20);
    let start = head_end + 4;
    while buf.len() < start + len {
        let n = sock.read(&mut tmp).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    Some(Seen {
        method,
        path,
        headers,
        body: buf[start..start + len].to_vec(),
    })
}
