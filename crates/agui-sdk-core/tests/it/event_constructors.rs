//! Every event type has a short constructor on `Event`, and what it builds is valid on
//! the wire (it decodes back to itself).

use agui_sdk_core::event::EncryptedValueSubtype;
use agui_sdk_core::{Event, EventType, Message};
use serde_json::json;

#[test]
fn every_event_type_has_a_constructor() {
    let patch =
        agui_sdk_core::wire::from_json_value(&json!([{"op": "add", "path": "/a", "value": 1}]))
            .unwrap();
    let content = json!({"k": 1}).as_object().unwrap().clone();
    let built = vec![
        Event::text_message_start("m"),
        Event::text_message_content("m", "x"),
        Event::text_message_end("m"),
        Event::text_message_chunk("m", "x"),
        Event::tool_call_start("c", "tool"),
        Event::tool_call_args("c", "{}"),
        Event::tool_call_end("c"),
        Event::tool_call_chunk("c", "tool", "{}"),
        Event::tool_call_result("r", "c", "done"),
        Event::state_snapshot(json!({})),
        Event::state_delta(patch),
        Event::messages_snapshot(vec![Message::user("u", "hi")]),
        Event::activity_snapshot("a", "search", content),
        Event::activity_delta("a", "search", Vec::new()),
        Event::raw(json!({"x": 1})),
        Event::custom("name", json!(1)),
        Event::run_started("t", "r"),
        Event::run_finished("t", "r"),
        Event::run_error("boom"),
        Event::step_started("s"),
        Event::step_finished("s"),
        Event::reasoning_start("m"),
        Event::reasoning_message_start("m"),
        Event::reasoning_message_content("m", "x"),
        Event::reasoning_message_end("m"),
        Event::reasoning_message_chunk("m", "x"),
        Event::reasoning_end("m"),
        Event::reasoning_encrypted_value(EncryptedValueSubtype::Message, "m", "b3BhcXVl"),
        Event::subagent_started("s", "helper"),
        Event::subagent_finished("s"),
        Event::subagent_error("s", "failed"),
    ];
    let mut types: Vec<EventType> = built.iter().map(Event::event_type).collect();
    types.sort();
    let mut all = EventType::ALL.to_vec();
    all.sort();
    assert_eq!(types, all, "one constructor per event type");
    for e in &built {
        let back = Event::from_json_str(&e.to_json_string()).unwrap();
        assert_eq!(&back, e);
    }
}

/// The common events stay small: the rare large ones (`RUN_FINISHED`, `SUBAGENT_*`,
/// tool call starts and results, snapshots, `RAW`, `CUSTOM`, chunks, …) are boxed, so
/// that an `Event` costs what a `TEXT_MESSAGE_START` does (it was 480 bytes).
#[test]
fn an_event_is_the_size_of_the_common_ones() {
    let event = std::mem::size_of::<Event>();
    let start = std::mem::size_of::<agui_sdk_core::event::TextMessageStart>();
    assert!(
        event <= start + 8,
        "Event is {event} bytes, TEXT_MESSAGE_START {start}"
    );
    // `rawEvent`, `metadata` and unknown keys, rare on every event, are boxed too: an
    // event that does not carry them does not pay for them (it was 312 bytes).
    assert!(event <= 128, "Event is {event} bytes");
    eprintln!("Event: {event} bytes");
}
