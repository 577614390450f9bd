//! A run's input as a stateless Responses request (`store: false`, the reasoning's
//! encrypted content asked for): the history in the order it was produced, each
//! assistant turn's reasoning items first (id, summary and encrypted content byte for
//! byte), then its text, then its `function_call` items; tool results as
//! `function_call_output` items by `call_id`.

use agui_sdk_core::types::{Content, ContentPart, PartSource, ReasoningMessage};
use agui_sdk_core::{Escaped, Message, RunAgentInput};
use serde_json::{json, Map, Value};

use super::{History, ENCRYPTED_TYPE};
use crate::provider::RequestParts;
use crate::request;
use crate::Effort;

/// One assistant turn as the history gives it, possibly in several messages.
#[derive(Default)]
struct AssistantTurn {
    reasoning: Vec<Value>,
    text: Vec<Value>,
    calls: Vec<Value>,
}

impl AssistantTurn {
    fn flush(&mut self, items: &mut Vec<Value>) {
        let turn = std::mem::take(self);
        items.extend(turn.reasoning);
        items.extend(turn.text);
        items.extend(turn.calls);
    }
}

/// A reasoning message as a reasoning item: its value of OpenAI's type, or without a
/// type (taken as OpenAI's own). A value of another provider's type is never sent.
fn reasoning_item(r: &ReasoningMessage) -> Option<Value> {
    let Some(value) = r.encrypted_value.as_deref() else {
        tracing::debug!(message = %Escaped(&r.id), "a reasoning message without encrypted content is not sent to the model");
        return None;
    };
    match r.encrypted_value_type.as_deref() {
        None | Some(ENCRYPTED_TYPE) => {
            let summary = if r.content.is_empty() {
                json!([])
            } else {
                json!([{ "type": "summary_text", "text": r.content }])
            };
            Some(json!({
                "type": "reasoning",
                "id": r.id,
                "summary": summary,
                "encrypted_content": value,
            }))
        }
        Some(other) => {
            tracing::warn!(
                message = %Escaped(&r.id),
                value_type = %Escaped(other),
                "a reasoning message's encrypted value is of another provider's type: not sent to the OpenAI Responses model"
            );
            None
        }
    }
}

/// A user's content part as an input content item; what the API cannot take is noted
/// as text, so that nothing is dropped silently.
fn part(p: &ContentPart) -> Value {
    let (kind, media) = match request::media(p) {
        Ok(m) => m,
        Err(text) => return json!({ "type": "input_text", "text": text }),
    };
    match (kind, &media.source) {
        ("image", PartSource::Url(u)) => {
            return json!({ "type": "input_image", "image_url": u.value, "detail": "auto" })
        }
        ("image", PartSource::Data(d)) => {
            return json!({
                "type": "input_image",
                "image_url": format!("data:{};base64,{}", d.mime_type, d.value),
                "detail": "auto",
            })
        }
        ("document", PartSource::Url(u)) => {
            return json!({ "type": "input_file", "file_url": u.value })
        }
        ("document", PartSource::Data(d)) if d.mime_type == "application/pdf" => {
            return json!({
                "type": "input_file",
                "filename": "document.pdf",
                "file_data": format!("data:{};base64,{}", d.mime_type, d.value),
            })
        }
        _ => {}
    }
    let note = request::unsupported_part(kind, &media.source, "Responses API");
    json!({ "type": "input_text", "text": note })
}

fn user_item(c: &Content) -> Option<Value> {
    let content = match c {
        Content::Text(t) if t.is_empty() => return None,
        Content::Text(t) => json!(t),
        Content::Parts(parts) => Value::Array(parts.iter().map(part).collect()),
    };
    Some(json!({ "type": "message", "role": "user", "content": content }))
}

