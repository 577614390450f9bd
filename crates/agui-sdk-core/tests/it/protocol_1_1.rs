//! Protocol 1.1's only addition, the optional `encryptedValueType` that travels with
//! every `encryptedValue` (`REASONING_ENCRYPTED_VALUE`, the developer, system,
//! assistant, user, tool and reasoning messages, and tool calls), through every codec:
//! JSON (key order), protobuf (field numbers of the upstream 1.1 wire freeze),
//! enforcement (kept, no warning) and the reducer (stored with the value, replaced,
//! removed when an event carries none).

use crate::common;

use agui_sdk_core::encoding::proto;
use agui_sdk_core::event::{EncryptedValueSubtype, MessagesSnapshot, ReasoningEncryptedValue};
use agui_sdk_core::semantics::{
    enforce_event, enforce_outgoing_input, omit_optional_nulls, NullsRoot, Reducer,
};
use agui_sdk_core::{Event, Message, RunAgentInput, ToolCall};
use serde_json::{json, Value};

/// One message of every role that carries `encryptedValue`, each with a type, as the
/// canonical wire JSON (the type right after the value).
const MESSAGES: &[&str] = &[
    r#"{"id":"d","role":"developer","name":"n","encryptedValue":"v-d","encryptedValueType":"t-d","metadata":{},"content":"c"}"#,
    r#"{"id":"s","role":"system","encryptedValue":"v-s","encryptedValueType":"t-s","content":"c"}"#,
    r#"{"id":"a","role":"assistant","encryptedValue":"v-a","encryptedValueType":"t-a","content":"c","toolCalls":[{"id":"tc","type":"function","function":{"name":"f","arguments":"{}"},"encryptedValue":"v-tc","encryptedValueType":"t-tc","metadata":{"k":1}}]}"#,
    r#"{"id":"u","role":"user","encryptedValue":"v-u","encryptedValueType":"t-u","content":"c"}"#,
    r#"{"id":"t","role":"tool","content":"c","toolCallId":"tc","error":"e","encryptedValue":"v-t","encryptedValueType":"t-t","metadata":{}}"#,
    r#"{"id":"r","role":"reasoning","content":"c","encryptedValue":"v-r","encryptedValueType":"t-r"}"#,
];

const EVENT: &str = r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"m1","encryptedValue":"v","encryptedValueType":"anthropic/thinking-signature"}"#;

fn encrypted_value_type(m: &Message) -> Option<&str> {
    match m {
        Message::Developer(x) => x.encrypted_value_type.as_deref(),
        Message::System(x) => x.encrypted_value_type.as_deref(),
        Message::Assistant(x) => x.encrypted_value_type.as_deref(),
        Message::User(x) => x.encrypted_value_type.as_deref(),
        Message::Tool(x) => x.encrypted_value_type.as_deref(),
        Message::Reasoning(x) => x.encrypted_value_type.as_deref(),
        Message::Activity(_) => None,
    }
}

fn encrypted_value(m: &Message) -> Option<&str> {
    match m {
        Message::Developer(x) => x.encrypted_value.as_deref(),
        Message::System(x) => x.encrypted_value.as_deref(),
        Message::Assistant(x) => x.encrypted_value.as_deref(),
        Message::User(x) => x.encrypted_value.as_deref(),
        Message::Tool(x) => x.encrypted_value.as_deref(),
        Message::Reasoning(x) => x.encrypted_value.as_deref(),
        Message::Activity(_) => None,
    }
}

fn messages() -> Vec<Message> {
    MESSAGES
        .iter()
        .map(|m| agui_sdk_core::wire::from_json_str(m).unwrap())
        .collect()
}

fn tool_call(m: &Message) -> &ToolCall {
    match m {
        Message::Assistant(a) => &a.tool_calls.as_ref().unwrap()[0],
        other => panic!("not an assistant message: {other:?}"),
    }
}

/// A snapshot holding one message of each role, and a run whose input holds them.
fn events_with_messages() -> Vec<Event> {
    let messages: Vec<Value> = MESSAGES
        .iter()
        .map(|m| serde_json::from_str(m).unwrap())
        .collect();
    vec![
        Event::from_json_str(EVENT).unwrap(),
        agui_sdk_core::wire::from_json_value::<Event>(
            &json!({"type": "MESSAGES_SNAPSHOT", "messages": messages}),
        )
        .unwrap(),
        agui_sdk_core::wire::from_json_value::<Event>(&json!({
            "type": "RUN_STARTED", "threadId": "th", "runId": "r1",
            "input": {"threadId": "th", "runId": "r1", "messages": messages,
                      "tools": [], "context": [],
                      // protobuf materialises an absent `resume` as `[]`
                      "resume": []}
        }))
        .unwrap(),
    ]
}

