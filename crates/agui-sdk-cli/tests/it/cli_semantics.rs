//! `agui verify`, `agui apply` and `agui transform` end to end, against the reference
//! vectors.

use crate::common;

use common::{agui, fixture};

use serde_json::Value;

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn verify_exit_statuses() {
    let ok = agui(
        &[
            "verify",
            "--from",
            "jsonl",
            fixture("events.expanded.jsonl").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = agui(
        &["verify", "--from", "jsonl"],
        b"{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c\"}\n",
    );
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains(
            "event 1: Cannot send 'TOOL_CALL_END' event: No active tool call found with ID 'c'"
        ),
        "{err}"
    );
    let undecodable = agui(
        &["verify", "--from", "jsonl"],
        b"{\"type\":\"RUN_STARTED\"\n",
    );
    assert_eq!(undecodable.status.code(), Some(2));
}

#[test]
fn apply_matches_the_reference_reducer() {
    let expanded = fixture("events.expanded.jsonl");
    let out = agui(
        &["apply", "--from", "jsonl", expanded.to_str().unwrap()],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want: Value =
        serde_json::from_slice(&std::fs::read(fixture("apply-final.json")).unwrap()).unwrap();
    assert_eq!(got["messages"], want["messages"]);
    assert_eq!(got["state"], want["state"]);
    // The raw stream goes through the inbound pipeline, chunks expanded on the way: the
    // same conversation, and with `--verify` the same.
    for verify in [false, true] {
        let mut args = vec!["apply", "--from", "jsonl"];
        if verify {
            args.push("--verify");
        }
        let path = fixture("events.jsonl");
        args.push(path.to_str().unwrap());
        let raw = agui(&args, b"");
        assert!(
            raw.status.success(),
            "{}",
            String::from_utf8_lossy(&raw.stderr)
        );
        let got: Value = serde_json::from_slice(&raw.stdout).unwrap();
        assert_eq!(got["messages"], want["messages"]);
        assert_eq!(got["state"], want["state"]);
    }
    // A fragment that is not a whole run applies, and fails verification.
    let fragment =
        b"{\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"x\",\"vendor\":1}\n";
    let out = agui(&["apply", "--from", "jsonl"], fragment);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "warning: event 0: removed unrecognised material at '/vendor' on TEXT_MESSAGE_CHUNK"
        ),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("removed unrecognised material").count(),
        1,
        "each warning once, not also as a log line: {stderr}"
    );
    let verbose = agui(&["apply", "-v", "--from", "jsonl"], fragment);
    assert!(
        String::from_utf8_lossy(&verbose.stderr)
            .matches("removed unrecognised material")
            .count()
            >= 2,
        "-v adds the log line"
    );
    let out = agui(&["apply", "--verify", "--from", "jsonl"], fragment);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("First event must be 'RUN_STARTED'"));
}

