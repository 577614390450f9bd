//! What a thread's history holds that the client dropped: the encrypted values of
//! reasoning messages and tool calls (a provider's signed or encrypted reasoning, which
//! the model needs back on the next run).
//!
//! CopilotKit's shipped client validates messages with a schema of its protocol
//! version: what it does not know it strips (`encryptedValueType`, new in 1.1), and an
//! older client may strip more. The runtime holds the thread's history, whose
//! `REASONING_ENCRYPTED_VALUE` events say what each message and tool call carried:
//! before the agent sees a thread run's input, a reasoning message, an assistant
//! message or a tool call whose value or type is missing gets them back from there
//! (matched by id; a value the client holds and the history does not is kept as sent).

use std::collections::HashMap;

use agui_sdk_agent::runs::ThreadEntry;
use agui_sdk_core::event::EncryptedValueSubtype;
use agui_sdk_core::{Event, Message, RunAgentInput};

/// Each entity's value and type, as its history recorded them: messages' and tool
/// calls' apart (looked up by id, without copying it).
#[derive(Default)]
struct Recorded {
    messages: HashMap<String, (String, Option<String>)>,
    tool_calls: HashMap<String, (String, Option<String>)>,
}

/// Whether `input` has a reasoning message, an assistant message or a tool call
/// without an encrypted value or its type: only then is the history read for them.
pub(super) fn wants_restore(input: &RunAgentInput) -> bool {
    let incomplete = |v: &Option<String>, t: &Option<String>| v.is_none() || t.is_none();
    input.messages.iter().any(|m| match m {
        Message::Reasoning(r) => incomplete(&r.encrypted_value, &r.encrypted_value_type),
        Message::Assistant(a) => a
            .tool_calls
            .iter()
            .flatten()
            .any(|c| incomplete(&c.encrypted_value, &c.encrypted_value_type)),
        _ => false,
    })
}

/// The encrypted values `history` records, by entity (tool call or message) and id;
/// the last one of an entity wins.
fn recorded(history: &[ThreadEntry]) -> Recorded {
    const NEEDLE: &[u8] = b"REASONING_ENCRYPTED_VALUE";
    let mut out = Recorded::default();
    for line in history.iter().flat_map(ThreadEntry::lines) {
        if !line.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
            continue;
        }
        if let Ok(Event::ReasoningEncryptedValue(e)) = Event::from_json_slice(line) {
            let entities = match e.subtype {
                EncryptedValueSubtype::ToolCall => &mut out.tool_calls,
                EncryptedValueSubtype::Message => &mut out.messages,
            };
            entities.insert(e.entity_id, (e.encrypted_value, e.encrypted_value_type));
        }
    }
    out
}

/// Fills `value` and `ty` from what was recorded for the entity: a missing value (with
/// its type), or the missing type of the same value. Whether anything changed.
fn fill(
    value: &mut Option<String>,
    ty: &mut Option<String>,
    recorded: Option<&(String, Option<String>)>,
) -> bool {
    let Some((v, t)) = recorded else {
        return false;
    };
    match value {
        None => {
            *value = Some(v.clone());
            *ty = t.clone();
            true
        }
        Some(held) if held == v && ty.is_none() && t.is_some() => {
            *ty = t.clone();
            true
        }
        Some(_) => false,
    }
}

/// Restores into `input` the encrypted values (and their types) that `history`
/// records for its messages and tool calls and the client dropped; how many.
pub(super) fn restore(input: &mut RunAgentInput, history: &[ThreadEntry]) -> usize {
    let recorded = recorded(history);
    if recorded.messages.is_empty() && recorded.tool_calls.is_empty() {
        return 0;
    }
    let mut restored = 0;
    for m in &mut input.messages {
        match m {
            Message::Reasoning(r) => {
                let found = recorded.messages.get(&r.id);
                restored += usize::from(fill(
                    &mut r.encrypted_value,
                    &mut r.encrypted_value_type,
                    found,
                ));
            }
            Message::Assistant(a) => {
                let found = recorded.messages.get(&a.id);
                restored += usize::from(fill(
                    &mut a.encrypted_value,
                    &mut a.encrypted_value_type,
                    found,
                ));
                for c in a.tool_calls.iter_mut().flatten() {
                    let found = recorded.tool_calls.get(&c.id);
                    restored += usize::from(fill(
                        &mut c.encrypted_value,
                        &mut c.encrypted_value_type,
                        found,
                    ));
                }
            }
            _ => {}
        }
    }
    restored
}

