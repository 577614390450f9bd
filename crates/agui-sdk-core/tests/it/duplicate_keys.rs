//! One duplicate-key rule in every decoder, tags included: the last occurrence wins, as
//! `JSON.parse` (and so a JavaScript gateway in front of us) reads it. Before, the
//! union tags (`type`, `role`) kept their first occurrence: a message could be a system
//! message to us and a user message to JavaScript.

use agui_sdk_core::{Event, Message, RunAgentInput};

#[test]
fn a_repeated_role_is_read_as_javascript_reads_it() {
    let input: RunAgentInput = agui_sdk_core::wire::from_json_str(
        r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"system","role":"user","content":"hi"}]}"#,
    )
    .unwrap();
    assert!(
        matches!(input.messages[0], Message::User(_)),
        "{:?}",
        input.messages[0]
    );
}

#[test]
fn a_repeated_event_type_is_read_as_javascript_reads_it() {
    let e = Event::from_json_str(
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","type":"RUN_FINISHED"}"#,
    )
    .unwrap();
    assert!(matches!(e, Event::RunFinished(_)), "{e:?}");
    // Nested: a message inside a snapshot.
    let e = Event::from_json_str(
        r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"role":"developer","id":"a","content":"x","role":"user"}]}"#,
    )
    .unwrap();
    match e {
        Event::MessagesSnapshot(s) => assert!(matches!(s.messages[0], Message::User(_))),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tag_repeated_with_the_same_value_is_harmless_and_other_keys_keep_last_wins() {
    let e = Event::from_json_str(
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"x","type":"TEXT_MESSAGE_CONTENT","messageId":"b"}"#,
    )
    .unwrap();
    match e {
        Event::TextMessageContent(c) => assert_eq!(c.message_id, "b"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_inbound_pipeline_reads_the_last_tag_too() {
    use agui_sdk_core::semantics::{InboundConfig, Intake};
    let mut intake = Intake::new(InboundConfig::default());
    let (mut out, mut warnings) = (Vec::new(), Vec::new());
    intake
        .push_json(
            br#"{"type":"RUN_STARTED","threadId":"t","runId":"r","type":"RUN_ERROR","message":"m"}"#,
            &mut out,
            &mut warnings,
        )
        .unwrap();
    assert!(matches!(out[0], Event::RunError(_)), "{out:?}");
}

#[test]
fn a_lone_surrogate_is_refused_with_a_message_that_says_so() {
    let err = Event::from_json_str(r#"{"type":"CUSTOM","name":"\ud800","value":1}"#).unwrap_err();
    assert!(err.message.contains("lone UTF-16 surrogate"), "{err}");
    assert_eq!(err.path, "name");
    // A surrogate pair is a character.
    let e = Event::from_json_str(r#"{"type":"CUSTOM","name":"\ud83d\ude00","value":1}"#).unwrap();
    match e {
        Event::Custom(c) => assert_eq!(c.name, "\u{1f600}"),
        other => panic!("{other:?}"),
    }
}
