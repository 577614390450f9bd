//! The reference vectors decode, and re-encode byte for byte; the reference's invalid
//! schema cases are rejected at the field the reference names.

use crate::common;

use agui_sdk_core::{Event, EventType, RunAgentInput};
use serde_json::Value;

#[test]
fn golden_events_reencode_byte_for_byte() {
    let lines = common::lines("events.jsonl");
    assert_eq!(lines.len(), 75);
    let mut seen = std::collections::BTreeSet::new();
    for (i, line) in lines.iter().enumerate() {
        let ev = Event::from_json_str(line).unwrap_or_else(|e| panic!("event {i}: {e}"));
        seen.insert(ev.event_type());
        assert_eq!(
            &ev.to_json_string(),
            line,
            "event {i} re-encodes differently"
        );
    }
    assert_eq!(
        seen.len(),
        EventType::ALL.len(),
        "golden stream covers every event type"
    );
}

#[test]
fn golden_protobuf_decoded_json_is_valid() {
    for (i, line) in common::lines("events.pb.decoded.jsonl").iter().enumerate() {
        let ev = Event::from_json_str(line).unwrap_or_else(|e| panic!("event {i}: {e}"));
        let back: Value = serde_json::from_str(&ev.to_json_string()).unwrap();
        let orig: Value = serde_json::from_str(line).unwrap();
        assert_eq!(back, orig, "event {i}");
    }
}

fn check_case(case: &Value) {
    let name = case["name"].as_str().unwrap();
    let input = serde_json::to_string(&case["input"]).unwrap();
    let (result, encoded) = match case["schema"].as_str().unwrap() {
        "Event" => {
            let r = Event::from_json_str(&input);
            let enc = r.as_ref().ok().map(|e| e.to_json_string());
            (r.map(|_| ()), enc)
        }
        "RunAgentInput" => {
            let r = agui_sdk_core::wire::from_json_str::<RunAgentInput>(&input);
            let enc = r.as_ref().ok().map(|e| serde_json::to_string(e).unwrap());
            (r.map(|_| ()), enc)
        }
        other => panic!("unknown schema {other}"),
    };
    if case["valid"].as_bool().unwrap() {
        if let Err(e) = &result {
            panic!("case {name:?} should be valid: {e}");
        }
        let expected = serde_json::to_string(&case["output"]).unwrap();
        assert_eq!(
            encoded.unwrap(),
            expected,
            "case {name:?}: output differs from the reference parse"
        );
    } else {
        let err = match result {
            Ok(()) => panic!("case {name:?} should be rejected"),
            Err(e) => e,
        };
        let want = case["issues"][0]["path"].as_str().unwrap();
        // The reference reports the deepest failing path; ours names the same field or
        // the union member that contains it.
        assert!(
            want.starts_with(&err.path) || err.path.starts_with(want),
            "case {name:?}: error at `{}` ({err}), reference says `{want}`",
            err.path
        );
    }
}

#[test]
fn schema_cases_match_the_reference() {
    let cases = common::json_lines("cases/schema.jsonl");
    assert_eq!(cases.len(), 64);
    for case in &cases {
        check_case(case);
    }
}

#[test]
fn omit_optional_null_outputs_that_are_valid_round_trip() {
    // The reference encoder drops optional nulls before writing; our types cannot hold
    // an optional null, so the omitted form is what we write. Every output that is a
    // valid event re-encodes unchanged.
    let mut checked = 0;
    for case in common::json_lines("cases/omit-optional-nulls.jsonl") {
        let out = serde_json::to_string(&case["output"]).unwrap();
        let parsed = match case["root"].as_str().unwrap() {
            "Event" => Event::from_json_str(&out).map(|e| e.to_json_string()),
            _ => agui_sdk_core::wire::from_json_str::<RunAgentInput>(&out)
                .map(|e| serde_json::to_string(&e).unwrap()),
        };
        if let Ok(s) = parsed {
            let mut a: Value = serde_json::from_str(&s).unwrap();
            if case["root"] == "RunAgentInput" {
                // Parsing fills the defaults `tools: []` and `context: []`, as the
                // reference parse does; the omission alone does not.
                for k in ["tools", "context"] {
                    if case["output"].get(k).is_none() && a[k] == serde_json::json!([]) {
                        a.as_object_mut().unwrap().shift_remove(k);
                    }
                }
            }
            assert_eq!(a, case["output"]);
            checked += 1;
        }
        // The input, with its optional nulls, is rejected as the reference schema does.
        let input = serde_json::to_string(&case["input"]).unwrap();
        if case["root"] == "Event" {
            assert!(
                Event::from_json_str(&input).is_err(),
                "null-bearing input accepted: {input}"
            );
        }
    }
    assert!(checked >= 3, "only {checked} outputs were valid events");
}
