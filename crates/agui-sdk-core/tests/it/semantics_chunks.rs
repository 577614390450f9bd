//! Chunk expansion against the reference (`cases/chunks.jsonl`, `events.expanded.jsonl`).

use crate::common;

use agui_sdk_core::semantics::{expand_chunks, ChunkExpander};
use agui_sdk_core::Event;
use serde_json::Value;

fn decode(v: &Value) -> Event {
    agui_sdk_core::wire::from_json_value::<Event>(v).unwrap_or_else(|e| panic!("{v}: {e}"))
}

fn to_values(evs: &[Event]) -> Vec<Value> {
    evs.iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[test]
fn chunk_cases_match_reference() {
    let cases = common::json_lines("cases/chunks.jsonl");
    assert_eq!(cases.len(), 18);
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let input: Vec<Event> = case["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(decode)
            .collect();
        let got = ChunkExpander::expand_all(input);
        if case["ok"].as_bool().unwrap() {
            let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                to_values(&got),
                *case["output"].as_array().unwrap(),
                "{name}"
            );
        } else {
            let err = got.expect_err(name);
            assert_eq!(
                err.rule.to_string(),
                case["error"].as_str().unwrap(),
                "{name}"
            );
        }
    }
}

#[test]
fn golden_stream_expands_like_reference() {
    let input: Vec<Event> = common::lines("events.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect();
    let expected = common::json_lines("events.expanded.jsonl");
    let got: Vec<Event> = expand_chunks(input)
        .collect::<Result<_, _>>()
        .expect("golden stream expands");
    let got = to_values(&got);
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "expanded event {i}");
    }
}

#[test]
fn iterator_stops_after_error() {
    let evs = vec![
        Event::run_started("t", "r"),
        agui_sdk_core::event::TextMessageChunk::default().into(),
        Event::run_finished("t", "r"),
    ];
    let out: Vec<_> = expand_chunks(evs).collect();
    assert_eq!(out.len(), 2);
    assert!(out[0].is_ok());
    let err = out[1].as_ref().unwrap_err();
    assert_eq!(err.index, 1);
    assert_eq!(
        err.to_string(),
        "event 1: First TEXT_MESSAGE_CHUNK must have a messageId"
    );
}
