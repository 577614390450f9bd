//! From the prost envelope to an [`Event`], following the reference decoder
//! (`@ag-ui/proto` `decode`) and then the reference schema, which the reference client
//! applies to what the decoder returns:
//!
//! - proto3 strings without presence read as `""` when absent (as ts-proto reads them);
//! - `RUN_FINISHED`/`SUBAGENT_FINISHED` outcomes are rebuilt from the outcome string and
//!   its payload arrays (empty string: no outcome);
//! - messages are rebuilt by role from the merged wire `Message`: `user`/`tool` take
//!   `content` when set, else the parts (none: `content: []`), `activity` takes
//!   `activity_content`; a carrier the role does not use is an error; fields the role
//!   does not define are kept as unknown keys (`extra`), as the reference keeps them;
//! - content parts (or sources) naming no known arm are dropped with a warning;
//! - `RUN_STARTED.input` always gets `resume` (`[]` when absent), as the reference's does;
//! - empty `usage` and `toolCalls` arrays are dropped.
//!
//! Where the reference decoder passes on a value the 1.0 schema rejects (an unknown role,
//! outcome type, patch operation, a `null` where none is allowed), this decoder returns
//! an error naming it: a typed [`Event`] cannot hold it. The SSE decoder treats the same
//! values in JSON the same way.

use serde_json::Value as Json;

use super::generated as pb;
use super::value::{Struct as PbStruct, Value as PbValue};
use crate::event::*;
use crate::types::*;
use crate::wire::de::{is_json_pointer, MAX_SAFE_INTEGER};
use crate::JsonObject;

pub(super) type R<T> = Result<T, String>;

/// The base fields of every event.
struct Base {
    timestamp: Option<i64>,
    raw_event: Option<Json>,
    metadata: Option<JsonObject>,
}

fn base(b: Option<pb::BaseEvent>, expected: pb::EventType) -> R<Base> {
    let b = b.ok_or("the event has no base_event")?;
    if b.r#type != expected as i32 {
        let declared = pb::EventType::try_from(b.r#type)
            .map(|t| t.as_str_name().to_owned())
            .unwrap_or_else(|_| b.r#type.to_string());
        return Err(format!(
            "the envelope carries {} but the base event declares {declared}",
            expected.as_str_name()
        ));
    }
    Ok(Base {
        timestamp: b.timestamp.map(|t| safe_int(t, "timestamp")).transpose()?,
        raw_event: not_null(b.raw_event, "rawEvent")?,
        metadata: b.metadata.map(|s| s.0),
    })
}

/// Builds an event struct from its base fields and its own fields.
macro_rules! event {
    ($ty:ident, $base:expr, { $($field:ident : $value:expr),* $(,)? }) => {{
        let b = $base;
        Event::$ty($ty {
            timestamp: b.timestamp,
            raw_event: b.raw_event,
            metadata: b.metadata,
            $($field: $value,)*
            ..Default::default()
        })
    }};
}

fn safe_int(v: i64, what: &str) -> R<i64> {
    if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{what} {v} is out of range (more than 2^53 - 1 in magnitude)"
        ))
    }
}

fn count(v: Option<i64>, what: &str) -> R<Option<u64>> {
    match v {
        None => Ok(None),
        Some(n) if (0..=MAX_SAFE_INTEGER).contains(&n) => Ok(Some(n as u64)),
        Some(n) => Err(format!("{what} {n} is out of range (0 to 2^53 - 1)")),
    }
}

fn any(v: Option<PbValue>) -> Option<Json> {
    v.and_then(|v| v.0)
}

fn required_any(v: Option<PbValue>, what: &str) -> R<Json> {
    any(v).ok_or_else(|| format!("{what} is missing"))
}

fn not_null(v: Option<PbValue>, what: &str) -> R<Option<Json>> {
    match any(v) {
        Some(Json::Null) => Err(format!("{what} is null (absent is the only \"no value\")")),
        v => Ok(v),
    }
}

fn object(v: Option<PbValue>, what: &str) -> R<Option<JsonObject>> {
    match any(v) {
        None => Ok(None),
        Some(Json::Object(o)) => Ok(Some(o)),
        Some(other) => Err(format!("{what} must be an object, found {other}")),
    }
}

fn strukt(s: Option<PbStruct>) -> Option<JsonObject> {
    s.map(|s| s.0)
}

