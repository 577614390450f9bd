//! The 1.1 rules on a run's identity and end: `RUN_FINISHED` carries its
//! `RUN_STARTED`'s ids, every run of a stream is on one thread, an interrupt outcome's
//! ids are distinct, and a stream that ends with its run open fails it. The streams are
//! those of the upstream draft conformance corpus.

use agui_sdk_core::semantics::{Inbound, InboundConfig, InboundError, Verifier, VerifyRule};
use agui_sdk_core::Event;
use serde_json::{json, Value};

fn events(stream: &[Value]) -> Vec<Event> {
    stream
        .iter()
        .map(|v| agui_sdk_core::wire::from_json_value::<Event>(v).unwrap())
        .collect()
}

/// The first violation's index and rule, or `Ok(())`; then the end-of-stream verdict.
fn judge(verifier: &mut Verifier, stream: &[Value]) -> Result<(), (usize, VerifyRule)> {
    for e in events(stream) {
        verifier.push(&e).map_err(|e| (e.index, e.rule))?;
    }
    verifier.finish().map_err(|r| (verifier.events_seen(), r))
}

fn started(thread: &str, run: &str) -> Value {
    json!({"type": "RUN_STARTED", "threadId": thread, "runId": run})
}

fn finished(thread: &str, run: &str) -> Value {
    json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run})
}

#[test]
fn run_finished_must_carry_the_run_id_of_its_run_started() {
    let err = judge(
        &mut Verifier::new(),
        &[started("t", "r-opened"), finished("t", "r-other")],
    )
    .unwrap_err();
    assert_eq!(err.0, 1);
    assert_eq!(err.1.id(), "lifecycle/run-finished-run-id");
    assert!(
        err.1.to_string().contains("must agree on their runId"),
        "{}",
        err.1
    );
    assert!(err.1.to_string().contains("'r-other'") && err.1.to_string().contains("'r-opened'"));
}

#[test]
fn run_finished_must_carry_the_thread_id_of_its_run_started() {
    let err = judge(
        &mut Verifier::new(),
        &[started("t", "r"), finished("t-other", "r")],
    )
    .unwrap_err();
    assert_eq!((err.0, err.1.id()), (1, "lifecycle/run-finished-thread-id"));
    assert!(err.1.to_string().contains(
        "both boundary events of a run, RUN_STARTED and RUN_FINISHED, carry the input's threadId"
    ));
}

#[test]
fn every_run_of_a_stream_is_on_one_thread() {
    let stream = [
        started("t", "r1"),
        finished("t", "r1"),
        started("t-other", "r2"),
        finished("t-other", "r2"),
    ];
    // Without the input, the first run's thread is the stream's.
    let err = judge(&mut Verifier::new(), &stream).unwrap_err();
    assert_eq!((err.0, err.1.id()), (2, "lifecycle/one-thread-per-stream"));
    assert!(err.1.to_string().contains("carries the input's threadId"));
    // With the input's thread, even the first run must be on it.
    let err = judge(&mut Verifier::for_thread("t-input"), &stream[..2]).unwrap_err();
    assert_eq!((err.0, err.1.id()), (0, "lifecycle/one-thread-per-stream"));
    // Two runs on the input's thread are fine.
    let same = [
        started("t", "r1"),
        finished("t", "r1"),
        started("t", "r2"),
        finished("t", "r2"),
    ];
    assert_eq!(judge(&mut Verifier::for_thread("t"), &same), Ok(()));
}

#[test]
fn interrupts_of_one_outcome_have_distinct_ids() {
    let mut fin = finished("t", "r");
    fin["outcome"] = json!({"type": "interrupt", "interrupts": [
        {"id": "i-dup", "reason": "approval"},
        {"id": "i-other", "reason": "approval"},
        {"id": "i-dup", "reason": "approval"},
    ]});
    let err = judge(&mut Verifier::new(), &[started("t", "r"), fin.clone()]).unwrap_err();
    assert_eq!((err.0, err.1.id()), (1, "interrupts/distinct-ids"));
    assert!(err
        .1
        .to_string()
        .contains("two interrupts carrying the id 'i-dup'"));
    fin["outcome"]["interrupts"][2]["id"] = json!("i-third");
    assert_eq!(
        judge(&mut Verifier::new(), &[started("t", "r"), fin]),
        Ok(())
    );
}

#[test]
fn a_stream_that_ends_with_its_run_open_fails_it() {
    let stream = [
        started("t", "r"),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "half an ans"}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
    ];
    let err = judge(&mut Verifier::new(), &stream).unwrap_err();
    assert_eq!((err.0, err.1.id()), (4, "lifecycle/terminal-event"));
    assert!(err.1.to_string().contains("ended without a terminal event"));
    // Closed by RUN_ERROR or RUN_FINISHED, or never opened: nothing to say.
    let mut closed = stream.to_vec();
    closed.push(json!({"type": "RUN_ERROR", "message": "boom"}));
    assert_eq!(judge(&mut Verifier::new(), &closed), Ok(()));
    assert_eq!(judge(&mut Verifier::new(), &[]), Ok(()));

    // Through the pipeline: the end is its own error, after the events it delivered.
    let mut inbound = Inbound::new(InboundConfig::default());
    let (mut out, mut warnings) = (Vec::new(), Vec::new());
    for v in &stream {
        inbound
            .push_json(v.to_string().as_bytes(), &mut out, &mut warnings)
            .unwrap();
    }
    assert_eq!(out.len(), 4);
    let err = inbound.finish().unwrap_err();
    assert!(
        matches!(err, InboundError::Unterminated { events: 4, .. }),
        "{err:?}"
    );
    assert_eq!(err.rule_id(), "lifecycle/terminal-event");
    assert_eq!(err.event_index(), None);
    assert!(
        err.to_string()
            .starts_with("after event 3: The stream ended without a terminal event"),
        "{err}"
    );
}

#[test]
fn every_rule_has_a_stable_id_named_after_its_section() {
    let sections = [
        "lifecycle/",
        "messages/",
        "tool-calls/",
        "reasoning/",
        "steps/",
        "subagents/",
        "interrupts/",
    ];
    let rules = [
        VerifyRule::FirstEventNotRunStarted,
        VerifyRule::RunAlreadyActive,
        VerifyRule::StepNotStarted { step: "s".into() },
        VerifyRule::DuplicateInterruptId { id: "i".into() },
        VerifyRule::EndedWithoutTerminal {
            run_id: "r".into(),
            events: 1,
        },
    ];
    for r in &rules {
        assert!(sections.iter().any(|s| r.id().starts_with(s)), "{}", r.id());
    }
    assert_eq!(
        VerifyRule::FirstEventNotRunStarted.id(),
        "lifecycle/run-started-first"
    );
}
