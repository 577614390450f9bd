//! Deprecated THINKING_* events are translated into REASONING_* as the reference client
//! translates them.

use agui_sdk_core::compat::ThinkingTranslator;
use agui_sdk_core::{Event, EventType, JsonObject};

fn obj(json: &str) -> JsonObject {
    serde_json::from_str(json).unwrap()
}

fn translator() -> ThinkingTranslator {
    let mut n = 0;
    ThinkingTranslator::with_id_minter(move || {
        n += 1;
        format!("id-{n}")
    })
}

#[test]
fn a_thinking_span_becomes_a_reasoning_span() {
    let mut t = translator();
    let input = [
        r#"{"type":"THINKING_START","title":"Plan","timestamp":5}"#,
        r#"{"type":"THINKING_TEXT_MESSAGE_START"}"#,
        r#"{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"hmm"}"#,
        r#"{"type":"THINKING_TEXT_MESSAGE_END"}"#,
        r#"{"type":"THINKING_END"}"#,
    ];
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for line in input {
        let mut o = obj(line);
        warnings.extend(t.translate(&mut o));
        let ev =
            agui_sdk_core::wire::from_json_value::<Event>(&serde_json::Value::Object(o)).unwrap();
        out.push(ev.to_json_string());
    }
    assert_eq!(
        out,
        [
            r#"{"type":"REASONING_START","timestamp":5,"messageId":"id-1"}"#,
            r#"{"type":"REASONING_MESSAGE_START","messageId":"id-2","role":"reasoning"}"#,
            r#"{"type":"REASONING_MESSAGE_CONTENT","messageId":"id-2","delta":"hmm"}"#,
            r#"{"type":"REASONING_MESSAGE_END","messageId":"id-2"}"#,
            r#"{"type":"REASONING_END","messageId":"id-1"}"#,
        ]
    );
    // One notice per translation, plus the lost title.
    assert_eq!(warnings.len(), 6);
    assert!(warnings.iter().any(|w| w.message.contains("title")));
}

#[test]
fn a_continuation_without_opener_gets_a_minted_id_and_a_warning() {
    let mut t = translator();
    let mut o = obj(r#"{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"x"}"#);
    let w = t.translate(&mut o);
    assert_eq!(o["messageId"], "id-1");
    assert!(w.iter().any(|w| w.message.contains("no THINKING opener")));
}

#[test]
fn other_events_are_untouched() {
    let mut t = translator();
    let mut o = obj(r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#);
    let before = o.clone();
    assert!(t.translate(&mut o).is_empty());
    assert_eq!(o, before);
    // A 1.0 parse rejects the deprecated names.
    assert!(Event::from_json_str(r#"{"type":"THINKING_START"}"#).is_err());
    assert!(EventType::from_wire("THINKING_START").is_none());
}