fn text_role(r: Option<String>) -> R<Option<TextMessageRole>> {
    r.map(|r| match r.as_str() {
        "developer" => Ok(TextMessageRole::Developer),
        "system" => Ok(TextMessageRole::System),
        "assistant" => Ok(TextMessageRole::Assistant),
        "user" => Ok(TextMessageRole::User),
        other => Err(format!("role {other:?} is not a text message role")),
    })
    .transpose()
}

fn usage(u: Vec<pb::Usage>) -> R<Option<Vec<TokenUsage>>> {
    if u.is_empty() {
        return Ok(None);
    }
    u.into_iter()
        .map(|u| {
            Ok(TokenUsage {
                provider: u.provider,
                model: u.model,
                input_tokens: count(u.input_tokens, "usage.inputTokens")?,
                output_tokens: count(u.output_tokens, "usage.outputTokens")?,
                total_tokens: count(u.total_tokens, "usage.totalTokens")?,
                reasoning_tokens: count(u.reasoning_tokens, "usage.reasoningTokens")?,
                cached_input_tokens: count(u.cached_input_tokens, "usage.cachedInputTokens")?,
                cache_write_input_tokens: count(
                    u.cache_write_input_tokens,
                    "usage.cacheWriteInputTokens",
                )?,
                ..Default::default()
            })
        })
        .collect::<R<Vec<_>>>()
        .map(Some)
}

fn interrupt(i: pb::Interrupt) -> R<Interrupt> {
    Ok(Interrupt {
        subagent_run_id: i.subagent_run_id,
        id: i.id,
        reason: i.reason,
        message: i.message,
        tool_call_id: i.tool_call_id,
        response_schema: object(i.response_schema, "interrupt responseSchema")?,
        expires_at: i.expires_at,
        metadata: object(i.metadata, "interrupt metadata")?,
        ..Default::default()
    })
}

fn string_array(v: Vec<String>) -> Json {
    Json::Array(v.into_iter().map(Json::String).collect())
}

fn run_finished_outcome(
    outcome: String,
    pending: Vec<String>,
    interrupts: Vec<pb::Interrupt>,
    event_extra: &mut JsonObject,
) -> R<Option<RunFinishedOutcome>> {
    let interrupts = interrupts
        .into_iter()
        .map(interrupt)
        .collect::<R<Vec<_>>>()?;
    // Payloads the outcome does not own ride along as unknown keys, as in the reference.
    let interrupts_json = |v: &Vec<Interrupt>| serde_json::to_value(v).unwrap_or(Json::Null);
    let mut extra = JsonObject::new();
    let outcome = match outcome.as_str() {
        "" => {
            if !pending.is_empty() {
                event_extra.insert("pendingToolCallIds".into(), string_array(pending));
            }
            if !interrupts.is_empty() {
                event_extra.insert("interrupts".into(), interrupts_json(&interrupts));
            }
            return Ok(None);
        }
        "success" => {
            if !interrupts.is_empty() {
                extra.insert("interrupts".into(), interrupts_json(&interrupts));
            }
            RunFinishedOutcome::Success(SuccessOutcome {
                pending_tool_call_ids: (!pending.is_empty()).then_some(pending),
                extra,
            })
        }
        "interrupt" => {
            if interrupts.is_empty() {
                return Err("an interrupt outcome needs at least one interrupt".into());
            }
            if !pending.is_empty() {
                extra.insert("pendingToolCallIds".into(), string_array(pending));
            }
            RunFinishedOutcome::Interrupt(InterruptOutcome { interrupts, extra })
        }
        "cancelled" => {
            if !pending.is_empty() {
                extra.insert("pendingToolCallIds".into(), string_array(pending));
            }
            if !interrupts.is_empty() {
                extra.insert("interrupts".into(), interrupts_json(&interrupts));
            }
            RunFinishedOutcome::Cancelled(CancelledOutcome { extra })
        }
        other => {
            return Err(format!(
                "outcome {other:?} is not a RUN_FINISHED outcome type"
            ))
        }
    };
    Ok(Some(outcome))
}

