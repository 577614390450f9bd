//! The inbound pipeline (enforce, expand, verify) on the golden stream.

mod common;

use agui_core::semantics::{verified, IncomingPipeline, PipelineWarning};
use agui_core::Event;
use serde_json::{json, Value};

#[test]
fn golden_stream_through_the_inbound_pipeline() {
    let mut p = IncomingPipeline::new();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for line in common::lines("events.jsonl") {
        let v: Value = serde_json::from_str(&line).unwrap();
        p.push(v, &mut out, &mut warnings).unwrap();
    }
    let got: Vec<Value> = out
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(got, common::json_lines("events.expanded.jsonl"));
}

#[test]
fn pipeline_drops_unknown_types_and_reports_stripped_keys() {
    let mut p = IncomingPipeline::new();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for v in [
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "THINKING_START"}),
        json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x", "junk": 1}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    ] {
        p.push(v, &mut out, &mut warnings).unwrap();
    }
    assert_eq!(out.len(), 5);
    assert_eq!(warnings.len(), 2);
    assert!(matches!(&warnings[1], PipelineWarning::Enforce(w) if w.path() == Some("/junk")));
    let err = p
        .push(
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
            &mut out,
            &mut warnings,
        )
        .unwrap_err();
    assert!(err
        .to_string()
        .starts_with("event 4: Cannot send event type 'TEXT_MESSAGE_END'"));
}

#[test]
fn verified_iterator_stops_at_the_first_violation() {
    let evs = vec![
        Event::run_started("t", "r"),
        Event::text_message_end("m"),
        Event::run_finished("t", "r"),
    ];
    let out: Vec<_> = verified(evs).collect();
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].as_ref().unwrap_err().index, 1);
}