#[test]
fn apply_starts_from_the_input() {
    let dir = std::env::temp_dir().join(format!("agui-sdk-cli-apply-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("input.json");
    std::fs::write(
        &input,
        br#"{"threadId":"t","runId":"r","state":{"n":1},"messages":[{"id":"u1","role":"user","content":"hi"}]}"#,
    )
    .unwrap();
    let events = b"{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"a1\"}\n{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"a1\",\"delta\":\"yo\"}\n{\"type\":\"STATE_DELTA\",\"delta\":[{\"op\":\"add\",\"path\":\"/m\",\"value\":2}]}\n";
    let out = agui(
        &[
            "apply",
            "--input",
            input.to_str().unwrap(),
            "--from",
            "jsonl",
        ],
        events,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got,
        serde_json::json!({
            "messages": [
                {"id": "u1", "role": "user", "content": "hi"},
                {"id": "a1", "role": "assistant", "content": "yo"}
            ],
            "state": {"n": 1, "m": 2}
        })
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn transform_expands_and_compacts_like_the_reference() {
    let out = agui(
        &[
            "transform",
            "--expand-chunks",
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
    let want = json_lines(&std::fs::read(fixture("events.expanded.jsonl")).unwrap());
    assert_eq!(json_lines(&out.stdout), want);

    let out = agui(
        &[
            "transform",
            "--compact",
            "--from",
            "jsonl",
            fixture("events.expanded.jsonl").to_str().unwrap(),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = json_lines(&std::fs::read(fixture("events.compacted.jsonl")).unwrap());
    assert_eq!(json_lines(&out.stdout), want);

    let bad = agui(
        &["transform", "--expand-chunks", "--from", "jsonl"],
        b"{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TEXT_MESSAGE_CHUNK\",\"delta\":\"x\"}\n",
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr)
        .contains("First TEXT_MESSAGE_CHUNK must have a messageId"));
}

/// The patch-amplification attack: a 3 KB stream whose one `STATE_DELTA` copies the
/// whole state into itself 40 times. `agui apply` and `agui transform --compact` stop
/// it at the bound, quickly, instead of allocating until killed: the patch is not
/// applied and (as the reference reducer does with a patch that fails) a warning names
/// the operation.
#[test]
fn a_self_copying_patch_fails_fast_instead_of_exhausting_memory() {
    let snapshot =
        serde_json::json!({ "type": "STATE_SNAPSHOT", "snapshot": { "a": "x".repeat(2000) } });
    let ops: Vec<Value> = (0..40)
        .map(|i| serde_json::json!({ "op": "copy", "from": "", "path": format!("/c{i}") }))
        .collect();
    let delta = serde_json::json!({ "type": "STATE_DELTA", "delta": ops });
    let stream = format!("{snapshot}\n{delta}\n");
    assert!(stream.len() < 4096);
    for args in [
        &["apply", "--from", "jsonl"][..],
        &["transform", "--compact", "--from", "jsonl"][..],
    ] {
        let t0 = std::time::Instant::now();
        let out = agui(args, stream.as_bytes());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "{args:?} took {:?}",
            t0.elapsed()
        );
        if args[0] == "apply" {
            assert!(
                stderr.contains("warning: event 1: Failed to apply state patch: operation"),
                "{stderr}"
            );
            assert!(
                stderr.contains("(copy)") && stderr.contains("grow past"),
                "{stderr}"
            );
            let state: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                state["state"]["a"].as_str().map(str::len),
                Some(2000),
                "the state before the patch"
            );
        } else {
            // Compaction skips a patch that does not apply, reported as `apply` does.
            assert!(
                out.stdout.len() < 1 << 20,
                "{args:?}: the output stays small"
            );
            assert!(
                stderr.contains("warning: event 1: Failed to apply state patch: operation"),
                "{stderr}"
            );
            assert_eq!(
                stderr.matches("Failed to apply").count(),
                1,
                "once: {stderr}"
            );
        }
    }
}

/// A JSON Lines line longer than an event may be (10 MiB) is refused with its line
/// number, before the rest of it is read.
#[test]
fn an_over_long_json_lines_line_is_refused() {
    let mut input = b"{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n".to_vec();
    input.extend_from_slice(b"{\"type\":\"CUSTOM\",\"name\":\"x\",\"value\":\"");
    input.extend(std::iter::repeat_n(b'a', 11 << 20));
    input.extend_from_slice(b"\"}\n");
    // From a file: the command stops reading early, which would break a pipe.
    let path = std::env::temp_dir().join(format!("agui-long-line-{}.jsonl", std::process::id()));
    std::fs::write(&path, &input).unwrap();
    let file = path.to_str().unwrap();
    for args in [
        &["verify", "--from", "jsonl", file][..],
        &["apply", "--from", "jsonl", file][..],
    ] {
        let out = agui(args, b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("line 2") && stderr.contains("10485760"),
            "{args:?}: {stderr}"
        );
    }
    let _ = std::fs::remove_file(&path);
}

/// `agui verify` and `agui apply` read SSE events ahead on several threads; the result
/// (exit status, output, every warning and error) is that of one thread, for long
/// streams that pass, that carry unknown keys and unknown event types (read by the
/// pipeline's slow path), that break the lifecycle, hold a malformed event, or are cut.
#[test]
fn verify_and_apply_on_several_threads_give_what_one_thread_gives() {
    let frame = |data: String| format!("data: {data}\n\n");
    let mut valid = frame(r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#.into());
    for m in 0..60 {
        valid.push_str(&frame(format!(
            r#"{{"type":"TEXT_MESSAGE_START","messageId":"m{m}","role":"assistant"}}"#
        )));
        for i in 0..100 {
            let extra = if i == 50 {
                r#","x-trace":{"n":[1,2]}"#
            } else {
                ""
            };
            valid.push_str(&frame(format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m{m}","delta":"w{i} \u00e9"{extra}}}"#
            )));
        }
        if m % 10 == 0 {
            valid.push_str(&frame(r#"{"type":"FUTURE_EVENT"}"#.into()));
            valid.push_str(&frame(format!(
                r#"{{"type":"STATE_SNAPSHOT","snapshot":{{"m":{m},"k":[true,null]}}}}"#
            )));
        }
        valid.push_str(&frame(format!(
            r#"{{"type":"TEXT_MESSAGE_END","messageId":"m{m}"}}"#
        )));
    }
    valid.push_str(&frame(
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#.into(),
    ));
    let content_of = |m: u32, i: u32| {
        format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m{m}","delta":"w{i} \u00e9"}}"#)
    };
    let broken_lifecycle = valid.replacen(&content_of(40, 7), &content_of(999, 7), 1);
    let malformed = valid.replacen(
        &content_of(45, 3),
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":3}"#,
        1,
    );
    let cut = valid[..valid.len() - 30].to_owned();
    // After event 99, 11 MiB with no blank line: longer than any event may be, so the
    // reader frames the rest itself; the truncation's index adds up both parts.
    let at = cut.match_indices("\n\n").nth(99).unwrap().0 + 2;
    let comments = ": no blank line here\n".repeat(11 * 1024 * 1024 / 21);
    let flood = format!("{}{comments}{}", &cut[..at], &cut[at..]);
    assert!(broken_lifecycle != valid && malformed != valid);
    let dir = std::env::temp_dir().join(format!("agui-verify-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, stream, status) in [
        ("valid", &valid, 0),
        ("broken lifecycle", &broken_lifecycle, 1),
        ("malformed", &malformed, 2),
        ("cut", &cut, 2),
        ("flood", &flood, 2),
    ] {
        let path = dir.join(name.replace(' ', "-"));
        std::fs::write(&path, stream).unwrap();
        let path = path.to_str().unwrap();
        for command in [&["verify"][..], &["apply", "--verify"][..]] {
            let run = |threads: &str| {
                let mut args = command.to_vec();
                args.extend(["--from", "sse", "--threads", threads, path]);
                let out = agui(&args, b"");
                // What the command says (its warnings and its error), without the log's
                // timestamped lines.
                let said: Vec<String> = String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .filter(|l| l.starts_with("warning: ") || l.starts_with("agui: "))
                    .map(str::to_owned)
                    .collect();
                (out.status.code(), out.stdout, said)
            };
            let one = run("1");
            assert_eq!(
                one.0,
                Some(status),
                "{name} {command:?}: {:?}",
                one.2.last()
            );
            assert!(one.2.len() > 10, "{name} {command:?}: warnings to compare");
            for threads in ["2", "5"] {
                let many = run(threads);
                assert_eq!(many.0, one.0, "{name} {command:?} {threads}");
                assert!(
                    many.1 == one.1,
                    "{name} {command:?} {threads}: the output differs"
                );
                assert!(
                    many.2 == one.2,
                    "{name} {command:?} {threads}: {:?} vs {:?}",
                    many.2.last(),
                    one.2.last()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_fails_a_stream_that_ends_with_its_run_open_and_names_the_rule() {
    let open = b"{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\"}\n";
    let out = agui(&["verify", "--from", "jsonl"], open);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("after event 2: The stream ended without a terminal event: run 'r' is still open after 3 events")
            && err.contains("[rule lifecycle/terminal-event]"),
        "{err}"
    );
    let mut closed = open.to_vec();
    closed.extend_from_slice(b"{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n");
    assert_eq!(
        agui(&["verify", "--from", "jsonl"], &closed).status.code(),
        Some(0)
    );
    // A rule broken mid-stream is named the same way.
    let other = b"{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"x\"}\n";
    let out = agui(&["verify", "--from", "jsonl"], other);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("must agree on their runId. [rule lifecycle/run-finished-run-id]"),
        "{err}"
    );
}

#[test]
fn verify_warns_once_for_each_deprecated_thinking_event() {
    let stream = concat!(
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        "\n",
        r#"{"type":"THINKING_START"}"#,
        "\n",
        r#"{"type":"THINKING_END"}"#,
        "\n",
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
        "\n",
    );
    for from in ["jsonl", "sse"] {
        let input = if from == "sse" {
            stream
                .lines()
                .map(|l| format!("data: {l}\n\n"))
                .collect::<String>()
        } else {
            stream.to_owned()
        };
        let out = agui(&["verify", "--from", from], input.as_bytes());
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(
            lines,
            [
                "warning: event 1: THINKING_START: converted the deprecated THINKING_START to REASONING_START; the producer should send REASONING_START",
                "warning: event 2: THINKING_END: converted the deprecated THINKING_END to REASONING_END; the producer should send REASONING_END",
            ],
            "--from {from}"
        );
    }
}