fn subagent_outcome(
    outcome: String,
    ids: Vec<String>,
    event_extra: &mut JsonObject,
) -> R<Option<SubagentFinishedOutcome>> {
    let ids = (!ids.is_empty()).then_some(ids);
    Ok(Some(match outcome.as_str() {
        "" => {
            if let Some(ids) = ids {
                event_extra.insert("interruptIds".into(), string_array(ids));
            }
            return Ok(None);
        }
        "success" => {
            let mut extra = JsonObject::new();
            if let Some(ids) = ids {
                extra.insert("interruptIds".into(), string_array(ids));
            }
            SubagentFinishedOutcome::Success(SubagentSuccessOutcome { extra })
        }
        "suspended" => SubagentFinishedOutcome::Suspended(SubagentSuspendedOutcome {
            interrupt_ids: ids,
            ..Default::default()
        }),
        other => {
            return Err(format!(
                "outcome {other:?} is not a SUBAGENT_FINISHED outcome type"
            ))
        }
    }))
}

fn pointer(p: String, what: &str) -> R<String> {
    if is_json_pointer(&p) {
        Ok(p)
    } else {
        Err(format!("{what} {p:?} is not a JSON Pointer"))
    }
}

fn patch(ops: Vec<pb::JsonPatchOperation>) -> R<JsonPatch> {
    ops.into_iter()
        .map(|o| {
            let path = pointer(o.path, "patch path")?;
            let value = any(o.value);
            let mut extra = JsonObject::new();
            let op = match o.op {
                0 | 2 | 5 => {
                    let value = value.ok_or("a patch add/replace/test operation has no value")?;
                    if let Some(from) = o.from {
                        extra.insert("from".into(), Json::String(from));
                    }
                    match o.op {
                        0 => PatchOperation::Add(AddOperation { path, value, extra }),
                        2 => PatchOperation::Replace(ReplaceOperation { path, value, extra }),
                        _ => PatchOperation::Test(TestOperation { path, value, extra }),
                    }
                }
                1 => {
                    if let Some(from) = o.from {
                        extra.insert("from".into(), Json::String(from));
                    }
                    if let Some(v) = value {
                        extra.insert("value".into(), v);
                    }
                    PatchOperation::Remove(RemoveOperation { path, extra })
                }
                3 | 4 => {
                    let from = pointer(
                        o.from.ok_or("a patch move/copy operation has no from")?,
                        "patch from",
                    )?;
                    if let Some(v) = value {
                        extra.insert("value".into(), v);
                    }
                    if o.op == 3 {
                        PatchOperation::Move(MoveOperation { from, path, extra })
                    } else {
                        PatchOperation::Copy(CopyOperation { from, path, extra })
                    }
                }
                n => return Err(format!("patch operation {n} is not a JSON Patch op")),
            };
            Ok(op)
        })
        .collect()
}

fn source(s: Option<pb::InputContentSource>, kind: &str) -> R<Option<PartSource>> {
    use pb::input_content_source::Source;
    let s = s.ok_or_else(|| format!("a {kind} part has no source"))?;
    Ok(match s.source {
        Some(Source::Data(d)) => Some(PartSource::Data(DataSource {
            value: d.value,
            mime_type: d.mime_type,
            ..Default::default()
        })),
        Some(Source::Url(u)) => Some(PartSource::Url(UrlSource {
            value: u.value,
            mime_type: u.mime_type,
            ..Default::default()
        })),
        Some(Source::File(f)) => Some(PartSource::File(FileSource {
            value: f.value,
            provider: f.provider,
            mime_type: f.mime_type,
            ..Default::default()
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
                    metadata: not_null(p.metadata, concat!($kind, " part metadata"))?,
                    ..Default::default()
                })),
            }
        }};
    }
    Ok(match p.part {
        Some(Part::Text(t)) => Some(ContentPart::Text(TextPart {
            id: t.id,
            text: t.text,
            metadata: not_null(t.metadata, "text part metadata")?,
            ..Default::default()
        })),
        Some(Part::Image(p)) => media!(Image, p, "image"),
        Some(Part::Audio(p)) => media!(Audio, p, "audio"),
        Some(Part::Video(p)) => media!(Video, p, "video"),
        Some(Part::Document(p)) => media!(Document, p, "document"),
        None => None,
    })
}

fn parts(p: Vec<pb::InputContent>) -> R<Vec<ContentPart>> {
    let mut out = Vec::with_capacity(p.len());
    for p in p {
        match part(p)? {
            Some(p) => out.push(p),
            None => tracing::warn!(
                "dropped a protobuf content part this version does not know (no known part or source kind)"
            ),
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
            ..Default::default()
        },
        encrypted_value: t.encrypted_value,
        metadata: strukt(t.metadata),
        ..Default::default()
    })
}

