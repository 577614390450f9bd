//! A run's input as a streaming chat-completions request.

use agui_sdk_core::types::{Content, ContentPart, PartSource};
use agui_sdk_core::{Message, RunAgentInput};
use serde_json::{json, Map, Value};

use crate::provider::RequestParts;
use crate::request;

/// The parts of a message the endpoint cannot take, noted as text so that nothing is
/// silently dropped.
fn part(p: &ContentPart) -> Value {
    let (kind, media) = match request::media(p) {
        Ok(m) => m,
        Err(text) => return json!({ "type": "text", "text": text }),
    };
    match (kind, &media.source) {
        ("image", PartSource::Url(u)) => {
            json!({ "type": "image_url", "image_url": { "url": u.value } })
        }
        ("image", PartSource::Data(d)) => json!({
            "type": "image_url",
            "image_url": { "url": format!("data:{};base64,{}", d.mime_type, d.value) },
        }),
        ("audio", PartSource::Data(d))
            if d.mime_type.contains("wav")
                || d.mime_type.contains("mp3")
                || d.mime_type.contains("mpeg") =>
        {
            let format = if d.mime_type.contains("wav") {
                "wav"
            } else {
                "mp3"
            };
            json!({ "type": "input_audio", "input_audio": { "data": d.value, "format": format } })
        }
        (kind, source) => {
            let note = request::unsupported_part(kind, source, "chat-completions API");
            json!({ "type": "text", "text": note })
        }
    }
}

fn content(c: &Content) -> Value {
    match c {
        Content::Text(t) => json!(t),
        Content::Parts(parts) => Value::Array(parts.iter().map(part).collect()),
    }
}

/// The messages in chat-completions form (reasoning and activity messages are the
/// client's record, not the model's input: they are left out).
pub(crate) fn messages(input: &RunAgentInput, parts: &RequestParts<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(input.messages.len() + 2);
    let system = request::SystemTexts::new(input, parts);
    out.extend(
        system
            .texts
            .into_iter()
            .map(|text| json!({ "role": "system", "content": text })),
    );
    for m in &input.messages {
        match m {
            Message::System(s) => out.push(json!({ "role": "system", "content": s.content })),
            Message::Developer(d) => out.push(json!({ "role": "developer", "content": d.content })),
            Message::User(u) => {
                let mut o = Map::new();
                o.insert("role".into(), json!("user"));
                o.insert("content".into(), content(&u.content));
                if let Some(n) = &u.name {
                    o.insert("name".into(), json!(n));
                }
                out.push(Value::Object(o));
            }
            Message::Assistant(a) => {
                let mut o = Map::new();
                o.insert("role".into(), json!("assistant"));
                o.insert(
                    "content".into(),
                    a.content.as_ref().map_or(Value::Null, |c| json!(c)),
                );
                if let Some(calls) = a.tool_calls.as_ref().filter(|c| !c.is_empty()) {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": { "name": c.function.name, "arguments": c.function.arguments },
                            })
                        })
                        .collect();
                    o.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(o));
            }
            Message::Tool(t) => {
                let text = request::tool_result_text(t);
                out.push(
                    json!({ "role": "tool", "tool_call_id": t.tool_call_id, "content": text }),
                );
            }
            Message::Activity(_) | Message::Reasoning(_) => {}
        }
    }
    out
}

/// The whole request body.
pub(crate) fn body(input: &RunAgentInput, messages: &[Value], parts: &RequestParts<'_>) -> Value {
    let mut o = Map::new();
    o.insert("model".into(), json!(parts.model));
    o.insert("messages".into(), Value::Array(messages.to_vec()));
    o.insert("stream".into(), json!(true));
    o.insert("stream_options".into(), json!({ "include_usage": true }));
    // A client names the tool to call in `forwardedProps.toolChoice`, in the endpoint's
    // own `tool_choice` shape (CopilotKit's suggestion runs do): passed on when it names
    // an offered tool, whether or not `tool_choice` itself is forwardable.
    request::finish_body(
        &mut o,
        input,
        parts,
        request::put_as_is,
        |t| {
            json!({
                "type": "function",
                "function": { "name": t.name, "description": t.description, "parameters": t.parameters },
            })
        },
        |o, name| {
            o.insert(
                "tool_choice".into(),
                json!({ "type": "function", "function": { "name": name } }),
            );
        },
    );
    Value::Object(o)
}
