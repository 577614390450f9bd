//! The inbound pipeline (compatibility, era shims, enforcement, expansion, verification,
//! reduction): the golden stream, and each strip or fatal rule with its exact path.

use crate::common;

use agui_sdk_core::semantics::{
    verified, Inbound, InboundConfig, InboundError, InboundWarning, ProtocolVersion, Reducer,
    WarningKind,
};
use agui_sdk_core::{Event, EventType};
use serde_json::{json, Value};

/// Runs raw JSON frames through a default pipeline; returns the delivered events (as
/// JSON), the warnings, and the first error.
fn run(frames: &[Value]) -> (Vec<Value>, Vec<InboundWarning>, Option<InboundError>) {
    run_with(InboundConfig::default(), frames)
}

fn run_with(
    config: InboundConfig,
    frames: &[Value],
) -> (Vec<Value>, Vec<InboundWarning>, Option<InboundError>) {
    let mut p = Inbound::new(config);
    let (mut out, mut warnings) = (Vec::new(), Vec::new());
    let mut error = None;
    for f in frames {
        if let Err(e) = p.push_json(f.to_string().as_bytes(), &mut out, &mut warnings) {
            error = Some(e);
            break;
        }
    }
    let out = out
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    (out, warnings, error)
}

fn started() -> Value {
    json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
}

fn finished() -> Value {
    json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
}

fn paths(w: &[InboundWarning]) -> Vec<&str> {
    w.iter().filter_map(InboundWarning::path).collect()
}

#[test]
fn golden_stream_through_the_inbound_pipeline() {
    let mut p = Inbound::default();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for line in common::lines("events.jsonl") {
        p.push_json(line.as_bytes(), &mut out, &mut warnings)
            .unwrap();
    }
    let got: Vec<Value> = out
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(got, common::json_lines("events.expanded.jsonl"));
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn the_typed_path_and_the_value_path_agree() {
    // Values go through enforcement directly; JSON takes the typed fast path and falls
    // back only when it meets something unknown. Both give the same events.
    let mut by_json = Inbound::default();
    let mut by_value = Inbound::default();
    let (mut a, mut b, mut wa, mut wb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for line in common::lines("events.jsonl") {
        let mut v: Value = serde_json::from_str(&line).unwrap();
        v["vendorKey"] = json!(1);
        by_json
            .push_json(v.to_string().as_bytes(), &mut a, &mut wa)
            .unwrap();
        by_value.push_value(v, &mut b, &mut wb).unwrap();
    }
    assert_eq!(a, b);
    assert_eq!(wa, wb);
    assert_eq!(wa.len(), common::lines("events.jsonl").len());
    assert!(wa.iter().all(|w| w.path() == Some("/vendorKey")));
}

#[test]
fn unknown_property_is_stripped_with_its_path() {
    let (out, w, err) = run(&[
        started(),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "futureProp": {"a": 1}}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
        finished(),
    ]);
    assert!(err.is_none());
    assert_eq!(
        out[2],
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"})
    );
    assert_eq!(paths(&w), ["/futureProp"]);
    assert_eq!(w[0].index, 2);
    assert_eq!(
        w[0].to_string(),
        "event 2: removed unrecognised material at '/futureProp' on TEXT_MESSAGE_CONTENT"
    );
}

#[test]
fn unknown_event_type_is_dropped_with_its_name() {
    let (out, w, err) = run(&[
        started(),
        json!({"type": "FUTURE_EVENT", "x": 1}),
        finished(),
    ]);
    assert!(err.is_none());
    assert_eq!(out.len(), 2);
    assert_eq!(w.len(), 1);
    assert!(w[0].to_string().contains("'FUTURE_EVENT'"), "{}", w[0]);
    assert_eq!(w[0].index, 1);
}

#[test]
fn unknown_patch_ops_are_dropped_and_the_rest_applies() {
    let frames = [
        started(),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"count": 1}}),
        json!({"type": "STATE_DELTA", "delta": [
            {"op": "increment", "path": "/count"},
            {"op": "replace", "path": "/count", "value": 5, "vendor": "kept"}
        ]}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "x", "content": {"n": 1}}),
        json!({"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "x", "patch": [
            {"op": "frobnicate", "path": "/n"},
            {"op": "replace", "path": "/n", "value": 2}
        ]}),
        finished(),
    ];
    let mut p = Inbound::with_reducer(InboundConfig::default(), Reducer::default());
    let (mut out, mut w) = (Vec::new(), Vec::new());
    for f in &frames {
        p.push_json(f.to_string().as_bytes(), &mut out, &mut w)
            .unwrap();
    }
    assert_eq!(paths(&w), ["/delta/0", "/patch/0"]);
    // Extra members of a known op are RFC 6902's to keep.
    assert_eq!(
        serde_json::to_value(&out[2]).unwrap()["delta"],
        json!([{"op": "replace", "path": "/count", "value": 5, "vendor": "kept"}])
    );
    let r = p.reducer().unwrap();
    assert_eq!(r.state(), Some(&json!({"count": 5})));
    assert_eq!(r.to_json()["messages"][0]["content"], json!({"n": 2}));
}