// ---- JSON --------------------------------------------------------------------------

#[test]
fn json_reads_and_writes_the_type_right_after_the_value() {
    for (text, m) in MESSAGES.iter().zip(messages()) {
        let want = &serde_json::from_str::<Value>(text).unwrap()["encryptedValueType"];
        assert_eq!(encrypted_value_type(&m), want.as_str(), "{text}");
        assert_eq!(serde_json::to_string(&m).unwrap(), *text);
    }
    let tc = tool_call(&messages()[2]).clone();
    assert_eq!(tc.encrypted_value_type.as_deref(), Some("t-tc"));
    assert!(tc.extra.is_empty());

    let ev = Event::from_json_str(EVENT).unwrap();
    let Event::ReasoningEncryptedValue(e) = &ev else {
        panic!("{ev:?}")
    };
    assert_eq!(
        e.encrypted_value_type.as_deref(),
        Some("anthropic/thinking-signature")
    );
    assert!(e.extra.is_empty());
    assert_eq!(ev.to_json_string(), EVENT);
}

#[test]
fn json_writes_the_type_after_the_value_whatever_order_it_was_read_in() {
    let ev = Event::from_json_str(
        r#"{"encryptedValueType":"k","type":"REASONING_ENCRYPTED_VALUE","encryptedValue":"v","subtype":"tool-call","entityId":"tc"}"#,
    )
    .unwrap();
    assert_eq!(
        ev.to_json_string(),
        r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"tool-call","entityId":"tc","encryptedValue":"v","encryptedValueType":"k"}"#
    );
    let m: Message = agui_sdk_core::wire::from_json_str(
        r#"{"encryptedValueType":"k","content":"c","encryptedValue":"v","role":"tool","toolCallId":"x","id":"t"}"#,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&m).unwrap(),
        r#"{"id":"t","role":"tool","content":"c","toolCallId":"x","encryptedValue":"v","encryptedValueType":"k"}"#
    );
    // Built in Rust.
    let mut tc = ToolCall::new("tc", "f", "{}");
    tc.encrypted_value = Some("v".into());
    tc.encrypted_value_type = Some("k".into());
    assert_eq!(
        serde_json::to_string(&tc).unwrap(),
        r#"{"id":"tc","type":"function","function":{"name":"f","arguments":"{}"},"encryptedValue":"v","encryptedValueType":"k"}"#
    );
    let mut e = ReasoningEncryptedValue::new(EncryptedValueSubtype::Message, "m", "v");
    e.encrypted_value_type = Some("k".into());
    assert_eq!(
        Event::from(e).to_json_string(),
        r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"m","encryptedValue":"v","encryptedValueType":"k"}"#
    );
}

#[test]
fn json_absent_type_is_not_written_and_null_is_not_a_type() {
    // 1.0 JSON is unchanged: no type, no key.
    let v = ReasoningEncryptedValue::new(EncryptedValueSubtype::Message, "m", "v");
    assert_eq!(
        Event::from(v).to_json_string(),
        r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"m","encryptedValue":"v"}"#
    );
    // `null` is not a spelling of "absent" (strict decoding), but optional-null
    // omission removes it, as for every optional key.
    let with_null = r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"m","encryptedValue":"v","encryptedValueType":null}"#;
    assert!(Event::from_json_str(with_null).is_err());
    let mut value: Value = serde_json::from_str(with_null).unwrap();
    omit_optional_nulls(&mut value, NullsRoot::Event);
    assert!(value.get("encryptedValueType").is_none());
    assert!(agui_sdk_core::wire::from_json_value::<Event>(&value).is_ok());
}

#[test]
fn activity_messages_do_not_define_the_type() {
    let m: Message = agui_sdk_core::wire::from_json_str(
        r#"{"id":"x","role":"activity","activityType":"a","content":{},"encryptedValueType":"k"}"#,
    )
    .unwrap();
    assert_eq!(m.extra().get("encryptedValueType"), Some(json!("k")));
}

// ---- protobuf ----------------------------------------------------------------------

#[test]
fn protobuf_round_trips_the_type_everywhere() {
    for ev in events_with_messages() {
        let mut frame = Vec::new();
        proto::encode_event(&ev, &mut frame);
        let mut dec = proto::ProtoDecoder::new();
        dec.push(&frame);
        let back = dec.next().unwrap().unwrap();
        assert_eq!(back, ev, "{}", ev.event_type());
        assert!(dec.next().is_none());

        let mut bare = Vec::new();
        proto::encode_message(&ev, &mut bare);
        assert_eq!(proto::decode_message(&bare).unwrap(), ev);
    }
}

