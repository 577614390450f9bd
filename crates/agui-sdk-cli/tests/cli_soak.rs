//! A bounded soak of `agui serve` (a child process, loopback): two rounds of 5,000
//! connections each, mixing normal runs, abrupt disconnects mid-stream, slowloris heads,
//! oversized bodies and invalid JSON on the agent routes, and on the CopilotKit
//! runtime's runs abandoned mid-stream, `connect` replays never read, runs on a busy
//! thread and oversized single-route envelopes. After each round the server's memory returns within 20 % of
//! where it started (after one request of each kind) and its descriptors to their
//! baseline; the second round leaves memory at most 10 % above where the first left it
//! (what stays is the allocator's, not a leak), and a normal run still succeeds.

#[path = "it/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{spawn_serve, status_kib, Served};

fn serve() -> Served {
    spawn_serve(
        &[],
        &["--delay-ms", "0", "--store", "off"],
        &[("AGUI_LOG", "warn")],
    )
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

const INPUT: &str =
    r#"{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hello there"}]}"#;

fn request(addr: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = write!(
        s,
        "POST /agentic_chat HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s
}

fn copilotkit(addr: &str, path: &str, body: &str) -> Option<TcpStream> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(15))).ok()?;
    write!(
        s,
        "POST /copilotkit{path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    Some(s)
}

/// A CopilotKit run body on one of a few threads (so that what the soak stores stays
/// small: the runs on a busy thread are refused).
fn ck_input(i: usize) -> String {
    format!(
        r#"{{"threadId":"soak-{}","runId":"r{i}","messages":[{{"id":"u{i}","role":"user","content":"hello"}}],"state":{{}},"tools":[],"context":[],"forwardedProps":{{}}}}"#,
        i % 8
    )
}

fn normal_run(addr: &str) -> bool {
    let mut s = request(addr, INPUT);
    let mut out = String::new();
    s.read_to_string(&mut out).is_ok() && out.contains("RUN_FINISHED")
}

/// One connection of kind `i % 8`.
fn one(addr: &str, i: usize) {
    match i % 8 {
        0 => {
            normal_run(addr);
        }
        1 => {
            // Abrupt disconnect mid-stream.
            let mut s = request(addr, INPUT);
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf);
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        2 => {
            // A slowloris head, abandoned.
            if let Ok(mut s) = TcpStream::connect(addr) {
                let _ = s.write_all(b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\nX-A: ");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        4 => {
            // A CopilotKit run abandoned mid-stream.
            if let Some(mut s) = copilotkit(addr, "/agent/agentic_chat/run", &ck_input(i)) {
                let mut buf = [0u8; 64];
                let _ = s.read(&mut buf);
            }
        }
        5 => {
            // A thread's replay, never read.
            let _ = copilotkit(addr, "/agent/agentic_chat/connect", &ck_input(i));
        }
        6 => {
            // A single-route envelope past the body limit, then a hang-up.
            if let Ok(mut s) = TcpStream::connect(addr) {
                let _ = write!(s, "POST /copilotkit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40000000\r\n\r\n{{\"method\":\"agent/run\",\"body\":\"");
                let _ = s.write_all(&[b'a'; 65536]);
            }
        }
        7 => {
            // Invalid JSON, read to its end.
            let mut s = request(addr, "{\"threadId\": [1, 2,");
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
        }
        _ => {
            // A body over the limit, announced.
            if let Ok(mut s) = TcpStream::connect(addr) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let _ = write!(s, "POST /agentic_chat HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{{");
                let mut out = String::new();
                let _ = s.read_to_string(&mut out);
            }
        }
    }
}

/// What one round of the soak left: the server's resident memory and descriptors once
/// it settled, and its peak.
struct Round {
    rss: u64,
    peak: u64,
    fds: usize,
}

/// One round: 300 slowloris heads held open for the whole round, and `CONNECTIONS`
/// mixed connections from 16 threads; then waits until the server has closed the held
/// heads and given back what memory it will (or a deadline passes).
fn round(srv: &Served, warm_rss: u64, warm_fds: usize) -> Round {
    const CONNECTIONS: usize = 5_000;
    let pid = srv.child.id();
    // The server must close the held heads itself (after its 10 s head timeout) while
    // serving everything else.
    let held: Vec<TcpStream> = (0..300)
        .filter_map(|_| {
            let mut s = TcpStream::connect(&srv.addr).ok()?;
            s.write_all(b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\nX-Slow: a")
                .ok()?;
            Some(s)
        })
        .collect();
    assert_eq!(held.len(), 300);

    let t0 = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|w| {
            let addr = srv.addr.clone();
            std::thread::spawn(move || {
                for i in (w..CONNECTIONS).step_by(16) {
                    one(&addr, i);
                }
            })
        })
        .collect();
    let mut peak = 0;
    while workers.iter().any(|w| !w.is_finished()) {
        peak = peak.max(status_kib(pid, "VmRSS:"));
        std::thread::sleep(Duration::from_millis(100));
    }
    for w in workers {
        w.join().unwrap();
    }
    let took = t0.elapsed();

    // The held heads close after the head timeout (10 s); then everything is back.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fds(pid) > warm_fds + 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
    }
    // The server gives freed memory back when it has some (it looks every 2 s).
    let deadline = Instant::now() + Duration::from_secs(10);
    while status_kib(pid, "VmRSS:") > warm_rss + warm_rss / 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
    }
    // The server closed the held heads: each reads end of file.
    let mut closed = 0;
    for mut s in held {
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = [0u8; 16];
        if matches!(s.read(&mut buf), Ok(0) | Err(_)) {
            closed += 1;
        }
    }
    assert_eq!(closed, 300, "the server closed every held slowloris head");
    let r = Round {
        rss: status_kib(pid, "VmRSS:"),
        peak,
        fds: fds(pid),
    };
    println!(
        "soak round: {CONNECTIONS} connections in {took:?}; RSS peak {} KiB, after {} KiB; fds after {}",
        r.peak, r.rss, r.fds
    );
    r
}

#[test]
fn ten_thousand_mixed_connections_leave_the_server_as_it_was() {
    let srv = serve();
    let pid = srv.child.id();
    // Where it starts: one request of each kind served.
    assert!(normal_run(&srv.addr));
    for i in 0..8 {
        one(&srv.addr, i);
    }
    std::thread::sleep(Duration::from_millis(500));
    let warm_rss = status_kib(pid, "VmRSS:");
    let warm_fds = fds(pid);
    println!("soak: RSS start {warm_rss} KiB; fds start {warm_fds}");

    // Two identical rounds: what the first leaves above the start is the allocator's
    // high-water mark, not a leak, when the second leaves no more than it did.
    let first = round(&srv, warm_rss, warm_fds);
    let second = round(&srv, warm_rss, warm_fds);
    for (n, r) in [(1, &first), (2, &second)] {
        assert!(
            r.fds <= warm_fds + 2,
            "round {n}: descriptors back to baseline: {warm_fds} -> {}",
            r.fds
        );
        assert!(
            r.rss <= warm_rss + warm_rss / 5,
            "round {n}: memory back within 20 % of its start: {warm_rss} -> {} KiB (peak {} KiB)",
            r.rss,
            r.peak
        );
    }
    assert!(
        second.rss <= first.rss + first.rss / 10,
        "a second identical round raises memory by at most 10 % over the first's end: {} -> {} KiB",
        first.rss,
        second.rss
    );
    assert!(normal_run(&srv.addr), "a normal run still succeeds");
}
