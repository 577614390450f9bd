//! Messages, content parts, tool calls and the run input, from their protobuf form: the
//! merged wire `Message` is rebuilt by role, as the reference decoder rebuilds it.

use crate::JsonText;
use serde_json::Value as Json;

use super::super::generated as pb;
use super::{any, not_null, strukt, R};
use crate::types::*;
use crate::JsonObject;

fn source(s: Option<pb::InputContentSource>, kind: &str) -> R<Option<PartSource>> {
    use pb::input_content_source::Source;
    let s = s.ok_or_else(|| format!("a {kind} part has no source"))?;
    Ok(match s.source {
        Some(Source::Data(d)) => Some(PartSource::Data(DataSource {
            value: d.value,
            mime_type: d.mime_type,
            ..DataSource::wire_blank()
        })),
        Some(Source::Url(u)) => Some(PartSource::Url(UrlSource {
            value: u.value,
            mime_type: u.mime_type,
            ..UrlSource::wire_blank()
        })),
        Some(Source::File(f)) => Some(PartSource::File(FileSource {
            value: f.value,
            provider: f.provider,
            mime_type: f.mime_type,
            ..FileSource::wire_blank()
        })),
        None => None,
    })
}

/// A content part, `None` when it (or its source) names no known arm.
fn part(p: pb::InputContent) -> R<Option<ContentPart>> {
    use pb::input_content::Part;
    macro_rules! media {
        ($variant:ident, $p:expr, $kind:literal) => {{
            let p = $p;
            match source(p.source, $kind)? {
                None => None,
                Some(source) => Some(ContentPart::$variant(MediaPart {
                    id: p.id,
                    source,
                    metadata: not_null(p.metadata, concat!($kind, " part metadata"))?
                        .map(Into::into),
                    ..MediaPart::wire_blank()
                })),
            }
        }};
    }
    Ok(match p.part {
        Some(Part::Text(t)) => Some(ContentPart::Text(TextPart {
            id: t.id,
            text: t.text,
            metadata: not_null(t.metadata, "text part metadata")?.map(Into::into),
            ..TextPart::wire_blank()
        })),
        Some(Part::Image(p)) => media!(Image, p, "image"),
        Some(Part::Audio(p)) => media!(Audio, p, "audio"),
        Some(Part::Video(p)) => media!(Video, p, "video"),
        Some(Part::Document(p)) => media!(Document, p, "document"),
        None => None,
    })
}

pub(in crate::encoding::proto) fn parts(p: Vec<pb::InputContent>) -> R<Vec<ContentPart>> {
    let mut out = Vec::with_capacity(p.len());
    for p in p {
        if let Some(p) = part(p)? {
            out.push(p);
        } else {
            log_warn!(
                "dropped a protobuf content part this version does not know (no known part or source kind)"
            );
        }
    }
    Ok(out)
}

fn tool_call(t: pb::ToolCall) -> R<ToolCall> {
    if t.r#type != "function" {
        return Err(format!("tool call type {:?} is not \"function\"", t.r#type));
    }
    let f = t.function.ok_or("a tool call has no function")?;
    Ok(ToolCall {
        id: t.id,
        r#type: ToolCallType::Function,
        function: FunctionCall {
            name: f.name,
            arguments: f.arguments,
            ..FunctionCall::wire_blank()
        },
        encrypted_value: t.encrypted_value,
        encrypted_value_type: t.encrypted_value_type,
        metadata: strukt(t.metadata).map(Into::into),
        ..ToolCall::wire_blank()
    })
}

fn put(extra: &mut JsonObject, key: &str, v: Option<String>) {
    if let Some(v) = v {
        extra.insert(key.to_owned(), Json::String(v));
    }
}

/// The declared shape of the message with this role (`None` for an unknown role).
fn message_shape(role: &str) -> Option<&'static crate::wire::shape::Obj> {
    use crate::wire::shape::{Shape, WireShape};
    match <Message as WireShape>::SHAPE {
        Shape::Union(u) => u.member(role),
        _ => None,
    }
}

