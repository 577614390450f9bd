//! `agui decode --from sse|proto` and `agui encode --to sse|proto` end to end: the
//! reference's golden encodings in and out, and malformed input reported with the event
//! index and byte offset after the events before it.

use crate::common;

use common::{agui, fixture};

use std::process::Output;

fn read(path: &str) -> Vec<u8> {
    std::fs::read(fixture(path)).unwrap()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn golden_sse_decodes_and_encodes_byte_for_byte() {
    let out = agui(&["decode", "--from", "sse"], &read("events.sse"));
    ok(&out);
    assert_eq!(out.stdout, read("events.jsonl"));
    let out = agui(
        &[
            "encode",
            "--to",
            "sse",
            fixture("events.jsonl").to_str().unwrap(),
        ],
        b"",
    );
    ok(&out);
    assert_eq!(out.stdout, read("events.sse"));
}

#[test]
fn golden_protobuf_decodes_and_encodes_byte_for_byte() {
    let out = agui(
        &[
            "decode",
            "--from",
            "proto",
            fixture("events.pb").to_str().unwrap(),
        ],
        b"",
    );
    ok(&out);
    // What the reference decoded, in our canonical key order.
    let want: Vec<String> = String::from_utf8(read("events.pb.decoded.jsonl"))
        .unwrap()
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            agui_sdk_core::Event::from_json_str(l)
                .unwrap()
                .to_json_string()
        })
        .collect();
    let got: Vec<&str> = std::str::from_utf8(&out.stdout)
        .unwrap()
        .split('\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(got, want);
    let out = agui(&["encode", "--to", "proto"], &read("events.jsonl"));
    ok(&out);
    assert_eq!(out.stdout, read("events.pb"));
}

#[test]
fn truncated_sse_writes_the_events_before_and_names_the_event() {
    let sse = read("events.sse");
    let out = agui(&["decode", "--from", "sse"], &sse[..5000]);
    assert_eq!(out.status.code(), Some(2));
    let lines = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(lines, 29);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("event 29 (byte offset 4845)") && err.contains("ended inside an event"),
        "{err}"
    );
}

#[test]
fn malformed_sse_event_is_named() {
    let input = b"data: {\"type\":\"RUN_ERROR\",\"message\":\"a\"}\n\n: ping\n\ndata: {\"type\":\"RUN_ERROR\"}\n\n";
    let out = agui(&["decode", "--from", "sse"], input);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, b"{\"type\":\"RUN_ERROR\",\"message\":\"a\"}\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("event 1 (byte offset 50)") && err.contains("message"),
        "{err}"
    );
}

#[test]
fn malformed_protobuf_frame_is_named() {
    let pb = read("events.pb");
    // Event 1 starts at 1291 (events.index.jsonl); corrupt its first field's tag.
    let mut bad = pb.clone();
    bad[1295] = 0x00;
    let out = agui(&["decode", "--from", "proto"], &bad);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout.iter().filter(|b| **b == b'\n').count(), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("event 1 (byte offset 1291)"), "{err}");
}

/// `agui decode --from sse` reads events on several threads. Its output, its error and
/// the point where the error stops the output are those of one thread, whatever the
/// count: for streams of many batches, with events of unknown types (skipped), an event
/// of 2 MB (a batch cut by size), a malformed event, and a stream cut inside a frame.
#[test]
fn decoding_on_several_threads_gives_what_one_thread_gives() {
    let mut clean = String::new();
    for i in 0..5_000 {
        let data = match i % 7 {
            0 => format!(r#"{{"type":"FUTURE_EVENT","n":{i}}}"#),
            3 if i == 2_502 => format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{}"}}"#,
                "x".repeat(2_000_000)
            ),
            _ => format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT", "messageId":"m{}","delta":"d\u00e9 \"{i}\"\n"}}"#,
                i % 13
            ),
        };
        clean.push_str(&format!("data: {data}\n\n"));
        if i % 500 == 0 {
            clean.push_str(": keep-alive\n\n");
        }
    }
    // Event 3,501's message id becomes a number.
    let malformed = clean.replacen(
        &format!(r#""messageId":"m{}","delta":"d\u00e9 \"3501\""#, 3_501 % 13),
        r#""messageId":7,"delta":"d\u00e9 \"3501\""#,
        1,
    );
    assert_ne!(malformed, clean);
    let cut = clean[..clean.len() - 20].to_owned();
    // After event 99, 11 MiB with no blank line (comment lines): longer than any event
    // may be, so the rest is framed by the reader, and the error's index adds up both.
    let at = malformed.match_indices("\n\n").nth(99).unwrap().0 + 2;
    let comments = ": no blank line here\n".repeat(11 * 1024 * 1024 / 21);
    let flood = format!("{}{comments}{}", &malformed[..at], &malformed[at..]);
    let dir = std::env::temp_dir().join(format!("agui-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, stream) in [
        ("clean", &clean),
        ("malformed", &malformed),
        ("cut", &cut),
        ("flood", &flood),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, stream).unwrap();
        let path = path.to_str().unwrap();
        let run = |threads: &str| {
            let out = agui(
                &["decode", "--from", "sse", "--threads", threads, path],
                b"",
            );
            // The skipped events' warnings (each with its index and offset, in order),
            // then the error; without the log lines' times.
            let err = String::from_utf8_lossy(&out.stderr)
                .lines()
                .map(|l| match l.find("Z") {
                    // A log line: its time ends with the first `Z`.
                    Some(z) if z < 40 && !l.starts_with("agui") => l[z..].to_owned(),
                    _ => l.to_owned(),
                })
                .collect::<Vec<_>>();
            let skipped = err
                .iter()
                .filter(|l| l.contains("skipped an SSE event"))
                .count();
            (out.status.code(), out.stdout, (skipped, err))
        };
        let one = run("1");
        match name {
            "clean" => assert_eq!(one.0, Some(0), "{:?}", one.2),
            _ => assert_eq!(one.0, Some(2), "{name}: {:?}", one.2),
        }
        assert!(one.1.len() > 2_000_000, "{name}");
        for threads in ["2", "3", "8"] {
            let many = run(threads);
            assert_eq!(many.0, one.0, "{name}, {threads} threads");
            assert_eq!(many.2, one.2, "{name}, {threads} threads");
            assert!(
                many.1 == one.1,
                "{name}, {threads} threads: the output differs"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live stream piped in: each event comes out as it arrives, before the input ends
/// (by default a pipe is read on one thread; several would hold events back until a
/// piece is full).
#[test]
fn a_piped_stream_comes_out_as_it_arrives() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["decode", "--from", "sse"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    for i in 0..3 {
        let event = format!(
            "data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{i}\"}}\n\n"
        );
        stdin.write_all(event.as_bytes()).unwrap();
        stdin.flush().unwrap();
        // The input stays open: the line must come anyway.
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("event {i} was held back while the input stayed open"));
        assert!(line.contains(&format!("\"delta\":\"{i}\"")), "{line}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
}