#[test]
fn unknown_outcome_is_stripped_and_an_array_is_fatal() {
    let (out, w, err) = run(&[
        started(),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "paused"}}),
    ]);
    assert!(err.is_none());
    assert_eq!(paths(&w), ["/outcome"]);
    assert!(out[1].get("outcome").is_none());

    let (out, _, err) = run(&[
        started(),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": [{"type": "success"}]}),
    ]);
    assert_eq!(out.len(), 1, "RUN_STARTED is delivered before the failure");
    let err = err.expect("an array in the outcome slot is fatal");
    let text = err.to_string();
    assert!(
        text.starts_with("event 1: RUN_FINISHED: field `outcome`: invalid type: sequence"),
        "{text}"
    );
    assert!(matches!(err, InboundError::Malformed { index: 1, .. }));
}

#[test]
fn unknown_parts_sources_and_roles_in_message_lists() {
    let (out, w, err) = run(&[
        started(),
        json!({"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "u1", "role": "user", "content": [
                {"type": "text", "text": "a"},
                {"type": "hologram", "uri": "x"},
                {"type": "image", "source": {"type": "telepathy", "value": "x"}},
                {"type": "text", "text": "b"}
            ]},
            {"id": "x1", "role": "oracle", "content": "?"},
            {"id": "a1", "role": "assistant", "content": "ok", "futureMsgProp": 1}
        ]}),
        finished(),
    ]);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        paths(&w),
        [
            "/messages/0/content/1",
            "/messages/0/content/2",
            "/messages/1",
            "/messages/2/futureMsgProp"
        ]
    );
    let messages = &out[1]["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 2);
    assert_eq!(
        messages[0]["content"],
        json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    );
}

#[test]
fn malformed_known_fields_and_unknown_enum_values_are_fatal() {
    let (_, _, err) = run(&[
        started(),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42}),
    ]);
    let err = err.unwrap();
    assert!(matches!(err, InboundError::Malformed { index: 2, .. }));
    assert!(err.to_string().contains("field `delta`"), "{err}");

    // As the reference client (and the corpus's admitted gap): a closed string set is a
    // leaf, so an unknown member is fatal rather than stripped.
    let (_, w, err) = run(&[
        started(),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "narrator"}),
    ]);
    assert!(w.is_empty());
    assert!(err.unwrap().to_string().contains("field `role`"));
}

#[test]
fn lifecycle_errors_name_the_rule_and_the_index() {
    let (out, _, err) = run(&[
        started(),
        json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x", "junk": 1}),
        finished(),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
    ]);
    assert_eq!(out.len(), 5);
    let err = err.unwrap();
    assert!(matches!(err, InboundError::Verify { .. }));
    assert!(
        err.to_string()
            .starts_with("event 5: Cannot send event type 'TEXT_MESSAGE_END'"),
        "{err}"
    );
}