fn message(m: pb::Message) -> R<Message> {
    let role = m.role.as_str();
    let uses_parts = matches!(role, "user" | "tool");
    let uses_map = role == "activity";
    // What each role defines is read from the messages' own declarations.
    let Some(declared) = message_shape(role) else {
        return Err(format!("message role {role:?} is not a 1.x role"));
    };
    if !uses_parts && !m.content_parts.is_empty() {
        return Err(format!("a {role} message carries content parts"));
    }
    if m.activity_content.is_some() && !uses_map {
        return Err(format!("a {role} message carries activity content"));
    }
    if uses_map && m.content.is_some() {
        return Err("an activity message carries string content".into());
    }
    if uses_parts && m.content.is_some() && !m.content_parts.is_empty() {
        return Err(format!(
            "a {role} message carries both string content and content parts"
        ));
    }
    let tool_calls = m
        .tool_calls
        .into_iter()
        .map(tool_call)
        .collect::<R<Vec<_>>>()?;
    let tool_calls = (!tool_calls.is_empty()).then_some(tool_calls);
    let metadata = strukt(m.metadata);
    let missing = |what: &str| format!("a {role} message has no {what}");
    // Keys the role does not define stay as unknown keys, in the wire's field order.
    let mut extra = JsonObject::new();
    let role_defines = |key: &str| -> bool { declared.field(key).is_some() };
    let mut name = m.name;
    let mut tool_call_id = m.tool_call_id;
    let mut error = m.error;
    let mut encrypted_value = m.encrypted_value;
    let mut encrypted_value_type = m.encrypted_value_type;
    let mut activity_type = m.activity_type;
    let mut tool_calls = tool_calls;
    if !role_defines("name") {
        put(&mut extra, "name", name.take());
    }
    if !role_defines("toolCalls") {
        if let Some(tc) = tool_calls.take() {
            extra.insert(
                "toolCalls".into(),
                serde_json::to_value(tc).unwrap_or(Json::Null),
            );
        }
    }
    if !role_defines("toolCallId") {
        put(&mut extra, "toolCallId", tool_call_id.take());
    }
    if !role_defines("error") {
        put(&mut extra, "error", error.take());
    }
    if !role_defines("encryptedValue") {
        put(&mut extra, "encryptedValue", encrypted_value.take());
    }
    if !role_defines("activityType") {
        put(&mut extra, "activityType", activity_type.take());
    }
    if !role_defines("encryptedValueType") {
        put(
            &mut extra,
            "encryptedValueType",
            encrypted_value_type.take(),
        );
    }
    let subagent_run_id = m.subagent_run_id;
    let id = m.id;
    let content_parts = m.content_parts;
    let content = m.content;
    Ok(match role {
        "developer" => Message::Developer(DeveloperMessage {
            subagent_run_id,
            id,
            name,
            encrypted_value,
            encrypted_value_type,
            metadata: metadata.map(Into::into),
            content: content.ok_or_else(|| missing("content"))?,
            extra: extra.into(),
        }),
        "system" => Message::System(SystemMessage {
            subagent_run_id,
            id,
            name,
            encrypted_value,
            encrypted_value_type,
            metadata: metadata.map(Into::into),
            content: content.ok_or_else(|| missing("content"))?,
            extra: extra.into(),
        }),
        "assistant" => Message::Assistant(AssistantMessage {
            subagent_run_id,
            id,
            name,
            encrypted_value,
            encrypted_value_type,
            metadata: metadata.map(Into::into),
            content,
            tool_calls,
            extra: extra.into(),
        }),
        "user" => Message::User(UserMessage {
            subagent_run_id,
            id,
            name,
            encrypted_value,
            encrypted_value_type,
            metadata: metadata.map(Into::into),
            content: match content {
                Some(s) => Content::Text(s),
                None => Content::Parts(parts(content_parts)?),
            },
            extra: extra.into(),
        }),
        "tool" => Message::Tool(ToolMessage {
            subagent_run_id,
            id,
            content: match content {
                Some(s) => Content::Text(s),
                None => Content::Parts(parts(content_parts)?),
            },
            tool_call_id: tool_call_id.ok_or_else(|| missing("toolCallId"))?,
            error,
            encrypted_value,
            encrypted_value_type,
            metadata: metadata.map(Into::into),
            extra: extra.into(),
        }),
        "activity" => Message::Activity(ActivityMessage {
            subagent_run_id,
            id,
            activity_type: activity_type.ok_or_else(|| missing("activityType"))?,
            content: strukt(m.activity_content)
                .map(JsonText::from)
                .ok_or_else(|| missing("content"))?,
            metadata: metadata.map(Into::into),
            extra: extra.into(),
        }),
        _ => Message::Reasoning(ReasoningMessage {
            subagent_run_id,
            id,
            content: content.ok_or_else(|| missing("content"))?,
            encrypted_value,
            encrypted_value_type,
            metadata: metadata.map(Into::into),
            extra: extra.into(),
        }),
    })
}

pub(in crate::encoding::proto) fn messages(m: Vec<pb::Message>) -> R<Vec<Message>> {
    m.into_iter().map(message).collect()
}

pub(in crate::encoding::proto) fn run_agent_input(i: pb::RunAgentInput) -> R<RunAgentInput> {
    Ok(RunAgentInput {
        thread_id: i.thread_id,
        run_id: i.run_id,
        protocol_version: i.protocol_version,
        parent_run_id: i.parent_run_id,
        // `null` state reads as absent, as the schema reads it.
        state: any(i.state).filter(|s| !s.is_null()).map(JsonText::from),
        messages: messages(i.messages)?,
        tools: i
            .tools
            .into_iter()
            .map(|t| {
                Ok(Tool {
                    name: t.name,
                    description: t.description,
                    parameters: not_null(t.parameters, "tool parameters")?.map(JsonText::from),
                    metadata: strukt(t.metadata).map(Into::into),
                    ..Tool::wire_blank()
                })
            })
            .collect::<R<_>>()?,
        context: i
            .context
            .into_iter()
            .map(|c| Context {
                description: c.description,
                value: c.value,
                ..Context::wire_blank()
            })
            .collect(),
        forwarded_props: not_null(i.forwarded_props, "forwardedProps")?.map(JsonText::from),
        // The reference decoder always materialises `resume`.
        resume: Some(
            i.resume
                .into_iter()
                .map(|r| {
                    Ok(ResumeEntry {
                        interrupt_id: r.interrupt_id,
                        status: match r.status.as_str() {
                            "resolved" => ResumeStatus::Resolved,
                            "cancelled" => ResumeStatus::Cancelled,
                            other => return Err(format!("resume status {other:?} is not valid")),
                        },
                        payload: not_null(r.payload, "resume payload")?.map(JsonText::from),
                        metadata: strukt(r.metadata).map(Into::into),
                        ..ResumeEntry::wire_blank()
                    })
                })
                .collect::<R<_>>()?,
        ),
        ..RunAgentInput::wire_blank()
    })
}