#[cfg(test)]
mod tests {
    use super::*;
    use agui_sdk_core::event::ReasoningEncryptedValue;
    use bytes::Bytes;

    fn history(events: &[Event]) -> Vec<ThreadEntry> {
        let mut text = String::new();
        for e in events {
            text.push_str(&e.to_json_string());
            text.push('\n');
        }
        vec![ThreadEntry::from_parts(Bytes::from(text), Vec::new())]
    }

    fn input(messages: serde_json::Value) -> RunAgentInput {
        serde_json::from_value(serde_json::json!({
            "threadId": "t", "runId": "r2", "state": {}, "messages": messages,
            "tools": [], "context": [], "forwardedProps": {}
        }))
        .unwrap()
    }

    #[test]
    fn a_dropped_signature_and_a_dropped_type_come_back_from_the_history() {
        let mut sig =
            ReasoningEncryptedValue::new(EncryptedValueSubtype::Message, "think-1", "c2lnbmF0dXJl");
        sig.encrypted_value_type = Some("anthropic.thinking_signature".into());
        let mut call =
            ReasoningEncryptedValue::new(EncryptedValueSubtype::ToolCall, "call-1", "ZW5j");
        call.encrypted_value_type = Some("openai.encrypted_content".into());
        let h = history(&[sig.into(), call.into()]);
        let mut i = input(serde_json::json!([
            {"id": "u1", "role": "user", "content": "hi"},
            {"id": "think-1", "role": "reasoning", "content": "let me see"},
            {"id": "a1", "role": "assistant", "toolCalls": [
                {"id": "call-1", "type": "function", "function": {"name": "f", "arguments": "{}"},
                 "encryptedValue": "ZW5j"}
            ]},
            {"id": "think-2", "role": "reasoning", "content": "other", "encryptedValue": "bWluZQ"}
        ]));
        assert!(wants_restore(&i));
        assert_eq!(restore(&mut i, &h), 2);
        let Message::Reasoning(r) = &i.messages[1] else {
            panic!()
        };
        assert_eq!(r.encrypted_value.as_deref(), Some("c2lnbmF0dXJl"));
        assert_eq!(
            r.encrypted_value_type.as_deref(),
            Some("anthropic.thinking_signature")
        );
        let Message::Assistant(a) = &i.messages[2] else {
            panic!()
        };
        let c = &a.tool_calls.as_ref().unwrap()[0];
        assert_eq!(c.encrypted_value.as_deref(), Some("ZW5j"));
        assert_eq!(
            c.encrypted_value_type.as_deref(),
            Some("openai.encrypted_content")
        );
        // What the history does not know stays as the client sent it.
        let Message::Reasoning(r) = &i.messages[3] else {
            panic!()
        };
        assert_eq!(r.encrypted_value.as_deref(), Some("bWluZQ"));
        assert_eq!(r.encrypted_value_type, None);
    }

    #[test]
    fn a_value_the_client_changed_is_not_overwritten() {
        let sig = ReasoningEncryptedValue::new(EncryptedValueSubtype::Message, "think-1", "old");
        let h = history(&[sig.into()]);
        let mut i = input(serde_json::json!([
            {"id": "think-1", "role": "reasoning", "content": "x", "encryptedValue": "new"}
        ]));
        assert_eq!(restore(&mut i, &h), 0);
        let Message::Reasoning(r) = &i.messages[0] else {
            panic!()
        };
        assert_eq!(r.encrypted_value.as_deref(), Some("new"));
    }

    #[test]
    fn an_input_with_nothing_to_restore_does_not_read_the_history() {
        let i = input(serde_json::json!([{"id": "u1", "role": "user", "content": "hi"}]));
        assert!(!wants_restore(&i));
    }
}
