//! The verifier against the reference verdicts (`cases/verify.jsonl`) and the golden
//! expanded stream.

use crate::common;

use agui_sdk_core::semantics::Verifier;
use agui_sdk_core::{Event, EventType};

#[test]
fn verify_cases_match_reference() {
    let cases = common::json_lines("cases/verify.jsonl");
    assert_eq!(cases.len(), 54);
    let mut compared = 0;
    let mut decoder_enforced = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let inputs = case["input"].as_array().unwrap();
        let ok = case["ok"].as_bool().unwrap();
        let decoded: Result<Vec<Event>, (usize, String)> = inputs
            .iter()
            .enumerate()
            .map(|(i, v)| {
                agui_sdk_core::wire::from_json_value::<Event>(v).map_err(|e| (i, e.to_string()))
            })
            .collect();
        let events = match decoded {
            Ok(evs) => evs,
            Err((i, err)) => {
                // Nulls on optional fields and unknown event types never reach our
                // verifier: the typed decoder rejects them. The reference verifier
                // rejects the nulls too, and lets unknown types (which its enforcement
                // stage would have dropped) pass.
                let ty = inputs[i]["type"].as_str().unwrap_or("");
                let unknown_type = EventType::from_wire(ty).is_none();
                assert!(
                    !ok || unknown_type,
                    "{name}: reference accepts but event {i} does not decode: {err}"
                );
                decoder_enforced += 1;
                continue;
            }
        };
        let mut v = Verifier::new();
        let mut result = Ok(());
        for e in &events {
            result = v.push(e);
            if result.is_err() {
                break;
            }
        }
        match (ok, result) {
            (true, Ok(())) => {
                assert_eq!(
                    case["emitted"].as_u64().unwrap() as usize,
                    v.events_seen(),
                    "{name}"
                );
            }
            (false, Err(e)) => {
                assert_eq!(
                    e.rule.to_string(),
                    case["error"].as_str().unwrap(),
                    "{name}"
                );
                assert_eq!(e.index, events.len() - 1, "{name}: error index");
                assert_eq!(e.to_string(), format!("event {}: {}", e.index, e.rule));
            }
            (true, Err(e)) => panic!("{name}: reference accepts, we reject: {e}"),
            (false, Ok(())) => panic!("{name}: reference rejects ({}), we accept", case["error"]),
        }
        compared += 1;
    }
    assert!(compared >= 46, "only {compared} cases compared");
    assert!(
        decoder_enforced <= 8,
        "{decoder_enforced} cases left to the decoder"
    );
}

#[test]
fn golden_expanded_stream_verifies() {
    let mut v = Verifier::new();
    for (i, line) in common::lines("events.expanded.jsonl").iter().enumerate() {
        let e = Event::from_json_str(line).unwrap();
        v.push(&e).unwrap_or_else(|err| panic!("event {i}: {err}"));
    }
    assert_eq!(v.events_seen(), 83);
}

#[test]
fn error_names_the_event_index_and_ids() {
    let evs = [
        Event::run_started("t", "r"),
        Event::text_message_start("m1"),
        Event::text_message_content("m2", "x"),
    ];
    let mut v = Verifier::new();
    v.push(&evs[0]).unwrap();
    v.push(&evs[1]).unwrap();
    let err = v.push(&evs[2]).unwrap_err();
    assert_eq!(err.index, 2);
    assert!(err.to_string().starts_with("event 2: "));
    assert!(err.to_string().contains("'m2'"));
}