fn put(extra: &mut JsonObject, key: &str, v: Option<String>) {
    if let Some(v) = v {
        extra.insert(key.to_owned(), Json::String(v));
    }
}

fn message(m: pb::Message) -> R<Message> {
    let role = m.role.as_str();
    let uses_parts = matches!(role, "user" | "tool");
    let uses_map = role == "activity";
    if !matches!(
        role,
        "developer" | "system" | "assistant" | "user" | "tool" | "activity" | "reasoning"
    ) {
        return Err(format!("message role {role:?} is not a 1.0 role"));
    }
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
    let role_defines = |key: &str| -> bool {
        match role {
            "developer" | "system" => matches!(key, "name" | "encryptedValue"),
            "assistant" => matches!(key, "name" | "encryptedValue" | "toolCalls"),
            "user" => matches!(key, "name" | "encryptedValue"),
            "tool" => matches!(key, "toolCallId" | "error" | "encryptedValue"),
            "activity" => matches!(key, "activityType"),
            _ => matches!(key, "encryptedValue"),
        }
    };
    let mut name = m.name;
    let mut tool_call_id = m.tool_call_id;
    let mut error = m.error;
    let mut encrypted_value = m.encrypted_value;
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
            metadata,
            content: content.ok_or_else(|| missing("content"))?,
            extra,
        }),
        "system" => Message::System(SystemMessage {
            subagent_run_id,
            id,
            name,
            encrypted_value,
            metadata,
            content: content.ok_or_else(|| missing("content"))?,
            extra,
        }),
        "assistant" => Message::Assistant(AssistantMessage {
            subagent_run_id,
            id,
            name,
            encrypted_value,
            metadata,
            content,
            tool_calls,
            extra,
        }),
        "user" => Message::User(UserMessage {
            subagent_run_id,
            id,
            name,
            encrypted_value,
            metadata,
            content: match content {
                Some(s) => Content::Text(s),
                None => Content::Parts(parts(content_parts)?),
            },
            extra,
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
            metadata,
            extra,
        }),
        "activity" => Message::Activity(ActivityMessage {
            subagent_run_id,
            id,
            activity_type: activity_type.ok_or_else(|| missing("activityType"))?,
            content: strukt(m.activity_content).ok_or_else(|| missing("content"))?,
            metadata,
            extra,
        }),
        _ => Message::Reasoning(ReasoningMessage {
            subagent_run_id,
            id,
            content: content.ok_or_else(|| missing("content"))?,
            encrypted_value,
            metadata,
            extra,
        }),
    })
}

fn messages(m: Vec<pb::Message>) -> R<Vec<Message>> {
    m.into_iter().map(message).collect()
}

fn run_agent_input(i: pb::RunAgentInput) -> R<RunAgentInput> {
    Ok(RunAgentInput {
        thread_id: i.thread_id,
        run_id: i.run_id,
        protocol_version: i.protocol_version,
        parent_run_id: i.parent_run_id,
        // `null` state reads as absent, as the schema reads it.
        state: any(i.state).filter(|s| !s.is_null()),
        messages: messages(i.messages)?,
        tools: i
            .tools
            .into_iter()
            .map(|t| {
                Ok(Tool {
                    name: t.name,
                    description: t.description,
                    parameters: not_null(t.parameters, "tool parameters")?,
                    metadata: strukt(t.metadata),
                    ..Default::default()
                })
            })
            .collect::<R<_>>()?,
        context: i
            .context
            .into_iter()
            .map(|c| Context {
                description: c.description,
                value: c.value,
                ..Default::default()
            })
            .collect(),
        forwarded_props: not_null(i.forwarded_props, "forwardedProps")?,
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
                        payload: not_null(r.payload, "resume payload")?,
                        metadata: strukt(r.metadata),
                        ..Default::default()
                    })
                })
                .collect::<R<_>>()?,
        ),
        ..Default::default()
    })
}

fn tool_role(r: Option<String>) -> R<Option<ToolRole>> {
    r.map(|r| {
        if r == "tool" {
            Ok(ToolRole::Tool)
        } else {
            Err(format!("TOOL_CALL_RESULT role {r:?} is not \"tool\""))
        }
    })
    .transpose()
}

