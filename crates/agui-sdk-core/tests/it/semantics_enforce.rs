//! Enforcement and optional-null omission against the reference
//! (`cases/enforce.jsonl`, `cases/enforce-outgoing.jsonl`, `cases/omit-optional-nulls.jsonl`).

use crate::common;

use agui_sdk_core::semantics::{
    enforce_event, enforce_outgoing_input, omit_optional_nulls, EnforceWarning, NullsRoot,
};
use serde_json::Value;

/// The path inside a reference warning: `... material at '<path>' ...`.
fn warning_path(w: &str) -> Option<String> {
    let start = w.find("at '")? + 4;
    let end = w[start..].find('\'')? + start;
    Some(w[start..end].to_owned())
}

#[test]
fn enforce_cases_match_reference() {
    let cases = common::json_lines("cases/enforce.jsonl");
    assert_eq!(cases.len(), 13);
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let inputs = case["input"].as_array().unwrap();
        let mut output = Vec::new();
        let mut warnings = Vec::new();
        let mut error = None;
        for v in inputs {
            match enforce_event(v.clone()) {
                Ok(e) => {
                    output.extend(e.event.map(|e| serde_json::to_value(e).unwrap()));
                    warnings.extend(e.warnings);
                }
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let want_warnings: Vec<&str> = case["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert_eq!(warnings.len(), want_warnings.len(), "{name}: {warnings:?}");
        for (got, want) in warnings.iter().zip(&want_warnings) {
            match got {
                EnforceWarning::UnrecognisedEvent { event_type } => {
                    assert!(
                        want.contains(&format!("Dropping unrecognised event '{event_type}'")),
                        "{name}"
                    )
                }
                other => assert_eq!(
                    other.path().map(str::to_owned),
                    warning_path(want),
                    "{name}"
                ),
            }
        }
        if case["ok"].as_bool().unwrap() {
            assert!(error.is_none(), "{name}: {error:?}");
            assert_eq!(output, *case["output"].as_array().unwrap(), "{name}");
        } else {
            let err = error.unwrap_or_else(|| panic!("{name}: accepted"));
            // The reference reports zod issues; we report the same field.
            let want: Value = serde_json::from_str(case["error"].as_str().unwrap()).unwrap();
            let want_path: Vec<String> = want[0]["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    p.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| p.to_string())
                })
                .collect();
            assert_eq!(err.source.path, want_path.join("/"), "{name}: {err}");
        }
    }
}

#[test]
fn outgoing_input_cases_match_reference() {
    let cases = common::json_lines("cases/enforce-outgoing.jsonl");
    assert_eq!(cases.len(), 2);
    for case in &cases {
        let (input, warnings) = enforce_outgoing_input(case["input"].clone()).unwrap();
        assert_eq!(serde_json::to_value(&input).unwrap(), case["output"]);
        let got: Vec<Option<String>> = warnings
            .iter()
            .map(|w| w.path().map(str::to_owned))
            .collect();
        let want: Vec<Option<String>> = case["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| warning_path(w.as_str().unwrap()))
            .collect();
        assert_eq!(got, want);
    }
}

#[test]
fn omit_optional_nulls_cases_match_reference() {
    let cases = common::json_lines("cases/omit-optional-nulls.jsonl");
    assert_eq!(cases.len(), 7);
    for case in &cases {
        let root = match case["root"].as_str().unwrap() {
            "Event" => NullsRoot::Event,
            _ => NullsRoot::RunAgentInput,
        };
        let mut v = case["input"].clone();
        omit_optional_nulls(&mut v, root);
        assert_eq!(v, case["output"], "{}", case["input"]);
    }
}
