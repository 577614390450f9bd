//! A run's input as a Messages request: the history in the order it was produced, each
//! assistant turn's thinking blocks first (replayed byte for byte), then its text, then
//! its `tool_use` blocks; tool results as `tool_result` blocks.

use agui_sdk_core::types::{Content, ContentPart, PartSource, ReasoningMessage};
use agui_sdk_core::{Escaped, Message, RunAgentInput};
use serde_json::{json, Map, Value};

use super::{History, DEFAULT_MAX_TOKENS, REDACTED_TYPE, SIGNATURE_TYPE};
use crate::provider::RequestParts;
use crate::request;
use crate::Thinking;

/// Appends `blocks` as a `role` message, to the last message when it has that role
/// (the API wants the roles to alternate). Nothing is added for no blocks.
pub(super) fn push(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut() {
        if last["role"] == role {
            if let Some(content) = last["content"].as_array_mut() {
                content.extend(blocks);
                return;
            }
        }
    }
    messages.push(json!({ "role": role, "content": blocks }));
}

/// One assistant turn as the history gives it, possibly in several messages (a client
/// may keep a tool call without `parentMessageId` as a message of its own).
#[derive(Default)]
struct AssistantTurn {
    thinking: Vec<Value>,
    text: Vec<Value>,
    tool_use: Vec<Value>,
}

impl AssistantTurn {
    fn flush(&mut self, messages: &mut Vec<Value>) {
        let turn = std::mem::take(self);
        let mut blocks = turn.thinking;
        blocks.extend(turn.text);
        blocks.extend(turn.tool_use);
        push(messages, "assistant", blocks);
    }
}

/// A reasoning message as a thinking block: its value of Anthropic's types, or
/// without a type (taken as a thinking block's signature). A value of another
/// provider's type is never sent.
fn thinking_block(r: &ReasoningMessage) -> Option<Value> {
    let Some(value) = r.encrypted_value.as_deref() else {
        tracing::debug!(message = %Escaped(&r.id), "a reasoning message without a signature is not sent to the model");
        return None;
    };
    match r.encrypted_value_type.as_deref() {
        None | Some(SIGNATURE_TYPE) => Some(json!({
            "type": "thinking",
            "thinking": r.content,
            "signature": value,
        })),
        Some(REDACTED_TYPE) => Some(json!({ "type": "redacted_thinking", "data": value })),
        Some(other) => {
            tracing::warn!(
                message = %Escaped(&r.id),
                value_type = %Escaped(other),
                "a reasoning message's encrypted value is of another provider's type: not sent to the Anthropic model"
            );
            None
        }
    }
}

fn media_source(source: &PartSource) -> Option<Value> {
    match source {
        PartSource::Url(u) => Some(json!({ "type": "url", "url": u.value })),
        PartSource::Data(d) => Some(json!({
            "type": "base64",
            "media_type": d.mime_type,
            "data": d.value,
        })),
        PartSource::File(_) => None,
    }
}

/// A user's content part as a block; what the API cannot take is noted as text, so
/// that nothing is dropped silently.
fn part(p: &ContentPart) -> Value {
    let (kind, media) = match request::media(p) {
        Ok(m) => m,
        Err(text) => return json!({ "type": "text", "text": text }),
    };
    let pdf = match &media.source {
        PartSource::Data(d) => d.mime_type == "application/pdf",
        PartSource::Url(u) => u.value.ends_with(".pdf"),
        PartSource::File(_) => false,
    };
    if kind == "image" || (kind == "document" && pdf) {
        if let Some(source) = media_source(&media.source) {
            return json!({ "type": kind, "source": source });
        }
    }
    let note = request::unsupported_part(kind, &media.source, "Messages API");
    json!({ "type": "text", "text": note })
}

fn user_blocks(c: &Content) -> Vec<Value> {
    match c {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![json!({ "type": "text", "text": t })],
        Content::Parts(parts) => parts.iter().map(part).collect(),
    }
}

/// A tool call's arguments as the `input` object the API wants.
fn tool_input(id: &str, arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            tracing::warn!(call = %Escaped(id), "a tool call's arguments are not a JSON object: sent as {{}}");
            json!({})
        }
    }
}

/// The history the run's input gives.
pub(super) fn history(input: &RunAgentInput, parts: &RequestParts<'_>) -> History {
    let mut h = History::new(input, parts);
    let mut turn = AssistantTurn::default();
    for m in &input.messages {
        match m {
            Message::System(s) => h.system.texts.push(s.content.clone()),
            Message::Developer(d) => h.system.texts.push(d.content.clone()),
            Message::Reasoning(r) => turn.thinking.extend(thinking_block(r)),
            Message::Assistant(a) => {
                if let Some(text) = a.content.as_deref().filter(|t| !t.is_empty()) {
                    turn.text.push(json!({ "type": "text", "text": text }));
                }
                for c in a.tool_calls.iter().flatten() {
                    turn.tool_use.push(json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.function.name,
                        "input": tool_input(&c.id, &c.function.arguments),
                    }));
                }
            }
            Message::User(u) => {
                turn.flush(&mut h.items);
                push(&mut h.items, "user", user_blocks(&u.content));
            }
            Message::Tool(t) => {
                turn.flush(&mut h.items);
                let text = request::tool_result_text(t);
                let mut block = json!({ "type": "tool_result", "tool_use_id": t.tool_call_id, "content": text });
                if t.error.is_some() {
                    block["is_error"] = json!(true);
                }
                push(&mut h.items, "user", vec![block]);
            }
            Message::Activity(_) => {}
        }
    }
    turn.flush(&mut h.items);
    h
}

/// The whole request body.
pub(super) fn body(
    input: &RunAgentInput,
    history: &History,
    parts: &RequestParts<'_>,
    thinking: Option<Thinking>,
) -> Value {
    let mut o = Map::new();
    o.insert("model".into(), json!(parts.model));
    o.insert("max_tokens".into(), json!(DEFAULT_MAX_TOKENS));
    if let Some(system) = history.system.joined() {
        o.insert("system".into(), json!(system));
    }
    o.insert("messages".into(), Value::Array(history.items.clone()));
    o.insert("stream".into(), json!(true));
    match thinking {
        Some(Thinking::Budget(tokens)) => {
            o.insert(
                "thinking".into(),
                json!({ "type": "enabled", "budget_tokens": tokens }),
            );
        }
        Some(Thinking::Adaptive) => {
            o.insert("thinking".into(), json!({ "type": "adaptive" }));
        }
        None => {}
    }
    // A client names the tool to call in `forwardedProps.toolChoice` (in the
    // chat-completions shape, as CopilotKit's suggestion runs do): asked of the model
    // in the Messages API's shape when it names an offered tool. The API refuses a
    // forced tool with thinking on, so that request goes without thinking.
    request::finish_body(
        &mut o,
        input,
        parts,
        request::put_as_is,
        |t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }),
        |o, name| {
            o.insert(
                "tool_choice".into(),
                json!({ "type": "tool", "name": name }),
            );
            o.remove("thinking");
        },
    );
    Value::Object(o)
}