#[test]
fn thinking_events_are_translated_with_a_warning() {
    let (out, w, err) = run(&[
        started(),
        json!({"type": "THINKING_START", "title": "t"}),
        json!({"type": "THINKING_END"}),
        finished(),
    ]);
    assert!(err.is_none(), "{err:?}");
    let types: Vec<&str> = out.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "RUN_STARTED",
            "REASONING_START",
            "REASONING_END",
            "RUN_FINISHED"
        ]
    );
    // One warning says what was converted, once per event.
    let converted = |from: &str| {
        w.iter()
            .filter(|w| w.to_string().contains(&format!("deprecated {from} ")))
            .count()
    };
    assert_eq!(converted("THINKING_START"), 1, "{w:#?}");
    assert_eq!(converted("THINKING_END"), 1, "{w:#?}");
    assert!(w.iter().any(|w| w
        .to_string()
        .contains("converted the deprecated THINKING_START to REASONING_START")));
    assert!(w
        .iter()
        .any(|w| w.to_string().contains("THINKING_START.title")));
    // Without translation, they are unknown events, dropped.
    let (out, w, _) = run_with(
        InboundConfig::default().compat(false),
        &[started(), json!({"type": "THINKING_START"}), finished()],
    );
    assert_eq!(out.len(), 2);
    assert!(matches!(w[0].kind, WarningKind::Enforce(_)));
}

#[test]
fn the_producers_declared_version() {
    let declare = |v: &str| {
        run(&[
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": v}),
            finished(),
        ])
        .1
    };
    assert!(declare("1.1").is_empty());
    assert!(declare("1.0").is_empty());
    let w = declare("1.2");
    assert!(matches!(w[0].kind, WarningKind::Version(_)));
    assert!(
        w[0].to_string().contains("1.2, newer than the 1.1"),
        "{}",
        w[0]
    );
    assert!(declare("draft")[0].to_string().contains("cannot interpret"));
}

#[test]
fn a_peer_before_subagents_loses_them_with_a_warning() {
    let config =
        InboundConfig::default().max_protocol_version(ProtocolVersion::parse("0.0.57").unwrap());
    let (out, w, err) = run_with(
        config,
        &[
            started(),
            json!({"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "subagentRunId": "s"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m", "subagentRunId": "s"}),
            json!({"type": "SUBAGENT_FINISHED", "subagentRunId": "s"}),
            finished(),
        ],
    );
    assert!(err.is_none(), "{err:?}");
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|e| e.get("subagentRunId").is_none()));
    let texts: Vec<String> = w.iter().map(ToString::to_string).collect();
    assert_eq!(texts.len(), 2);
    assert!(
        texts[0].starts_with("event 1: dropping SUBAGENT_STARTED"),
        "{texts:?}"
    );
}

#[test]
fn strict_mode_keeps_unknown_keys_and_fails_on_unknown_types() {
    let config = InboundConfig::default().enforce(false);
    let (out, w, err) = run_with(
        config.clone(),
        &[
            started(),
            json!({"type": "RAW", "event": 1, "vendor": 2}),
            finished(),
        ],
    );
    assert!(err.is_none() && w.is_empty());
    assert_eq!(out[1]["vendor"], 2);
    let (_, _, err) = run_with(config, &[started(), json!({"type": "FUTURE_EVENT"})]);
    assert!(err.unwrap().to_string().contains("FUTURE_EVENT"));
}

#[test]
fn typed_events_skip_enforcement_but_not_the_rest() {
    let mut p = Inbound::default();
    let (mut out, mut w) = (Vec::new(), Vec::new());
    p.push_event(Event::run_started("t", "r"), &mut out, &mut w)
        .unwrap();
    let chunk = agui_sdk_core::event::TextMessageChunk {
        message_id: Some("m".into()),
        delta: Some("x".into()),
        ..Default::default()
    };
    p.push_event(chunk.into(), &mut out, &mut w).unwrap();
    p.push_event(Event::run_finished("t", "r"), &mut out, &mut w)
        .unwrap();
    let types: Vec<EventType> = out.iter().map(Event::event_type).collect();
    assert_eq!(types.len(), 5);
    assert_eq!(types[1], EventType::TextMessageStart);
}

#[test]
fn not_json_is_malformed_with_a_position() {
    let mut p = Inbound::default();
    let err = p
        .push_json(
            b"{\"type\":\"RUN_STARTED\",",
            &mut Vec::new(),
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(matches!(err, InboundError::Malformed { index: 0, .. }));
    assert!(err.to_string().contains("line 1"), "{err}");
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
