//! Robustness: arbitrary JSON given to enforcement, and arbitrary decodable event
//! sequences given to every state machine, never panic; enforcement is idempotent.

use agui_sdk_core::semantics::{
    enforce_event, omit_optional_nulls, ChunkExpander, Compactor, NullsRoot, Reducer, Verifier,
};
use agui_sdk_core::Event;
use proptest::prelude::*;
use serde_json::{json, Value};

const KEYS: &[&str] = &[
    "type",
    "messageId",
    "delta",
    "role",
    "content",
    "messages",
    "toolCallId",
    "toolCallName",
    "parentMessageId",
    "subagentRunId",
    "metadata",
    "rawEvent",
    "timestamp",
    "outcome",
    "interrupts",
    "id",
    "reason",
    "source",
    "value",
    "op",
    "path",
    "snapshot",
    "patch",
    "activityType",
    "replace",
    "input",
    "threadId",
    "runId",
    "stepName",
    "name",
    "junk",
];
const TYPES: &[&str] = &[
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TEXT_MESSAGE_CHUNK",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_CHUNK",
    "TOOL_CALL_RESULT",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
    "MESSAGES_SNAPSHOT",
    "ACTIVITY_SNAPSHOT",
    "ACTIVITY_DELTA",
    "REASONING_MESSAGE_CHUNK",
    "SUBAGENT_STARTED",
    "SUBAGENT_FINISHED",
    "STEP_STARTED",
    "STEP_FINISHED",
    "CUSTOM",
    "interrupt",
    "success",
    "user",
    "assistant",
    "activity",
    "image",
    "text",
    "url",
    "add",
    "remove",
    "test",
    "THINKING_START",
];

fn json_tree() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        prop::sample::select(TYPES).prop_map(Value::from),
        prop::sample::select(&["", "/a", "m1", "t1", "s1"][..]).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

fn event_json() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(TYPES),
        prop::collection::vec((prop::sample::select(KEYS), json_tree()), 0..6),
    )
        .prop_map(|(ty, kv)| {
            let mut o: serde_json::Map<String, Value> =
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            o.insert("type".into(), json!(ty));
            Value::Object(o)
        })
}

#[test]
fn generator_produces_accepted_events() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = event_json();
    let mut accepted = 0;
    for _ in 0..2000 {
        let v = strategy.new_tree(&mut runner).unwrap().current();
        if matches!(enforce_event(v), Ok(e) if e.event.is_some()) {
            accepted += 1;
        }
    }
    // Enough random events get through for the state machines to see real input.
    assert!(
        accepted > 40,
        "only {accepted} of 2000 random events were accepted"
    );
    println!("{accepted} of 2000 random events accepted by enforcement");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(800))]

    #[test]
    fn enforcement_never_panics_and_is_idempotent(v in event_json()) {
        let mut nulls = v.clone();
        omit_optional_nulls(&mut nulls, NullsRoot::Event);
        if let Ok(enforced) = enforce_event(v) {
            if let Some(e) = enforced.event {
                // What enforcement lets through passes it again unchanged.
                let again = enforce_event(serde_json::to_value(&e).unwrap()).unwrap();
                prop_assert!(again.warnings.is_empty());
                prop_assert_eq!(again.event, Some(e));
            }
        }
    }

    #[test]
    fn state_machines_never_panic(vs in prop::collection::vec(event_json(), 0..40)) {
        let events: Vec<Event> = vs
            .into_iter()
            .filter_map(|v| enforce_event(v).ok().and_then(|e| e.event))
            .collect();
        let mut verifier = Verifier::new();
        for e in &events {
            if verifier.push(e).is_err() {
                break;
            }
        }
        let mut reducer = Reducer::new(Vec::new(), Some(json!({})));
        for e in &events {
            let _ = reducer.apply(e);
        }
        let _ = ChunkExpander::expand_all(events.clone());
        let _ = Compactor::compact_all(events);
    }
}