/// Converts a decoded envelope arm into an event.
pub(super) fn event(arm: pb::event::Event) -> R<Event> {
    use pb::event::Event as A;
    use pb::EventType as T;
    Ok(match arm {
        A::TextMessageStart(e) => {
            event!(TextMessageStart, base(e.base_event, T::TextMessageStart)?, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                role: text_role(e.role)?,
                name: e.name,
            })
        }
        A::TextMessageContent(e) => {
            event!(TextMessageContent, base(e.base_event, T::TextMessageContent)?, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                delta: e.delta,
            })
        }
        A::TextMessageEnd(e) => event!(TextMessageEnd, base(e.base_event, T::TextMessageEnd)?, {
            subagent_run_id: e.subagent_run_id,
            message_id: e.message_id,
        }),
        A::TextMessageChunk(e) => {
            event!(TextMessageChunk, base(e.base_event, T::TextMessageChunk)?, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                role: text_role(e.role)?,
                delta: e.delta,
                name: e.name,
            })
        }
        A::ToolCallStart(e) => event!(ToolCallStart, base(e.base_event, T::ToolCallStart)?, {
            subagent_run_id: e.subagent_run_id,
            tool_call_id: e.tool_call_id,
            tool_call_name: e.tool_call_name,
            parent_message_id: e.parent_message_id,
        }),
        A::ToolCallArgs(e) => event!(ToolCallArgs, base(e.base_event, T::ToolCallArgs)?, {
            subagent_run_id: e.subagent_run_id,
            tool_call_id: e.tool_call_id,
            delta: e.delta,
        }),
        A::ToolCallEnd(e) => event!(ToolCallEnd, base(e.base_event, T::ToolCallEnd)?, {
            subagent_run_id: e.subagent_run_id,
            tool_call_id: e.tool_call_id,
        }),
        A::ToolCallChunk(e) => event!(ToolCallChunk, base(e.base_event, T::ToolCallChunk)?, {
            subagent_run_id: e.subagent_run_id,
            tool_call_id: e.tool_call_id,
            tool_call_name: e.tool_call_name,
            parent_message_id: e.parent_message_id,
            delta: e.delta,
        }),
        A::ToolCallResult(e) => {
            let b = base(e.base_event, T::ToolCallResult)?;
            if e.content.is_some() && !e.content_parts.is_empty() {
                return Err(
                    "TOOL_CALL_RESULT carries both string content and content parts".into(),
                );
            }
            let content = match e.content {
                Some(s) => Content::Text(s),
                None => Content::Parts(parts(e.content_parts)?),
            };
            event!(ToolCallResult, b, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                tool_call_id: e.tool_call_id,
                content: content,
                role: tool_role(e.role)?,
            })
        }
        A::StateSnapshot(e) => event!(StateSnapshot, base(e.base_event, T::StateSnapshot)?, {
            subagent_run_id: e.subagent_run_id,
            snapshot: required_any(e.snapshot, "STATE_SNAPSHOT snapshot")?,
        }),
        A::StateDelta(e) => event!(StateDelta, base(e.base_event, T::StateDelta)?, {
            subagent_run_id: e.subagent_run_id,
            delta: patch(e.delta)?,
        }),
        A::MessagesSnapshot(e) => {
            event!(MessagesSnapshot, base(e.base_event, T::MessagesSnapshot)?, {
                messages: messages(e.messages)?,
            })
        }
        A::ActivitySnapshot(e) => {
            event!(ActivitySnapshot, base(e.base_event, T::ActivitySnapshot)?, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                activity_type: e.activity_type,
                content: strukt(e.content).ok_or("ACTIVITY_SNAPSHOT has no content")?,
                replace: e.replace,
            })
        }
        A::ActivityDelta(e) => event!(ActivityDelta, base(e.base_event, T::ActivityDelta)?, {
            subagent_run_id: e.subagent_run_id,
            message_id: e.message_id,
            activity_type: e.activity_type,
            patch: patch(e.patch)?,
        }),
        A::Raw(e) => event!(Raw, base(e.base_event, T::Raw)?, {
            subagent_run_id: e.subagent_run_id,
            event: required_any(e.event, "RAW event")?,
            source: e.source,
        }),
        A::Custom(e) => event!(Custom, base(e.base_event, T::Custom)?, {
            subagent_run_id: e.subagent_run_id,
            name: e.name,
            value: required_any(e.value, "CUSTOM value")?,
        }),
        A::RunStarted(e) => event!(RunStarted, base(e.base_event, T::RunStarted)?, {
            thread_id: e.thread_id,
            run_id: e.run_id,
            protocol_version: e.protocol_version,
            parent_run_id: e.parent_run_id,
            input: e.input.map(run_agent_input).transpose()?.map(Box::new),
        }),
        A::RunFinished(e) => {
            let b = base(e.base_event, T::RunFinished)?;
            let mut extra = JsonObject::new();
            let outcome =
                run_finished_outcome(e.outcome, e.pending_tool_call_ids, e.interrupts, &mut extra)?;
            let mut ev = event!(RunFinished, b, {
                thread_id: e.thread_id,
                run_id: e.run_id,
                result: not_null(e.result, "RUN_FINISHED result")?,
                outcome: outcome,
                usage: usage(e.usage)?,
            });
            *ev.extra_mut() = extra;
            ev
        }
        A::RunError(e) => event!(RunError, base(e.base_event, T::RunError)?, {
            message: e.message,
            code: e.code,
            usage: usage(e.usage)?,
        }),
        A::StepStarted(e) => event!(StepStarted, base(e.base_event, T::StepStarted)?, {
            subagent_run_id: e.subagent_run_id,
            step_name: e.step_name,
        }),
        A::StepFinished(e) => event!(StepFinished, base(e.base_event, T::StepFinished)?, {
            subagent_run_id: e.subagent_run_id,
            step_name: e.step_name,
        }),
        A::ReasoningStart(e) => event!(ReasoningStart, base(e.base_event, T::ReasoningStart)?, {
            subagent_run_id: e.subagent_run_id,
            message_id: e.message_id,
        }),
        A::ReasoningMessageStart(e) => {
            let b = base(e.base_event, T::ReasoningMessageStart)?;
            if e.role != "reasoning" {
                return Err(format!(
                    "REASONING_MESSAGE_START role {:?} is not \"reasoning\"",
                    e.role
                ));
            }
            event!(ReasoningMessageStart, b, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                role: ReasoningRole::Reasoning,
            })
        }
        A::ReasoningMessageContent(e) => {
            event!(ReasoningMessageContent, base(e.base_event, T::ReasoningMessageContent)?, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                delta: e.delta,
            })
        }
        A::ReasoningMessageEnd(e) => {
            event!(ReasoningMessageEnd, base(e.base_event, T::ReasoningMessageEnd)?, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
            })
        }
        A::ReasoningMessageChunk(e) => {
            event!(ReasoningMessageChunk, base(e.base_event, T::ReasoningMessageChunk)?, {
                subagent_run_id: e.subagent_run_id,
                message_id: e.message_id,
                delta: e.delta,
            })
        }
        A::ReasoningEnd(e) => event!(ReasoningEnd, base(e.base_event, T::ReasoningEnd)?, {
            subagent_run_id: e.subagent_run_id,
            message_id: e.message_id,
        }),
        A::ReasoningEncryptedValue(e) => {
            let b = base(e.base_event, T::ReasoningEncryptedValue)?;
            let subtype = match e.subtype.as_str() {
                "tool-call" => EncryptedValueSubtype::ToolCall,
                "message" => EncryptedValueSubtype::Message,
                other => {
                    return Err(format!(
                        "REASONING_ENCRYPTED_VALUE subtype {other:?} is not valid"
                    ))
                }
            };
            event!(ReasoningEncryptedValue, b, {
                subagent_run_id: e.subagent_run_id,
                subtype: subtype,
                entity_id: e.entity_id,
                encrypted_value: e.encrypted_value,
            })
        }
        A::SubagentStarted(e) => event!(SubagentStarted, base(e.base_event, T::SubagentStarted)?, {
            subagent_run_id: e.subagent_run_id,
            name: e.name,
            description: e.description,
            parent_subagent_run_id: e.parent_subagent_run_id,
            parent_tool_call_id: e.parent_tool_call_id,
            parent_message_id: e.parent_message_id,
        }),
        A::SubagentFinished(e) => {
            let b = base(e.base_event, T::SubagentFinished)?;
            let mut extra = JsonObject::new();
            let outcome = subagent_outcome(e.outcome, e.interrupt_ids, &mut extra)?;
            let mut ev = event!(SubagentFinished, b, {
                subagent_run_id: e.subagent_run_id,
                result: not_null(e.result, "SUBAGENT_FINISHED result")?,
                outcome: outcome,
            });
            *ev.extra_mut() = extra;
            ev
        }
        A::SubagentError(e) => event!(SubagentError, base(e.base_event, T::SubagentError)?, {
            subagent_run_id: e.subagent_run_id,
            message: e.message,
            code: e.code,
        }),
    })
}