#[test]
fn protobuf_uses_the_1_1_field_numbers() {
    // ReasoningEncryptedValueEvent.encrypted_value_type = 6, in the envelope's arm 31.
    let ev = Event::from_json_str(
        r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"m1","encryptedValue":"v","encryptedValueType":"t"}"#,
    )
    .unwrap();
    let mut bare = Vec::new();
    proto::encode_message(&ev, &mut bare);
    let mut want = vec![0xfa, 0x01, 23]; // arm 31, length-delimited
    want.extend_from_slice(&[0x0a, 0x02, 0x08, 30]); // base_event { type: 30 }
    want.extend_from_slice(b"\x1a\x07message"); // subtype = 3
    want.extend_from_slice(b"\x22\x02m1"); // entity_id = 4
    want.extend_from_slice(b"\x2a\x01v"); // encrypted_value = 5
    want.extend_from_slice(b"\x32\x01t"); // encrypted_value_type = 6
    assert_eq!(bare, want);

    // Message.encrypted_value_type = 14, in MESSAGES_SNAPSHOT (arm 9, messages = 2).
    let ev = Event::from_json_str(
        r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"r","role":"reasoning","content":"c","encryptedValue":"v","encryptedValueType":"t"}]}"#,
    )
    .unwrap();
    let mut bare = Vec::new();
    proto::encode_message(&ev, &mut bare);
    let mut message = Vec::new();
    message.extend_from_slice(b"\x0a\x01r"); // id = 1
    message.extend_from_slice(b"\x12\x09reasoning"); // role = 2
    message.extend_from_slice(b"\x1a\x01c"); // content = 3
    message.extend_from_slice(b"\x5a\x01v"); // encrypted_value = 11
    message.extend_from_slice(b"\x72\x01t"); // encrypted_value_type = 14
    let mut arm = vec![0x0a, 0x02, 0x08, 8]; // base_event { type: 8 }
    arm.push(0x12);
    arm.push(message.len() as u8);
    arm.extend_from_slice(&message);
    let mut want = vec![0x4a, arm.len() as u8];
    want.extend_from_slice(&arm);
    assert_eq!(bare, want);

    // ToolCall.encrypted_value_type = 6.
    let ev = Event::from_json_str(
        r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"assistant","toolCalls":[{"id":"t","type":"function","function":{"name":"f","arguments":""},"encryptedValue":"v","encryptedValueType":"k"}]}]}"#,
    )
    .unwrap();
    let mut bare = Vec::new();
    proto::encode_message(&ev, &mut bare);
    let mut call = Vec::new();
    call.extend_from_slice(b"\x0a\x01t"); // id = 1
    call.extend_from_slice(b"\x12\x08function"); // type = 2
    call.extend_from_slice(b"\x1a\x03\x0a\x01f"); // function = 3 { name = 1 }
    call.extend_from_slice(b"\x2a\x01v"); // encrypted_value = 5
    call.extend_from_slice(b"\x32\x01k"); // encrypted_value_type = 6
    let mut tool_calls = vec![0x2a, call.len() as u8]; // Message.tool_calls = 5
    tool_calls.extend_from_slice(&call);
    assert!(
        bare.windows(tool_calls.len()).any(|w| w == tool_calls),
        "{bare:02x?}"
    );
}

#[test]
fn protobuf_without_the_type_is_a_1_0_frame() {
    // The same event without the type: the bytes end at encrypted_value, as in 1.0.
    let ev = Event::from(ReasoningEncryptedValue::new(
        EncryptedValueSubtype::Message,
        "m1",
        "v",
    ));
    let mut bare = Vec::new();
    proto::encode_message(&ev, &mut bare);
    assert_eq!(bare.len(), 3 + 4 + 9 + 4 + 3);
    assert!(bare.ends_with(b"\x2a\x01v"));
    assert_eq!(proto::decode_message(&bare).unwrap(), ev);
}

