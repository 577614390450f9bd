//! `agui run` against agents written as the attack: a real HTTP server on loopback
//! streaming a valid run that never ends. The client must stop at its ceilings with an
//! error naming the ceiling, the event and the limit, its memory flat however long the
//! stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::status_kib;

const MIB: u64 = 1 << 20;

/// Reads a request's head and its `Content-Length` bytes of body.
fn read_request(sock: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut reader = BufReader::new(sock.try_clone()?);
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(Vec::new());
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    Ok(body)
}

/// Where a hostile body goes: each call writes bytes to the client.
pub(crate) type Out<'a> = &'a mut dyn FnMut(&[u8]) -> std::io::Result<()>;

/// A server on loopback answering every request with `text/event-stream` whose body
/// `write` produces from the request's JSON body (`null` when it is not JSON), until it
/// returns an error (the client went away); the connection is closed after it. Returns
/// the URL and the bytes of body written so far, in all.
pub(crate) fn hostile<F>(write: F) -> (String, Arc<AtomicU64>)
where
    F: Fn(&serde_json::Value, Out<'_>) -> std::io::Result<()> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/agent", listener.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let write = Arc::new(write);
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { continue };
            let write = write.clone();
            let counter = counter.clone();
            std::thread::spawn(move || {
                let Ok(request) = read_request(&mut sock) else {
                    return;
                };
                let input = serde_json::from_slice(&request).unwrap_or_default();
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                if sock.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let mut out = |bytes: &[u8]| {
                    sock.write_all(bytes)?;
                    counter.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    Ok(())
                };
                let _ = write(&input, &mut out);
            });
        }
    });
    (url, sent)
}

/// An SSE frame of `json`.
pub(crate) fn frame(json: &str) -> Vec<u8> {
    format!("data: {json}\n\n").into_bytes()
}

/// `RUN_STARTED` on the thread and run `input` names.
fn started(input: &serde_json::Value) -> Vec<u8> {
    frame(
        &serde_json::json!({
            "type": "RUN_STARTED",
            "threadId": input["threadId"].as_str().unwrap_or("t"),
            "runId": input["runId"].as_str().unwrap_or("r"),
        })
        .to_string(),
    )
}

/// What `agui ARGS` did: its exit code, standard error, and its peak resident memory in
/// KiB (read from `/proc` while it ran, every 10 ms).
pub(crate) struct Ran {
    pub code: Option<i32>,
    pub stderr: String,
    /// Standard output, when it was piped.
    pub stdout: String,
    pub peak_kib: u64,
    pub elapsed: Duration,
}

/// Runs `agui ARGS` with standard output into `stdout`, within `limit` (killed past it).
pub(crate) fn agui_watched(args: &[&str], stdout: Stdio, limit: Duration) -> Ran {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("agui runs");
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let mut out = child.stdout.take();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(out) = &mut out {
            let _ = out.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    });
    let pid = child.id();
    let mut peak = 0;
    let status = loop {
        peak = peak.max(status_kib(pid, "VmHWM:"));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "agui {args:?} still running after {limit:?} (peak {} KiB)",
                peak
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ran {
        code: status.code(),
        stderr: reader.join().unwrap(),
        stdout: out_reader.join().unwrap(),
        peak_kib: peak,
        elapsed: start.elapsed(),
    }
}

/// A never-ending `TEXT_MESSAGE_CONTENT` stream, in 64 KiB deltas.
fn endless_message(input: &serde_json::Value, out: Out<'_>) -> std::io::Result<()> {
    out(&started(input))?;
    out(&frame(
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#,
    ))?;
    let delta = frame(&format!(
        r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{}"}}"#,
        "a".repeat(64 << 10)
    ));
    loop {
        out(&delta)?;
    }
}

/// The bound on the client's peak memory for a ceiling of `ceiling` bytes.
fn memory_bound_kib(ceiling: u64) -> u64 {
    (ceiling * 3 + 64 * MIB) / 1024
}

