//! `agui serve` end to end: the demo agents over HTTP, and graceful shutdown on SIGTERM.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `agui serve` on a free port; returns the child and its address.
fn serve(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agui runs");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("agui prints its address").unwrap();
        if let Some(rest) = line.strip_prefix("agui: listening on http://") {
            break rest.to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

fn post(addr: &str, path: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s
}

fn terminate(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn wait_exit(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("agui serve did not exit in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const INPUT: &str =
    r#"{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}]}"#;

#[test]
fn serve_runs_the_demo_agents_and_stops_on_sigterm() {
    let (mut child, addr) = serve(&["--delay-ms", "0"]);
    let mut out = String::new();
    post(&addr, "/agentic_chat", INPUT)
        .read_to_string(&mut out)
        .unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains("content-type: text/event-stream"), "{out}");
    assert!(out.contains(r#"data: {"type":"RUN_STARTED","threadId":"t","runId":"r""#));
    assert!(out.contains(r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#));

    let mut out = String::new();
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "GET /agents HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    s.read_to_string(&mut out).unwrap();
    for name in ["agentic_chat", "interrupt", "subagents", "reasoning"] {
        assert!(out.contains(&format!("\"name\":\"{name}\"")), "{out}");
    }

    terminate(&child);
    assert!(wait_exit(&mut child, 10).success());
}

#[test]
fn sigterm_gives_in_flight_runs_a_bounded_grace_then_run_error() {
    // With 300 ms between pieces the reply takes seconds; the grace is one second.
    let (mut child, addr) = serve(&["--delay-ms", "300", "--grace-secs", "1"]);
    let mut s = post(&addr, "/agentic_chat", INPUT);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("TEXT_MESSAGE_CONTENT") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "stream ended early");
        got.extend_from_slice(&buf[..n]);
    }
    let t0 = Instant::now();
    terminate(&child);
    s.read_to_end(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.contains(
            r#"{"type":"RUN_ERROR","message":"the server is shutting down","code":"shutdown"}"#
        ),
        "{text}"
    );
    assert!(!text.contains("RUN_FINISHED"));
    let elapsed = t0.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    assert!(wait_exit(&mut child, 10).success());
}

/// One byte of a request head kept the server from exiting on SIGTERM; now it exits
/// within the drain time, and a second signal ends a run still in its grace period at
/// once.
#[test]
fn shutdown_ends_with_partial_heads_open_and_a_second_signal_forces_it() {
    let (mut child, addr) = serve(&["--delay-ms", "0"]);
    let mut partial = TcpStream::connect(&addr).unwrap();
    partial.write_all(b"P").unwrap();
    let t0 = Instant::now();
    terminate(&child);
    wait_exit(&mut child, 15);
    assert!(t0.elapsed() < Duration::from_secs(13), "{:?}", t0.elapsed());
    drop(partial);

    // A slow run (about 20 s of pieces) in its grace period; the second SIGTERM ends it.
    let (mut child, addr) = serve(&["--delay-ms", "1000", "--grace-secs", "60"]);
    let mut run = post(&addr, "/agentic_chat", INPUT);
    let mut first = [0u8; 64];
    let _ = run.read(&mut first).unwrap();
    terminate(&child);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run has its grace period"
    );
    let t0 = Instant::now();
    terminate(&child);
    wait_exit(&mut child, 5);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
}

/// With no file descriptor left, `accept` fails; the server pauses, logs at most once a
/// second, and answers again as soon as descriptors free.
#[test]
fn descriptor_exhaustion_does_not_stop_the_server() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        println!("skipped descriptor_exhaustion_does_not_stop_the_server: no prlimit");
        return;
    }
    let srv = common::spawn_serve(&["prlimit", "--nofile=48:48"], &["--delay-ms", "0"], &[]);
    let (addr, log) = (srv.addr.clone(), srv.log.clone());
    // More connections than descriptors: the kernel queues them, accept fails.
    let idle: Vec<TcpStream> = (0..80)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    drop(idle);
    // As soon as descriptors free, a run succeeds.
    let t0 = Instant::now();
    let mut answered = false;
    while t0.elapsed() < Duration::from_secs(15) {
        let mut s = post(&addr, "/agentic_chat", INPUT);
        let mut body = String::new();
        if s.read_to_string(&mut body).is_ok() && body.contains("RUN_FINISHED") {
            answered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(answered, "the server answers again");
    let log = log.lock().unwrap().clone();
    let failures = log.matches("accept failed").count();
    assert!(failures >= 1, "accept did fail: {log}");
    assert!(failures <= 5, "logged at most once a second: {failures}");
}

#[test]
fn a_connection_holding_a_partial_request_does_not_hold_the_exit_past_the_grace() {
    let (mut child, addr) = serve(&["--grace-secs", "1"]);
    // One byte of a request head, then nothing: the server's head timeout is 10 s.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"P").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    terminate(&child);
    assert!(wait_exit(&mut child, 20).success());
    // The grace (1 s) and a second for the connections, with room for a slow machine;
    // before, the exit waited for the 10 s head timeout.
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "exited after {:?}",
        start.elapsed()
    );
}

#[test]
fn max_runs_refuses_the_run_beyond_it() {
    let (mut child, addr) = serve(&["--max-runs", "1", "--delay-ms", "2000"]);
    let mut first = post(&addr, "/agentic_chat", INPUT);
    let mut head = [0u8; 12];
    first.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    let mut second = post(&addr, "/agentic_chat", INPUT);
    let mut answer = String::new();
    second.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("too_many_runs"), "{answer}");
    drop(first);
    let _ = child.kill();
    let _ = child.wait();
}

/// A run that fails on the server is logged at `warn` at the default level, with the
/// error the client was sent.
#[test]
fn a_failed_run_is_logged_at_warn_by_default() {
    let srv = common::spawn_serve(&[], &["--store", "off"], &[]);
    let big = "x".repeat(70 * 1024);
    let body = format!(
        r#"{{"threadId":"t-fail","runId":"r-fail","messages":[],"state":{{"big":"{big}"}}}}"#
    );
    let mut s = post(&srv.addr, "/shared_state", &body);
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.contains("state_too_large"),
        "the client got the error: {out}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let line = loop {
        let log = srv.log.lock().unwrap().clone();
        if let Some(l) = log.lines().find(|l| l.contains("agent failed")) {
            break l.to_owned();
        }
        assert!(Instant::now() < deadline, "no failure logged: {log}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(line.contains(" WARN "), "logged at warn: {line}");
    assert!(
        line.contains("at most 65536 bytes"),
        "with its message: {line}"
    );
}
