//! The reducer against the reference (`apply-trace.jsonl` after every event of the
//! golden stream, `apply-final.json`).

use crate::common;

use agui_sdk_core::semantics::{ApplyError, ChunkExpander, Reducer, RunOutcome};
use agui_sdk_core::{Event, Message};
use serde_json::{json, Value};

fn messages_json(r: &Reducer) -> Value {
    serde_json::to_value(r.messages()).unwrap()
}

#[test]
fn golden_trace_after_every_event() {
    let events: Vec<Event> = common::lines("events.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect();
    let trace = common::json_lines("apply-trace.jsonl");
    assert_eq!(trace.len(), events.len());
    let mut expander = ChunkExpander::new();
    let mut reducer = Reducer::new(Vec::new(), Some(json!({})));
    let mut buf = Vec::new();
    for (i, (ev, want)) in events.into_iter().zip(&trace).enumerate() {
        assert_eq!(want["afterIndex"], i);
        expander.push(ev, &mut buf).unwrap();
        for e in buf.drain(..) {
            reducer.apply_owned(e).unwrap();
        }
        assert_eq!(
            messages_json(&reducer),
            want["messages"],
            "messages after event {i}"
        );
        assert_eq!(
            reducer.state(),
            Some(&want["state"]),
            "state after event {i}"
        );
        assert_eq!(
            serde_json::to_value(reducer.pending_interrupts()).unwrap(),
            want["pendingInterrupts"],
            "pending interrupts after event {i}"
        );
    }
    let fin: Value = serde_json::from_slice(&common::read("apply-final.json")).unwrap();
    assert_eq!(messages_json(&reducer), fin["messages"]);
    assert_eq!(reducer.state(), Some(&fin["state"]));
}

#[test]
fn chunks_are_refused() {
    let mut r = Reducer::default();
    let err = r
        .apply(&agui_sdk_core::event::TextMessageChunk::default().into())
        .unwrap_err();
    assert!(matches!(
        err,
        ApplyError::UntransformedChunk { index: 0, .. }
    ));
    assert_eq!(
        err.to_string(),
        "event 0: TEXT_MESSAGE_CHUNK must be transformed before being applied"
    );
}

#[test]
fn reports_changes_and_pending_tool_calls() {
    let mut r = Reducer::default();
    let a = r.apply(&Event::text_message_start("m")).unwrap();
    assert_eq!(a.new_message_ids, vec!["m".to_owned()]);
    let a = r.apply(&Event::text_message_content("m", "hi")).unwrap();
    assert!(a.messages_changed && !a.structure_changed && !a.state_changed);
    assert_eq!(a.updated, Some(0));
    r.apply(&Event::tool_call_start("c1", "f")).unwrap();
    r.apply(&Event::tool_call_start("c2", "g")).unwrap();
    r.apply(&Event::tool_call_result("t1", "c1", "ok")).unwrap();
    let a = r.apply(&Event::run_finished("t", "r")).unwrap();
    assert_eq!(
        a.outcome,
        Some(RunOutcome::Success {
            result: None,
            pending_tool_call_ids: vec!["c2".into()]
        })
    );
    // The result sits right after the assistant message that owns the call.
    let ids: Vec<&str> = r.messages().iter().map(Message::id).collect();
    assert_eq!(ids, ["m", "c1", "t1", "c2"]);
    // A failing patch leaves the state unchanged.
    r.apply(&Event::state_snapshot(json!({"a": 1}))).unwrap();
    let bad = vec![
        agui_sdk_core::PatchOperation::add("/b", json!(2)),
        agui_sdk_core::PatchOperation::remove("/nope"),
    ];
    let a = r.apply(&Event::state_delta(bad)).unwrap();
    assert!(!a.state_changed && a.warning.is_some());
    assert_eq!(r.state(), Some(&json!({"a": 1})));
}