#[test]
fn run_stops_an_endless_message_at_its_ceiling_with_flat_memory() {
    let (url, sent) = hostile(endless_message);
    let ran = agui_watched(
        &["run", &url, "--message", "hi"],
        Stdio::null(),
        Duration::from_secs(60),
    );
    let ceiling = 16 * MIB;
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("max_message_bytes")
            && ran.stderr.contains("--max-message-bytes")
            && ran.stderr.contains(&ceiling.to_string())
            && ran.stderr.contains("message \"m1\"")
            && ran.stderr.contains("at event "),
        "{}",
        ran.stderr
    );
    assert!(
        ran.peak_kib > 0 && ran.peak_kib < memory_bound_kib(ceiling),
        "peak {} KiB, bound {} KiB",
        ran.peak_kib,
        memory_bound_kib(ceiling)
    );
    // It stopped reading near the ceiling (the rest is what the socket buffers held).
    std::thread::sleep(Duration::from_millis(200));
    let sent = sent.load(Ordering::Relaxed);
    assert!(
        sent > ceiling && sent < 2 * ceiling,
        "{sent} bytes sent for a ceiling of {ceiling}"
    );
    eprintln!(
        "endless message: stopped after {sent} bytes sent, {:?}, peak RSS {} KiB",
        ran.elapsed, ran.peak_kib
    );
}

#[test]
fn run_json_into_a_file_stops_at_a_lower_message_ceiling() {
    let (url, _) = hostile(endless_message);
    let path = std::env::temp_dir().join(format!("agui-hostile-json-{}.jsonl", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let ceiling = 4 * MIB;
    let ran = agui_watched(
        &[
            "run",
            &url,
            "--json",
            "--message",
            "hi",
            "--max-message-bytes",
            &ceiling.to_string(),
        ],
        Stdio::from(file),
        Duration::from_secs(60),
    );
    let written = std::fs::metadata(&path).unwrap().len();
    let _ = std::fs::remove_file(&path);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("max_message_bytes of 4194304 bytes"),
        "{}",
        ran.stderr
    );
    // The events printed, then the final line with the message as applied: about
    // twice the ceiling, not the stream.
    assert!(written < 3 * ceiling, "{written} bytes written");
    assert!(
        ran.peak_kib < memory_bound_kib(ceiling),
        "peak {} KiB",
        ran.peak_kib
    );
}

#[test]
fn run_stops_endless_tool_arguments_at_their_ceiling() {
    let (url, _) = hostile(|input, out| {
        out(&started(input))?;
        out(&frame(
            r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}"#,
        ))?;
        let delta = frame(&format!(
            r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{}"}}"#,
            "1".repeat(16 << 10)
        ));
        loop {
            out(&delta)?;
        }
    });
    let ran = agui_watched(
        &["run", &url, "--max-tool-args-bytes", "1048576"],
        Stdio::null(),
        Duration::from_secs(60),
    );
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("tool call \"c1\"'s arguments")
            && ran.stderr.contains("max_tool_args_bytes of 1048576 bytes")
            && ran.stderr.contains("--max-tool-args-bytes"),
        "{}",
        ran.stderr
    );
    // 64 deltas of 16 KiB make the ceiling; the 65th passes it, after RUN_STARTED and
    // TOOL_CALL_START: event index 66.
    assert!(ran.stderr.contains("at event 66"), "{}", ran.stderr);
}

#[test]
fn run_stops_an_endless_run_of_small_messages_at_the_run_ceiling() {
    let (url, sent) = hostile(|input, out| {
        out(&started(input))?;
        let text = "b".repeat(4 << 10);
        for i in 0u64.. {
            let mut batch = frame(&format!(
                r#"{{"type":"TEXT_MESSAGE_START","messageId":"m{i}","role":"assistant"}}"#
            ));
            batch.extend(frame(&format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m{i}","delta":"{text}"}}"#
            )));
            batch.extend(frame(&format!(
                r#"{{"type":"TEXT_MESSAGE_END","messageId":"m{i}"}}"#
            )));
            out(&batch)?;
        }
        Ok(())
    });
    let ceiling = 32 * MIB;
    let ran = agui_watched(
        &["run", &url, "--max-run-bytes", &ceiling.to_string()],
        Stdio::null(),
        Duration::from_secs(60),
    );
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("the run's stream")
            && ran.stderr.contains("max_run_bytes of 33554432 bytes")
            && ran.stderr.contains("--max-run-bytes"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.peak_kib < memory_bound_kib(ceiling),
        "peak {} KiB",
        ran.peak_kib
    );
    std::thread::sleep(Duration::from_millis(200));
    let sent = sent.load(Ordering::Relaxed);
    assert!(sent < 2 * ceiling, "{sent} bytes sent");
}

