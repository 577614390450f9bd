use super::*;

/// Events as JSON Lines.
pub(crate) fn lines(events: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        out.extend_from_slice(e.as_bytes());
        out.push(b'\n');
    }
    out
}

#[test]
fn a_broken_stream_gets_its_finding_on_the_event_that_broke_it() {
    let body = lines(&[
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"zzz","delta":"x"}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
    ]);
    let mut r = Recording::with_format(Framing::sniff(&body), Limits::default());
    // Split anywhere: the result is the same.
    for chunk in body.chunks(7) {
        assert!(r.push(chunk, 1.0));
    }
    r.finish(End::Completed, 2.0);
    assert_eq!(r.rows().len(), 5);
    let verify: Vec<_> = r
        .findings()
        .iter()
        .filter(|f| f.stage == Stage::Verify)
        .collect();
    assert_eq!(verify.len(), 1, "{:?}", r.findings());
    assert_eq!(verify[0].index, 2);
    assert!(
        verify[0].message.contains("TEXT_MESSAGE_CONTENT"),
        "{}",
        verify[0].message
    );
    // The reducer went on: the message exists and the run finished.
    assert_eq!(r.reducer().messages().len(), 1);
    assert_eq!(r.status().0, Status::Finished);
}

#[test]
fn bad_lines_are_findings_and_reading_goes_on() {
    let body = lines(&[
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        r#"{"type":"CUSTOM","name":"#,
        r#"{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}"#,
        r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/b","value":2}]}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
    ]);
    let mut r = Recording::with_format(Framing::JsonLines, Limits::default());
    r.push(&body, 0.0);
    r.finish(End::Completed, 0.0);
    assert_eq!(r.rows().len(), 5);
    let decode = r
        .findings()
        .iter()
        .find(|f| f.stage == Stage::Decode)
        .expect("a decode finding");
    assert_eq!(decode.index, 1);
    // The delta applied to the empty state, and its diff is recorded.
    let change = r.state_change().expect("a state change");
    assert_eq!(change.index, 3);
    assert_eq!(change.diff[0]["op"], "add");
    assert_eq!(change.diff[0]["path"], "/b");
}

#[test]
fn a_cut_stream_is_an_error_at_the_next_index() {
    let mut r = Recording::with_format(Framing::Sse, Limits::default());
    r.push(
        b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
        0.0,
    );
    r.finish(End::Completed, 1.0);
    assert_eq!(r.status().0, Status::Error);
    let last = r.findings().last().unwrap();
    assert_eq!((last.index, last.stage), (1, Stage::Transport));
}

#[test]
fn limits_end_the_recording_with_a_finding() {
    let limits = Limits {
        max_events: 2,
        ..Limits::default()
    };
    let mut r = Recording::with_format(Framing::JsonLines, limits);
    let one = lines(&[r#"{"type":"CUSTOM","name":"x","value":1}"#]);
    assert!(r.push(&one, 0.0));
    assert!(r.push(&one, 0.0));
    assert!(!r.push(&one, 0.0));
    assert_eq!(r.rows().len(), 2);
    assert!(r
        .findings()
        .iter()
        .any(|f| f.message.contains("limit of 2 events")));
}

#[test]
fn interrupts_and_replay() {
    let body = lines(&[
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        r#"{"type":"STATE_SNAPSHOT","snapshot":{"n":1}}"#,
        r#"{"type":"STATE_DELTA","delta":[{"op":"replace","path":"/n","value":2}]}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"approval"}]}}"#,
    ]);
    let mut r = Recording::with_format(Framing::JsonLines, Limits::default());
    r.push(&body, 0.0);
    r.finish(End::Completed, 0.0);
    assert_eq!(r.status().0, Status::Interrupted, "{:?}", r.findings());
    assert_eq!(r.reducer().pending_interrupts().len(), 1);
    let (before, after, _) = crate::replay::replay_at(r.raw_events(), 2, None);
    assert_eq!(before, serde_json::json!({"n": 1}));
    assert_eq!(after, serde_json::json!({"n": 2}));
}

#[test]
fn sniffing() {
    assert_eq!(Framing::sniff(b"  {\"type\":1}"), Framing::JsonLines);
    assert_eq!(Framing::sniff(b"data: {}\n\n"), Framing::Sse);
    assert_eq!(Framing::sniff(b": comment\n"), Framing::Sse);
    assert_eq!(Framing::sniff(&[0, 0, 0, 4, 1, 2, 3, 4]), Framing::Proto);
}