#[test]
fn protobuf_type_on_an_activity_message_is_an_unknown_key() {
    // Message { id: "x", role: "activity", activity_type: "a", activity_content: {},
    // encrypted_value_type: "k" }: activity messages do not define it, so it is kept
    // as an unknown key, as `encryptedValue` is.
    let mut message = Vec::new();
    message.extend_from_slice(b"\x0a\x01x\x12\x08activity");
    message.extend_from_slice(b"\x62\x01a"); // activity_type = 12
    message.extend_from_slice(b"\x6a\x00"); // activity_content = 13 {}
    message.extend_from_slice(b"\x72\x01k"); // encrypted_value_type = 14
    let mut arm = vec![0x0a, 0x02, 0x08, 8, 0x12, message.len() as u8];
    arm.extend_from_slice(&message);
    let mut bare = vec![0x4a, arm.len() as u8];
    bare.extend_from_slice(&arm);
    let Event::MessagesSnapshot(s) = proto::decode_message(&bare).unwrap() else {
        panic!()
    };
    assert!(matches!(s.messages[0], Message::Activity(_)));
    assert_eq!(
        s.messages[0].extra().get("encryptedValueType"),
        Some(json!("k"))
    );
}

// ---- schema ------------------------------------------------------------------------

/// The generator's 1.1 schema is the reference 1.0 schema (kept byte for byte) plus
/// exactly the three `encrypted_value_type` fields and its own header comment.
#[test]
fn the_1_1_schema_is_the_1_0_schema_plus_the_type_fields() {
    let v1_0 = String::from_utf8(common::read("agui-1.0.proto")).unwrap();
    let v1_1 = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("proto/agui-1.1.proto"),
    )
    .unwrap();
    let body = |s: &str| -> Vec<String> {
        let at = s.find("syntax = \"proto3\";").unwrap();
        s[at..].lines().map(str::to_owned).collect()
    };
    let (old, new) = (body(&v1_0), body(&v1_1));
    let added: Vec<&String> = new.iter().filter(|l| !old.contains(l)).collect();
    assert_eq!(
        added,
        [
            "  optional string encrypted_value_type = 6;  // new in 1.1",
            "  optional string encrypted_value_type = 14;  // new in 1.1 (not on activity)",
            "  optional string encrypted_value_type = 6;  // new in 1.1",
        ]
    );
    let kept: Vec<&String> = new.iter().filter(|l| !added.contains(l)).collect();
    assert_eq!(kept, old.iter().collect::<Vec<_>>());
    // In the messages the upstream 1.1 wire freeze names.
    let mut owner = "";
    let mut owners = Vec::new();
    for l in &new {
        if let Some(name) = l.strip_prefix("message ") {
            owner = name.trim_end_matches(" {");
        }
        if l.contains("encrypted_value_type") {
            owners.push(owner);
        }
    }
    assert_eq!(
        owners,
        ["ToolCall", "Message", "ReasoningEncryptedValueEvent"]
    );
}

// ---- enforcement -------------------------------------------------------------------

#[test]
fn enforcement_keeps_the_type_without_warning() {
    for ev in events_with_messages() {
        let value: Value = serde_json::from_str(&ev.to_json_string()).unwrap();
        let enforced = enforce_event(value).unwrap();
        assert_eq!(enforced.warnings, [], "{}", ev.event_type());
        assert_eq!(enforced.event.as_ref(), Some(&ev));
    }
    // The outgoing input too.
    let input = json!({"threadId": "th", "runId": "r1", "messages":
        MESSAGES.iter().map(|m| serde_json::from_str::<Value>(m).unwrap()).collect::<Vec<_>>()});
    let (input, warnings): (RunAgentInput, _) = enforce_outgoing_input(input).unwrap();
    assert_eq!(warnings, []);
    assert_eq!(input.messages, messages());
}

#[test]
fn enforcement_strips_the_type_where_it_is_not_defined() {
    let enforced = enforce_event(json!({"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "x", "role": "activity", "activityType": "a", "content": {},
         "encryptedValueType": "k"}
    ]}))
    .unwrap();
    assert_eq!(
        enforced
            .warnings
            .iter()
            .map(|w| w.path().unwrap())
            .collect::<Vec<_>>(),
        ["/messages/0/encryptedValueType"]
    );
    let enforced = enforce_event(json!({"type": "TOOL_CALL_START", "toolCallId": "t",
        "toolCallName": "f", "encryptedValueType": "k"}))
    .unwrap();
    assert_eq!(enforced.warnings.len(), 1);
}

// ---- reducer -----------------------------------------------------------------------

fn encrypted(subtype: EncryptedValueSubtype, id: &str, v: &str, ty: Option<&str>) -> Event {
    let mut e = ReasoningEncryptedValue::new(subtype, id, v);
    e.encrypted_value_type = ty.map(str::to_owned);
    e.into()
}

