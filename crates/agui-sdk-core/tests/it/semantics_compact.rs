//! Compaction against the reference (`cases/compact.jsonl`, `events.compacted.jsonl`).

use crate::common;

use agui_sdk_core::semantics::{compact_events, Compactor};
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
fn compact_cases_match_reference() {
    let cases = common::json_lines("cases/compact.jsonl");
    assert_eq!(cases.len(), 5);
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let input: Vec<Event> = case["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(decode)
            .collect();
        let got = Compactor::compact_all(input);
        assert_eq!(
            to_values(&got),
            *case["output"].as_array().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn golden_expanded_stream_compacts_like_reference() {
    let input: Vec<Event> = common::lines("events.expanded.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect();
    let expected = common::json_lines("events.compacted.jsonl");
    let got: Vec<Event> = compact_events(input).collect();
    let got = to_values(&got);
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "compacted event {i}");
    }
}
