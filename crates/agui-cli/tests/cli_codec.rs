//! `agui decode --from sse|proto` and `agui encode --to sse|proto` end to end: the
//! reference's golden encodings in and out, and malformed input reported with the event
//! index and byte offset after the events before it.

mod common;

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
        .map(|l| agui_core::Event::from_json_str(l).unwrap().to_json_string())
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