/// The history the run's input gives.
pub(super) fn history(input: &RunAgentInput, parts: &RequestParts<'_>) -> History {
    let mut h = History::new(input, parts);
    let mut turn = AssistantTurn::default();
    for m in &input.messages {
        match m {
            Message::System(s) => {
                turn.flush(&mut h.items);
                h.items
                    .push(json!({ "type": "message", "role": "system", "content": s.content }));
            }
            Message::Developer(d) => {
                turn.flush(&mut h.items);
                h.items
                    .push(json!({ "type": "message", "role": "developer", "content": d.content }));
            }
            Message::Reasoning(r) => turn.reasoning.extend(reasoning_item(r)),
            Message::Assistant(a) => {
                if let Some(text) = a.content.as_deref().filter(|t| !t.is_empty()) {
                    turn.text
                        .push(json!({ "type": "message", "role": "assistant", "content": text }));
                }
                for c in a.tool_calls.iter().flatten() {
                    turn.calls.push(json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.function.name,
                        "arguments": c.function.arguments,
                    }));
                }
            }
            Message::User(u) => {
                turn.flush(&mut h.items);
                h.items.extend(user_item(&u.content));
            }
            Message::Tool(t) => {
                turn.flush(&mut h.items);
                let text = request::tool_result_text(t);
                h.items.push(json!({
                    "type": "function_call_output",
                    "call_id": t.tool_call_id,
                    "output": text,
                }));
            }
            Message::Activity(_) => {}
        }
    }
    turn.flush(&mut h.items);
    h
}

/// Puts a model parameter in the body under the Responses API's name for it; one it
/// does not take is left out, with a warning.
fn put_param(o: &mut Map<String, Value>, name: &str, value: &Value) {
    match name {
        "max_tokens" | "max_completion_tokens" => {
            o.insert("max_output_tokens".into(), value.clone());
        }
        "reasoning_effort" => {
            let reasoning = o.entry("reasoning").or_insert_with(|| json!({}));
            if let Some(r) = reasoning.as_object_mut() {
                r.insert("effort".into(), value.clone());
            }
        }
        "tool_choice" => {
            // The chat-completions shape names the function under `function`.
            let v = match value.pointer("/function/name") {
                Some(n) => json!({ "type": "function", "name": n }),
                None => value.clone(),
            };
            o.insert("tool_choice".into(), v);
        }
        "stop" | "seed" | "presence_penalty" | "frequency_penalty" | "top_k" | "stop_sequences" => {
            tracing::warn!(
                param = %Escaped(name),
                "a model parameter the Responses API does not take is not sent"
            );
        }
        "reasoning" => {
            // Merged with an effort already set.
            match (o.get_mut("reasoning"), value) {
                (Some(Value::Object(have)), Value::Object(new)) => {
                    for (k, v) in new {
                        have.insert(k.clone(), v.clone());
                    }
                }
                _ => {
                    o.insert("reasoning".into(), value.clone());
                }
            }
        }
        _ => {
            o.insert(name.to_owned(), value.clone());
        }
    }
}

/// The whole request body.
pub(super) fn body(
    input: &RunAgentInput,
    history: &History,
    parts: &RequestParts<'_>,
    effort: Option<Effort>,
) -> Value {
    let mut o = Map::new();
    o.insert("model".into(), json!(parts.model));
    if let Some(instructions) = history.system.joined() {
        o.insert("instructions".into(), json!(instructions));
    }
    o.insert("input".into(), Value::Array(history.items.clone()));
    o.insert("stream".into(), json!(true));
    // Stateless: nothing is kept upstream, the reasoning comes back encrypted and goes
    // back with the next request.
    o.insert("store".into(), json!(false));
    o.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(e) = effort {
        o.insert("reasoning".into(), json!({ "effort": e.as_str() }));
    }
    // A client names the tool to call in `forwardedProps.toolChoice` (in the
    // chat-completions shape, as CopilotKit's suggestion runs do): asked of the model
    // in the Responses API's shape when it names an offered tool.
    request::finish_body(
        &mut o,
        input,
        parts,
        put_param,
        |t| {
            json!({
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": false,
            })
        },
        |o, name| {
            o.insert(
                "tool_choice".into(),
                json!({ "type": "function", "name": name }),
            );
        },
    );
    Value::Object(o)
}
