//! Every kind of validation error says what was wrong and where.

use agui_sdk_core::{Event, JsonError, RunAgentInput};

fn err(json: &str) -> JsonError {
    match Event::from_json_str(json) {
        Ok(e) => panic!("accepted {json}: {e:?}"),
        Err(e) => e,
    }
}

#[track_caller]
fn check(json: &str, path: &str, message: &str) {
    let e = err(json);
    assert_eq!(e.path, path, "path for {json}: {e}");
    assert_eq!(e.message, message, "message for {json}");
    assert!(e.line >= 1 && e.column >= 1, "position for {json}");
}

#[test]
fn missing_required_field() {
    check(
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}"#,
        "",
        "missing field `delta`",
    );
}

#[test]
fn missing_type() {
    check(r#"{"messageId":"m"}"#, "", "missing field `type`");
}

#[test]
fn unknown_event_type_lists_the_allowed_ones() {
    let e = err(r#"{"type":"THINKING_START"}"#);
    assert!(
        e.message.starts_with(
            "unknown `type` value `THINKING_START`, expected one of `TEXT_MESSAGE_START`, "
        ),
        "{e}"
    );
    assert!(e.message.ends_with("`SUBAGENT_ERROR`"), "{e}");
    assert_eq!(e.message.matches('`').count(), 2 + 2 + 31 * 2);
}

#[test]
fn type_of_wrong_json_type() {
    check(
        r#"{"type":7}"#,
        "type",
        "invalid type: integer `7`, expected a string",
    );
}

#[test]
fn unknown_enum_value_lists_the_allowed_ones() {
    check(
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"tool"}"#,
        "role",
        "unknown variant `tool`, expected one of `developer`, `system`, `assistant`, `user`",
    );
    check(
        r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"x","entityId":"e","encryptedValue":"v"}"#,
        "subtype",
        "unknown variant `x`, expected `tool-call` or `message`",
    );
}

#[test]
fn timestamp_must_be_a_safe_integer() {
    check(
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":1.5}"#,
        "timestamp",
        "expected an integer timestamp, found the number 1.5",
    );
    check(
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":9007199254740992}"#,
        "timestamp",
        "9007199254740992 is out of range: timestamp must be between -9007199254740991 and 9007199254740991",
    );
    check(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":"1"}"#, "timestamp", "invalid type: string \"1\", expected an integer timestamp between -9007199254740991 and 9007199254740991");
    // 1.0 is the integer 1 in JSON, as the reference reads it.
    let ok = Event::from_json_str(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":1.0}"#)
        .unwrap();
    assert_eq!(ok.timestamp(), Some(1));
}

#[test]
fn null_is_not_absent() {
    check(
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m","rawEvent":null}"#,
        "rawEvent",
        "null is not allowed here: omit the key instead",
    );
    check(
        r#"{"type":"TOOL_CALL_START","toolCallId":"t","toolCallName":"n","parentMessageId":null}"#,
        "parentMessageId",
        "null is not allowed here: omit the key instead",
    );
}

#[test]
fn metadata_must_be_an_object() {
    check(
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m","metadata":[]}"#,
        "metadata",
        "invalid type: sequence, expected a map",
    );
}

#[test]
fn json_pointer_grammar() {
    check(
        r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"a","value":1}]}"#,
        "delta/0/path",
        r#""a" is not a JSON Pointer (expected "" or "/"-prefixed tokens, with `~` only as ~0 or ~1)"#,
    );
}

#[test]
fn unknown_union_member_names_the_tag() {
    check(
        r#"{"type":"STATE_DELTA","delta":[{"op":"nope","path":"/a"}]}"#,
        "delta/0",
        "unknown `op` value `nope`, expected one of `add`, `remove`, `replace`, `move`, `copy`, `test`",
    );
    check(
        r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"robot","content":"x"}]}"#,
        "messages/0",
        "unknown `role` value `robot`, expected one of `developer`, `system`, `assistant`, `user`, `tool`, `activity`, `reasoning`",
    );
}

#[test]
fn nested_missing_field_has_its_path() {
    check(
        r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"data","value":"x"}}]}]}"#,
        "messages/0/content/0/source",
        "missing field `mimeType`",
    );
}

#[test]
fn interrupt_outcome_needs_an_interrupt() {
    check(
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[]}}"#,
        "outcome/interrupts",
        "invalid length 0, expected at least one element",
    );
}

#[test]
fn token_counts_are_non_negative() {
    check(
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":-1}]}"#,
        "usage/0/inputTokens",
        "-1 is out of range: count must be between 0 and 9007199254740991",
    );
}

#[test]
fn content_must_be_text_or_parts() {
    check(
        r#"{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"t","content":5}"#,
        "content",
        "invalid type: integer `5`, expected a string or an array of content parts",
    );
}

#[test]
fn syntax_errors_are_flagged() {
    let e = err(r#"{"type":"TEXT_MESSAGE_END","messageId":"m""#);
    assert!(e.syntax);
    assert_eq!(e.message, "EOF while parsing an object");
    let e = err("[1,2]");
    assert!(!e.syntax);
    assert_eq!(
        e.message,
        "invalid type: sequence, expected an AG-UI event object with a `type`"
    );
}

#[test]
fn run_agent_input_errors() {
    let e = agui_sdk_core::wire::from_json_str::<RunAgentInput>(r#"{"threadId":"t","runId":"r"}"#)
        .unwrap_err();
    assert_eq!(e.message, "missing field `messages`");
    let e = agui_sdk_core::wire::from_json_str::<RunAgentInput>(
        r#"{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"x"}]}"#,
    )
    .unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.message.as_str()),
        ("tools/0", "missing field `description`")
    );
    let e = agui_sdk_core::wire::from_json_str::<RunAgentInput>(r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"maybe"}]}"#).unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.message.as_str()),
        (
            "resume/0/status",
            "unknown variant `maybe`, expected `resolved` or `cancelled`"
        )
    );
}

#[test]
fn display_includes_field_and_position() {
    let e = err(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","rawEvent":null}"#);
    assert_eq!(
        e.to_string(),
        "field `rawEvent`: null is not allowed here: omit the key instead (line 1, column 59)"
    );
}
