//! The memory `agui serve` (a child process, loopback) holds for clients that ask for a
//! large CopilotKit thread's history and never read the answer: a file of its own
//! because it measures the server process's resident memory. A thread of some 28 MB
//! (eight runs, each recording a 3.5 MB user message) is built through real runs; then
//! six clients send `GET /copilotkit/threads/{id}/events` (or `/messages`) and read
//! nothing. `/events` streams the stored text in bounded chunks, so the server's
//! resident memory grows by a few chunks per client, not by the history per client;
//! `/messages` holds the thread's reduced messages per client, counted in the memory
//! budget, so the clients beyond it are refused with `503` `memory_budget`.

#[path = "it/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{spawn_serve, status_kib, Served};

/// Runs in the thread, each recording one user message of [`MESSAGE`] bytes.
const RUNS: usize = 8;
/// One user message's text (the request body stays under the 4 MiB limit).
const MESSAGE: usize = 3_500_000;
/// Clients that ask and never read.
const READERS: usize = 6;

/// Sends `method path` with `body` and reads the whole answer.
fn request(addr: &str, method: &str, path: &str, body: &str) -> String {
    let mut s = send(addr, method, path, body);
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Sends `method path` with `body`; the answer is left unread.
fn send(addr: &str, method: &str, path: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body.as_bytes()).unwrap();
    s
}

/// A server whose thread `big` holds [`RUNS`] runs; returns it and the length of the
/// `/events` answer's body.
fn server_with_history(args: &[&str]) -> (Served, usize) {
    let mut all = vec!["--delay-ms", "0"];
    all.extend_from_slice(args);
    let served = spawn_serve(&[], &all, &[("AGUI_LOG", "warn")]);
    for i in 0..RUNS {
        let text = "x".repeat(MESSAGE);
        let body = format!(
            r#"{{"threadId":"big","runId":"r{i}","messages":[{{"id":"m{i}","role":"user","content":"{text}"}}]}}"#
        );
        let reply = request(
            &served.addr,
            "POST",
            "/copilotkit/agent/agentic_chat/run",
            &body,
        );
        assert!(
            reply.starts_with("HTTP/1.1 200") && reply.contains("RUN_FINISHED"),
            "{:.300}",
            reply
        );
    }
    let mut s = send(&served.addr, "GET", "/copilotkit/threads/big/events", "");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut events = Vec::new();
    s.read_to_end(&mut events).unwrap();
    let text = String::from_utf8_lossy(&events[..events.len().min(200)]).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let length = events.len();
    (served, length)
}

/// The server's resident memory once it stops growing (unchanged for a second, or
/// after 20 s).
fn settled_rss_kib(pid: u32) -> u64 {
    let start = Instant::now();
    let mut last = status_kib(pid, "VmRSS:");
    let mut steady_since = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
        let now = status_kib(pid, "VmRSS:");
        if now.abs_diff(last) > 256 {
            steady_since = Instant::now();
        } else if steady_since.elapsed() > Duration::from_secs(1) {
            return now;
        }
        last = now;
    }
    last
}

/// The status line of the answer on `s` (its first bytes only are read).
fn status_of(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head).into_owned()
}

#[test]
fn clients_that_never_read_a_threads_events_hold_a_few_chunks_each() {
    let (served, history) = server_with_history(&[]);
    let pid = served.child.id();
    let before = settled_rss_kib(pid);
    let mut idle: Vec<TcpStream> = (0..READERS)
        .map(|_| send(&served.addr, "GET", "/copilotkit/threads/big/events", ""))
        .collect();
    let after = settled_rss_kib(pid);
    let growth = after.saturating_sub(before);
    for s in &mut idle {
        assert_eq!(status_of(s), "HTTP/1.1 200");
    }
    eprintln!(
        "/events: history {} KiB, {READERS} clients that do not read: +{growth} KiB resident ({before} → {after} KiB)",
        history / 1024
    );
    // Each client pins what hyper buffers ahead of the socket (a few 64 KiB chunks);
    // a copy of the history per client would be 6 × 27,000 KiB.
    let bound = READERS as u64 * 1024 + 16 * 1024;
    assert!(
        growth < bound,
        "+{growth} KiB for {READERS} clients (bound {bound} KiB; the history is {} KiB)",
        history / 1024
    );
    drop(idle);
}

#[test]
fn clients_that_never_read_a_threads_messages_are_bounded_by_the_memory_budget() {
    // Each read is counted at 1.5 times the history's text (some 41 MB here): two fit.
    const BUDGET_MIB: u64 = 100;
    let (served, history) = server_with_history(&["--memory-budget", "100"]);
    let pid = served.child.id();
    let before = settled_rss_kib(pid);
    let mut idle: Vec<TcpStream> = (0..READERS)
        .map(|_| send(&served.addr, "GET", "/copilotkit/threads/big/messages", ""))
        .collect();
    let after = settled_rss_kib(pid);
    let growth = after.saturating_sub(before);
    let statuses: Vec<String> = idle.iter_mut().map(status_of).collect();
    let admitted = statuses.iter().filter(|s| *s == "HTTP/1.1 200").count();
    let refused = statuses.iter().filter(|s| *s == "HTTP/1.1 503").count();
    eprintln!(
        "/messages: history {} KiB, {READERS} clients that do not read, budget {BUDGET_MIB} MiB: {admitted} answered, {refused} refused, +{growth} KiB resident ({before} → {after} KiB)",
        history / 1024
    );
    assert!((2..READERS).contains(&admitted), "{statuses:?}");
    assert_eq!(admitted + refused, READERS, "{statuses:?}");
    // What the admitted ones hold is within the budget (plus what the allocator keeps).
    let bound = BUDGET_MIB * 1024 + 16 * 1024;
    assert!(
        growth < bound,
        "+{growth} KiB for {READERS} clients (bound {bound} KiB)"
    );
    drop(idle);
    // Once they are gone, their budget is free again: a client that reads gets it all.
    std::thread::sleep(Duration::from_millis(500));
    let whole = request(&served.addr, "GET", "/copilotkit/threads/big/messages", "");
    assert!(whole.starts_with("HTTP/1.1 200"), "{:.300}", whole);
    assert_eq!(whole.matches(r#""role":"user""#).count(), RUNS);
}
