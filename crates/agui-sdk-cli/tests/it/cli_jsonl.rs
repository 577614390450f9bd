//! `agui decode --from jsonl` and `agui encode --to jsonl` end to end.

use crate::common;

use common::{agui, fixture};

#[test]
fn decode_golden_stream_is_canonical() {
    let golden = std::fs::read(fixture("events.jsonl")).unwrap();
    let out = agui(
        &[
            "decode",
            "--from",
            "jsonl",
            fixture("events.jsonl").to_str().unwrap(),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, golden);
    // Standard input when FILE is absent.
    let out = agui(&["encode", "--to", "jsonl"], &golden);
    assert!(out.status.success());
    assert_eq!(out.stdout, golden);
}

#[test]
fn decode_canonicalises_key_order_and_keeps_unknown_keys() {
    let out = agui(
        &["decode", "--from", "jsonl"],
        b"{\"delta\":\"hi\",\"x\":1,\"messageId\":\"m\",\"type\":\"TEXT_MESSAGE_CONTENT\"}\r\n\n",
    );
    assert!(out.status.success());
    assert_eq!(
        out.stdout,
        b"{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"hi\",\"x\":1}\n"
    );
}

#[test]
fn bad_line_keeps_what_came_before_and_exits_2() {
    let input = b"{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"tool\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n";
    let out = agui(&["decode", "--from", "jsonl"], input);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        out.stdout,
        b"{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("event 1 (line 3, byte offset 51)"), "{err}");
    assert!(err.contains("field `role`"), "{err}");
    assert!(err.contains("unknown variant `tool`"), "{err}");
}

#[test]
fn missing_file_is_an_io_error() {
    let out = agui(
        &["decode", "--from", "jsonl", "/nonexistent/events.jsonl"],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open /nonexistent/events.jsonl"));
}

#[test]
fn every_subcommand_has_help() {
    for sub in [
        &["--help"][..],
        &["decode", "--help"],
        &["encode", "--help"],
    ] {
        let out = agui(sub, b"");
        assert!(out.status.success(), "{sub:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage: agui"),
            "{sub:?}"
        );
    }
}