#[test]
fn the_reducer_stores_replaces_and_removes_the_type_of_a_message() {
    use EncryptedValueSubtype::Message as M;
    let start: Vec<Message> = messages()
        .into_iter()
        .map(|mut m| {
            // Start without artefacts.
            let mut v = serde_json::to_value(&m).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("encryptedValue");
            o.remove("encryptedValueType");
            m = serde_json::from_value(v).unwrap();
            m
        })
        .collect();
    let ids: Vec<String> = start.iter().map(|m| m.id().to_owned()).collect();
    let mut r = Reducer::new(start, None);
    for id in &ids {
        let at = |r: &Reducer| {
            let m = r.message(id).unwrap();
            (
                encrypted_value(m).map(str::to_owned),
                encrypted_value_type(m).map(str::to_owned),
            )
        };
        // Stored with the value.
        r.apply(&encrypted(M, id, "v1", Some("k1"))).unwrap();
        assert_eq!(at(&r), (Some("v1".into()), Some("k1".into())), "{id}");
        // Replaced with it.
        r.apply(&encrypted(M, id, "v2", Some("k2"))).unwrap();
        assert_eq!(at(&r), (Some("v2".into()), Some("k2".into())), "{id}");
        // A value without a type removes the stale type.
        r.apply(&encrypted(M, id, "v3", None)).unwrap();
        assert_eq!(at(&r), (Some("v3".into()), None), "{id}");
        // And a type comes back with a later value.
        r.apply(&encrypted(M, id, "v4", Some("k4"))).unwrap();
        assert_eq!(at(&r), (Some("v4".into()), Some("k4".into())), "{id}");
        let json = serde_json::to_value(r.message(id).unwrap()).unwrap();
        assert_eq!(json["encryptedValue"], "v4");
        assert_eq!(json["encryptedValueType"], "k4");
    }
}

#[test]
fn the_reducer_stores_replaces_and_removes_the_type_of_a_tool_call() {
    use EncryptedValueSubtype::ToolCall as T;
    let mut r = Reducer::new(
        vec![agui_sdk_core::wire::from_json_str(
            r#"{"id":"a","role":"assistant","toolCalls":[{"id":"tc","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
        )
        .unwrap()],
        None,
    );
    let at = |r: &Reducer| {
        let tc = tool_call(r.message("a").unwrap());
        (tc.encrypted_value.clone(), tc.encrypted_value_type.clone())
    };
    let applied = r.apply(&encrypted(T, "tc", "v1", Some("k1"))).unwrap();
    assert!(applied.messages_changed);
    assert_eq!(at(&r), (Some("v1".into()), Some("k1".into())));
    r.apply(&encrypted(T, "tc", "v2", Some("k2"))).unwrap();
    assert_eq!(at(&r), (Some("v2".into()), Some("k2".into())));
    r.apply(&encrypted(T, "tc", "v3", None)).unwrap();
    assert_eq!(at(&r), (Some("v3".into()), None));
    // The message's own artefact is untouched.
    let Message::Assistant(a) = r.message("a").unwrap() else {
        panic!()
    };
    assert_eq!(
        (&a.encrypted_value, &a.encrypted_value_type),
        (&None, &None)
    );
}

#[test]
fn a_messages_snapshot_replaces_value_and_type_wholesale() {
    let mut r = Reducer::new(messages(), None);
    // The snapshot's reasoning message has a value and no type; its tool call neither.
    let snapshot: Vec<Message> = [
        r#"{"id":"r","role":"reasoning","content":"c","encryptedValue":"new"}"#,
        r#"{"id":"a","role":"assistant","toolCalls":[{"id":"tc","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
        r#"{"id":"u","role":"user","content":"c","encryptedValue":"v","encryptedValueType":"other"}"#,
    ]
    .iter()
    .map(|m| agui_sdk_core::wire::from_json_str(m).unwrap())
    .collect();
    r.apply(&MessagesSnapshot::new(snapshot.clone()).into())
        .unwrap();
    assert_eq!(r.messages().len(), snapshot.len());
    for m in &snapshot {
        assert_eq!(r.message(m.id()), Some(m));
    }
    let reasoning = r.message("r").unwrap();
    assert_eq!(encrypted_value(reasoning), Some("new"));
    assert_eq!(encrypted_value_type(reasoning), None);
    let tc = tool_call(r.message("a").unwrap());
    assert_eq!(
        (&tc.encrypted_value, &tc.encrypted_value_type),
        (&None, &None)
    );
    assert_eq!(encrypted_value_type(r.message("u").unwrap()), Some("other"));
}