/// `agui serve ARGS…` on a free port, its standard error read as raw bytes. Returns the
/// child, its address and the bytes logged so far.
fn serve_raw(args: &[&str]) -> (std::process::Child, String, Arc<std::sync::Mutex<Vec<u8>>>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agui serve runs");
    let mut err = child.stderr.take().unwrap();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let start = Instant::now();
    let addr = loop {
        let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
        if let Some(rest) = text.split("agui: listening on http://").nth(1) {
            if let Some(addr) = rest.split('\n').next().filter(|_| rest.contains('\n')) {
                break addr.trim().to_owned();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "agui serve did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    (child, addr, log)
}

#[test]
fn serve_logs_a_hostile_thread_id_escaped_on_one_line() {
    let (mut child, addr, log) = serve_raw(&[]);
    let thread = "t\u{1b}]0;pwned\u{7}\u{1b}[2J\nFORGED 2026-01-01 INFO fake line\u{202e}";
    let run = "r\u{9b}31m\r\nFORGED run";
    let body = serde_json::json!({
        "threadId": thread,
        "runId": run,
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "state": {}, "tools": [], "context": [], "forwardedProps": {}
    })
    .to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST /agentic_chat HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.contains("RUN_FINISHED"), "{answer}");
    // The run's two lines (started, ended) are logged by then or soon after.
    let start = Instant::now();
    let text = loop {
        let bytes = log.lock().unwrap().clone();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if text.matches("run_id=").count() >= 2 || start.elapsed() > Duration::from_secs(10) {
            break (bytes, text);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    let (bytes, text) = text;
    assert!(text.matches("run_id=").count() >= 2, "{text}");
    for b in [0x1b, 0x07, 0x9b, b'\r'] {
        assert!(!bytes.contains(&b), "byte {b:#x} logged raw: {text:?}");
    }
    assert!(
        !text.contains('\u{202e}') && !text.contains('\u{9b}'),
        "{text:?}"
    );
    for line in text.lines() {
        assert!(!line.starts_with("FORGED"), "a forged line: {line:?}");
    }
    let escaped =
        r"thread_id=t\u{1b}]0;pwned\u{7}\u{1b}[2J\nFORGED 2026-01-01 INFO fake line\u{202e}";
    assert!(text.contains(escaped), "{text}");
    assert!(text.contains(r"run_id=r\u{9b}31m\r\nFORGED run"), "{text}");
}

/// What a hostile agent puts in every string a person reads: a terminal title, a
/// screen clear, a bell, a C1 control sequence introducer, a bidirectional override,
/// and a newline forging the check's summary line.
const NASTY: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}\n0 errors, 0 warnings: passed";

/// A JSON string literal of `s`.
fn js(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A run whose text, tool name, arguments and error all hold [`NASTY`].
fn hostile_run(input: &serde_json::Value, out: Out<'_>) -> std::io::Result<()> {
    let n = js(NASTY);
    let mut body = started(input);
    for e in [
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#.to_owned(),
        format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":{n}}}"#),
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m1"}"#.to_owned(),
        format!(r#"{{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":{n}}}"#),
        format!(r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":{n}}}"#),
        r#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#.to_owned(),
        format!(r#"{{"type":"STEP_STARTED","stepName":{n}}}"#),
        format!(r#"{{"type":"RUN_ERROR","message":{n},"code":{n}}}"#),
    ] {
        body.extend(frame(&e));
    }
    out(&body)
}

/// Asserts `bytes` hold no byte a terminal acts on but a newline, no C1 control and no
/// bidirectional override, and (when `one_line_each`: what the agent sent never spans
/// lines) no line forged to begin with the check's summary.
fn assert_inert(what: &str, bytes: &[u8], one_line_each: bool) {
    let text = String::from_utf8_lossy(bytes);
    for b in bytes {
        assert!(
            *b >= 0x20 && *b != 0x7f || *b == b'\n',
            "{what}: byte {b:#x} written raw: {text:?}"
        );
    }
    assert!(
        !text.contains('\u{9b}') && !text.contains('\u{202e}'),
        "{what}: {text:?}"
    );
    assert!(
        !one_line_each || !text.lines().any(|l| l.starts_with("0 errors, 0 warnings")),
        "{what}: a forged line: {text}"
    );
}

#[test]
fn run_prints_a_hostile_agent_escaped() {
    let (url, _) = hostile(hostile_run);
    let out = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["run", &url, "--message", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // A message's text keeps its own line breaks.
    assert_inert("stdout", &out.stdout, false);
    assert_inert("stderr", &out.stderr, true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The text keeps its own line break; everything else is spelled out.
    assert!(
        stdout.contains("agent: \\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m\\u{202e}\n0 errors"),
        "{stdout}"
    );
    assert!(
        stdout.contains("→ \\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m\\u{202e}\\n0 errors"),
        "{stdout}"
    );
    assert!(
        stdout.contains("run error: \\u{1b}]0;pwned\\u{7}"),
        "{stdout}"
    );
    assert!(
        stderr.contains("the run failed: \\u{1b}]0;pwned\\u{7}"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn check_reports_a_hostile_agent_escaped_one_line_per_finding() {
    let (url, _) = hostile(hostile_run);
    let out = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["check", &url, "--scenario", "chat", "--timeout", "5"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A run answered with RUN_ERROR is a warning, and so is its call of a tool nobody
    // offered: the check passes, and says so once.
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_inert("stdout", &out.stdout, true);
    assert_inert("stderr", &out.stderr, true);
    // Each finding is one line under its scenario: indented, with its rule.
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("agui check "), "{stdout}");
    assert_eq!(lines[1], "PASS chat", "{stdout}");
    assert_eq!(
        *lines.last().unwrap(),
        "0 errors, 2 warnings; 1 passed, 0 failed, 0 not exercised, 0 skipped: passed",
        "{stdout}"
    );
    assert_eq!(lines.len(), 5, "{stdout}");
    for l in &lines[2..lines.len() - 1] {
        assert!(
            l.starts_with("    error ") || l.starts_with("    warning "),
            "{stdout}"
        );
    }
    assert!(stdout.contains("\\u{1b}]0;pwned\\u{7}"), "{stdout}");
}

#[test]
fn check_against_a_dripping_agent_ends_within_its_deadlines() {
    // A valid start, then one event dripped a byte every 300 ms, never finished: no
    // read ever waits the timeout.
    let (url, _) = hostile(|input, out| {
        out(&started(input))?;
        loop {
            for b in br#"data: {"type":"TEXT_MESSAGE_START","messageId":"m1"}"# {
                out(&[*b])?;
                std::thread::sleep(Duration::from_millis(300));
            }
        }
    });
    let timeout = 1.0;
    // One scenario: the discovery's two timeouts, then at most the scenario deadline
    // (20 timeouts); its response is cut at 6.
    let bound = Duration::from_secs_f64(timeout * (2.0 + 20.0) + 5.0);
    let ran = agui_watched(
        &["check", &url, "--scenario", "chat", "--timeout", "1"],
        Stdio::piped(),
        bound,
    );
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.elapsed < Duration::from_secs_f64(timeout * 6.0 + 5.0),
        "{:?}",
        ran.elapsed
    );
    assert!(
        ran.stdout.contains(
            "error response [transport/stall]: the response did not end within 6 s of its request (the response deadline)"
        ),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("FAIL chat"), "{}", ran.stdout);
}
