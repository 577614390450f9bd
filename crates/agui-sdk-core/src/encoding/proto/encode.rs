//! From an [`Event`] to the prost envelope, as the reference encoder
//! (`@ag-ui/proto` `encode`) maps it:
//!
//! - `type`, `timestamp`, `rawEvent`, `metadata` go into `base_event`, which is always
//!   written; every other field goes to the arm's field of the same name;
//! - outcomes become the outcome string (`""` when absent) plus their payload arrays;
//! - messages become the one merged wire `Message` (parts in `content_parts`, activity
//!   content in `activity_content`);
//! - free-form JSON becomes `google.protobuf.Value`/`Struct`, numbers as doubles;
//! - unknown keys (`extra`) have no field and are not carried, as in the reference.

use serde_json::Value as Json;

use super::generated as pb;
use super::value::{Struct as PbStruct, Value as PbValue};
use crate::event::*;
use crate::types::*;
use crate::JsonObject;

fn value(v: &Option<Json>) -> Option<PbValue> {
    v.as_ref().map(|v| PbValue::of(v.clone()))
}

fn text(v: &Option<crate::JsonText>) -> Option<PbValue> {
    v.as_ref().map(|v| PbValue::of(v.to_value()))
}

fn value_of(v: &Json) -> Option<PbValue> {
    Some(PbValue::of(v.clone()))
}

fn object_value(v: &Option<JsonObject>) -> Option<PbValue> {
    v.as_ref().map(|o| PbValue::of(Json::Object(o.clone())))
}

fn text_strukt(v: &Option<crate::JsonText>) -> Option<PbStruct> {
    match v.as_ref().map(crate::JsonText::to_value) {
        Some(Json::Object(o)) => Some(PbStruct(o)),
        _ => None,
    }
}

fn strukt(v: &Option<JsonObject>) -> Option<PbStruct> {
    v.as_ref().map(|o| PbStruct(o.clone()))
}

fn base(
    ty: pb::EventType,
    timestamp: Option<i64>,
    raw_event: &Option<Json>,
    metadata: &Option<JsonObject>,
) -> Option<pb::BaseEvent> {
    Some(pb::BaseEvent {
        r#type: ty as i32,
        timestamp,
        raw_event: value(raw_event),
        metadata: strukt(metadata),
    })
}

/// Builds an arm message: `arm!(Type, e, T::Type, { field: value, ... })`.
macro_rules! arm {
    ($pb:ident, $e:ident, $ty:expr, { $($field:ident : $value:expr),* $(,)? }) => {
        pb::$pb {
            base_event: base(
                $ty,
                $e.timestamp,
                &$e.raw_event.as_deref().cloned(),
                &$e.metadata.as_deref().cloned(),
            ),
            $($field: $value,)*
        }
    };
}

fn usage(u: &Option<Vec<TokenUsage>>) -> Vec<pb::Usage> {
    u.iter()
        .flatten()
        .map(|u| pb::Usage {
            provider: u.provider.clone(),
            model: u.model.clone(),
            input_tokens: u.input_tokens.map(|n| n as i64),
            output_tokens: u.output_tokens.map(|n| n as i64),
            total_tokens: u.total_tokens.map(|n| n as i64),
            reasoning_tokens: u.reasoning_tokens.map(|n| n as i64),
            cached_input_tokens: u.cached_input_tokens.map(|n| n as i64),
            cache_write_input_tokens: u.cache_write_input_tokens.map(|n| n as i64),
        })
        .collect()
}

fn interrupt(i: &Interrupt) -> pb::Interrupt {
    pb::Interrupt {
        id: i.id.clone(),
        reason: i.reason.clone(),
        message: i.message.clone(),
        tool_call_id: i.tool_call_id.clone(),
        response_schema: object_value(&i.response_schema),
        expires_at: i.expires_at.clone(),
        metadata: object_value(&i.metadata),
        subagent_run_id: i.subagent_run_id.clone(),
    }
}

fn patch(ops: &JsonPatch) -> Vec<pb::JsonPatchOperation> {
    ops.iter()
        .map(|o| {
            let (op, path, from, v) = super::write::patch_parts(o);
            pb::JsonPatchOperation {
                op: op as i32,
                path: path.clone(),
                from: from.cloned(),
                value: v.and_then(value_of),
            }
        })
        .collect()
}

fn source(s: &PartSource) -> pb::InputContentSource {
    use pb::input_content_source::Source;
    pb::InputContentSource {
        source: Some(match s {
            PartSource::Data(d) => Source::Data(pb::InputContentDataSource {
                value: d.value.clone(),
                mime_type: d.mime_type.clone(),
            }),
            PartSource::Url(u) => Source::Url(pb::InputContentUrlSource {
                value: u.value.clone(),
                mime_type: u.mime_type.clone(),
            }),
            PartSource::File(f) => Source::File(pb::InputContentFileSource {
                value: f.value.clone(),
                provider: f.provider.clone(),
                mime_type: f.mime_type.clone(),
            }),
        }),
    }
}

fn part(p: &ContentPart) -> pb::InputContent {
    use pb::input_content::Part;
    macro_rules! media {
        ($pb:ident, $m:expr) => {
            pb::$pb {
                source: Some(source(&$m.source)),
                metadata: text(&$m.metadata),
                id: $m.id.clone(),
            }
        };
    }
    pb::InputContent {
        part: Some(match p {
            ContentPart::Text(t) => Part::Text(pb::TextInputPart {
                text: t.text.clone(),
                id: t.id.clone(),
                metadata: text(&t.metadata),
            }),
            ContentPart::Image(m) => Part::Image(media!(ImageInputPart, m)),
            ContentPart::Audio(m) => Part::Audio(media!(AudioInputPart, m)),
            ContentPart::Video(m) => Part::Video(media!(VideoInputPart, m)),
            ContentPart::Document(m) => Part::Document(media!(DocumentInputPart, m)),
        }),
    }
}

/// `(content, content_parts)` for content that is a string or parts.
fn content(c: &Content) -> (Option<String>, Vec<pb::InputContent>) {
    match c {
        Content::Text(s) => (Some(s.clone()), Vec::new()),
        Content::Parts(p) => (None, p.iter().map(part).collect()),
    }
}

fn tool_call(t: &ToolCall) -> pb::ToolCall {
    pb::ToolCall {
        id: t.id.clone(),
        r#type: "function".to_owned(),
        function: Some(pb::tool_call::Function {
            name: t.function.name.clone(),
            arguments: t.function.arguments.clone(),
        }),
        metadata: text_strukt(&t.metadata),
        encrypted_value: t.encrypted_value.clone(),
        encrypted_value_type: t.encrypted_value_type.clone(),
    }
}

fn message(m: &Message) -> pb::Message {
    let mut w = pb::Message {
        id: m.id().to_owned(),
        role: m.role().as_str().to_owned(),
        metadata: text_strukt(&m.metadata().cloned()),
        subagent_run_id: m.subagent_run_id().map(str::to_owned),
        ..Default::default()
    };
    match m {
        Message::Developer(d) => {
            w.content = Some(d.content.clone());
            w.name = d.name.clone();
            w.encrypted_value = d.encrypted_value.clone();
            w.encrypted_value_type = d.encrypted_value_type.clone();
        }
        Message::System(d) => {
            w.content = Some(d.content.clone());
            w.name = d.name.clone();
            w.encrypted_value = d.encrypted_value.clone();
            w.encrypted_value_type = d.encrypted_value_type.clone();
        }
        Message::Assistant(a) => {
            w.content = a.content.clone();
            w.name = a.name.clone();
            w.encrypted_value = a.encrypted_value.clone();
            w.encrypted_value_type = a.encrypted_value_type.clone();
            w.tool_calls = a.tool_calls.iter().flatten().map(tool_call).collect();
        }
        Message::User(u) => {
            (w.content, w.content_parts) = content(&u.content);
            w.name = u.name.clone();
            w.encrypted_value = u.encrypted_value.clone();
            w.encrypted_value_type = u.encrypted_value_type.clone();
        }
        Message::Tool(t) => {
            (w.content, w.content_parts) = content(&t.content);
            w.tool_call_id = Some(t.tool_call_id.clone());
            w.error = t.error.clone();
            w.encrypted_value = t.encrypted_value.clone();
            w.encrypted_value_type = t.encrypted_value_type.clone();
        }
        Message::Activity(a) => {
            w.activity_type = Some(a.activity_type.clone());
            w.activity_content = text_strukt(&Some(a.content.clone()));
        }
        Message::Reasoning(r) => {
            w.content = Some(r.content.clone());
            w.encrypted_value = r.encrypted_value.clone();
            w.encrypted_value_type = r.encrypted_value_type.clone();
        }
    }
    w
}

fn run_agent_input(i: &RunAgentInput) -> pb::RunAgentInput {
    pb::RunAgentInput {
        thread_id: i.thread_id.clone(),
        run_id: i.run_id.clone(),
        parent_run_id: i.parent_run_id.clone(),
        state: text(&i.state),
        messages: i.messages.iter().map(message).collect(),
        tools: i
            .tools
            .iter()
            .map(|t| pb::Tool {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: text(&t.parameters),
                metadata: text_strukt(&t.metadata),
            })
            .collect(),
        context: i
            .context
            .iter()
            .map(|c| pb::Context {
                description: c.description.clone(),
                value: c.value.clone(),
            })
            .collect(),
        forwarded_props: text(&i.forwarded_props),
        resume: i
            .resume
            .iter()
            .flatten()
            .map(|r| pb::ResumeEntry {
                interrupt_id: r.interrupt_id.clone(),
                status: match r.status {
                    ResumeStatus::Resolved => "resolved",
                    ResumeStatus::Cancelled => "cancelled",
                }
                .to_owned(),
                payload: text(&r.payload),
                metadata: text_strukt(&r.metadata),
            })
            .collect(),
        protocol_version: i.protocol_version.clone(),
    }
}

fn text_role(r: Option<TextMessageRole>) -> Option<String> {
    r.map(|r| crate::types::Role::from(r).as_str().to_owned())
}

/// The envelope arm for an event.
pub(super) fn event(ev: &Event) -> pb::event::Event {
    use pb::event::Event as A;
    use pb::EventType as T;
    match ev {
        Event::TextMessageStart(e) => {
            A::TextMessageStart(arm!(TextMessageStartEvent, e, T::TextMessageStart, {
                message_id: e.message_id.clone(),
                role: text_role(e.role),
                name: e.name.clone(),
                subagent_run_id: e.subagent_run_id.clone(),
            }))
        }
        Event::TextMessageContent(e) => {
            A::TextMessageContent(arm!(TextMessageContentEvent, e, T::TextMessageContent, {
                message_id: e.message_id.clone(),
                delta: e.delta.clone(),
                subagent_run_id: e.subagent_run_id.clone(),
            }))
        }
        Event::TextMessageEnd(e) => {
            A::TextMessageEnd(arm!(TextMessageEndEvent, e, T::TextMessageEnd, {
                message_id: e.message_id.clone(),
                subagent_run_id: e.subagent_run_id.clone(),
            }))
        }
        Event::TextMessageChunk(e) => {
            A::TextMessageChunk(arm!(TextMessageChunkEvent, e, T::TextMessageChunk, {
                message_id: e.message_id.clone(),
                role: text_role(e.role),
                delta: e.delta.clone(),
                name: e.name.clone(),
                subagent_run_id: e.subagent_run_id.clone(),
            }))
        }
        Event::ToolCallStart(e) => {
            A::ToolCallStart(arm!(ToolCallStartEvent, e, T::ToolCallStart, {
                tool_call_id: e.tool_call_id.clone(),
                tool_call_name: e.tool_call_name.clone(),
                parent_message_id: e.parent_message_id.clone(),
                subagent_run_id: e.subagent_run_id.clone(),
            }))
        }
        Event::ToolCallArgs(e) => A::ToolCallArgs(arm!(ToolCallArgsEvent, e, T::ToolCallArgs, {
            tool_call_id: e.tool_call_id.clone(),
            delta: e.delta.clone(),
            subagent_run_id: e.subagent_run_id.clone(),
        })),
        Event::ToolCallEnd(e) => A::ToolCallEnd(arm!(ToolCallEndEvent, e, T::ToolCallEnd, {
            tool_call_id: e.tool_call_id.clone(),
            subagent_run_id: e.subagent_run_id.clone(),
        })),
        Event::ToolCallChunk(e) => {
            A::ToolCallChunk(arm!(ToolCallChunkEvent, e, T::ToolCallChunk, {
                tool_call_id: e.tool_call_id.clone(),
                tool_call_name: e.tool_call_name.clone(),
                parent_message_id: e.parent_message_id.clone(),
                delta: e.delta.clone(),
                subagent_run_id: e.subagent_run_id.clone(),
            }))
        }
        Event::ToolCallResult(e) => {
            let (content, content_parts) = content(&e.content);
            A::ToolCallResult(arm!(ToolCallResultEvent, e, T::ToolCallResult, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
                tool_call_id: e.tool_call_id.clone(),
                content: content,
                role: e.role.map(|_| "tool".to_owned()),
                content_parts: content_parts,
            }))
        }
        Event::StateSnapshot(e) => {
            A::StateSnapshot(arm!(StateSnapshotEvent, e, T::StateSnapshot, {
                snapshot: value_of(&e.snapshot),
                subagent_run_id: e.subagent_run_id.clone(),
            }))
        }
        Event::StateDelta(e) => A::StateDelta(arm!(StateDeltaEvent, e, T::StateDelta, {
            delta: patch(&e.delta),
            subagent_run_id: e.subagent_run_id.clone(),
        })),
        Event::MessagesSnapshot(e) => {
            A::MessagesSnapshot(arm!(MessagesSnapshotEvent, e, T::MessagesSnapshot, {
                messages: e.messages.iter().map(message).collect(),
            }))
        }
        Event::ActivitySnapshot(e) => {
            A::ActivitySnapshot(arm!(ActivitySnapshotEvent, e, T::ActivitySnapshot, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
                activity_type: e.activity_type.clone(),
                content: Some(PbStruct(e.content.clone())),
                replace: e.replace,
            }))
        }
        Event::ActivityDelta(e) => {
            A::ActivityDelta(arm!(ActivityDeltaEvent, e, T::ActivityDelta, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
                activity_type: e.activity_type.clone(),
                patch: patch(&e.patch),
            }))
        }
        Event::Raw(e) => A::Raw(arm!(RawEvent, e, T::Raw, {
            event: value_of(&e.event),
            source: e.source.clone(),
            subagent_run_id: e.subagent_run_id.clone(),
        })),
        Event::Custom(e) => A::Custom(arm!(CustomEvent, e, T::Custom, {
            name: e.name.clone(),
            value: value_of(&e.value),
            subagent_run_id: e.subagent_run_id.clone(),
        })),
        Event::RunStarted(e) => A::RunStarted(arm!(RunStartedEvent, e, T::RunStarted, {
            thread_id: e.thread_id.clone(),
            run_id: e.run_id.clone(),
            parent_run_id: e.parent_run_id.clone(),
            input: e.input.as_deref().map(run_agent_input),
            protocol_version: e.protocol_version.clone(),
        })),
        Event::RunFinished(e) => {
            let (outcome, interrupts, pending) = match &e.outcome {
                None => ("", Vec::new(), Vec::new()),
                Some(RunFinishedOutcome::Success(s)) => (
                    "success",
                    Vec::new(),
                    s.pending_tool_call_ids.clone().unwrap_or_default(),
                ),
                Some(RunFinishedOutcome::Interrupt(i)) => (
                    "interrupt",
                    i.interrupts.iter().map(interrupt).collect(),
                    Vec::new(),
                ),
                Some(RunFinishedOutcome::Cancelled(_)) => ("cancelled", Vec::new(), Vec::new()),
            };
            A::RunFinished(arm!(RunFinishedEvent, e, T::RunFinished, {
                thread_id: e.thread_id.clone(),
                run_id: e.run_id.clone(),
                result: value(&e.result),
                outcome: outcome.to_owned(),
                interrupts: interrupts,
                usage: usage(&e.usage),
                pending_tool_call_ids: pending,
            }))
        }
        Event::RunError(e) => A::RunError(arm!(RunErrorEvent, e, T::RunError, {
            code: e.code.clone(),
            message: e.message.clone(),
            usage: usage(&e.usage),
        })),
        Event::StepStarted(e) => A::StepStarted(arm!(StepStartedEvent, e, T::StepStarted, {
            step_name: e.step_name.clone(),
            subagent_run_id: e.subagent_run_id.clone(),
        })),
        Event::StepFinished(e) => A::StepFinished(arm!(StepFinishedEvent, e, T::StepFinished, {
            step_name: e.step_name.clone(),
            subagent_run_id: e.subagent_run_id.clone(),
        })),
        Event::ReasoningStart(e) => {
            A::ReasoningStart(arm!(ReasoningStartEvent, e, T::ReasoningStart, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
            }))
        }
        Event::ReasoningMessageStart(e) => A::ReasoningMessageStart(
            arm!(ReasoningMessageStartEvent, e, T::ReasoningMessageStart, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
                role: "reasoning".to_owned(),
            }),
        ),
        Event::ReasoningMessageContent(e) => A::ReasoningMessageContent(
            arm!(ReasoningMessageContentEvent, e, T::ReasoningMessageContent, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
                delta: e.delta.clone(),
            }),
        ),
        Event::ReasoningMessageEnd(e) => {
            A::ReasoningMessageEnd(arm!(ReasoningMessageEndEvent, e, T::ReasoningMessageEnd, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
            }))
        }
        Event::ReasoningMessageChunk(e) => A::ReasoningMessageChunk(
            arm!(ReasoningMessageChunkEvent, e, T::ReasoningMessageChunk, {
                subagent_run_id: e.subagent_run_id.clone(),
                message_id: e.message_id.clone(),
                delta: e.delta.clone(),
            }),
        ),
        Event::ReasoningEnd(e) => A::ReasoningEnd(arm!(ReasoningEndEvent, e, T::ReasoningEnd, {
            subagent_run_id: e.subagent_run_id.clone(),
            message_id: e.message_id.clone(),
        })),
        Event::ReasoningEncryptedValue(e) => A::ReasoningEncryptedValue(
            arm!(ReasoningEncryptedValueEvent, e, T::ReasoningEncryptedValue, {
                subagent_run_id: e.subagent_run_id.clone(),
                subtype: match e.subtype {
                    EncryptedValueSubtype::ToolCall => "tool-call",
                    EncryptedValueSubtype::Message => "message",
                }
                .to_owned(),
                entity_id: e.entity_id.clone(),
                encrypted_value: e.encrypted_value.clone(),
                encrypted_value_type: e.encrypted_value_type.clone(),
            }),
        ),
        Event::SubagentStarted(e) => {
            A::SubagentStarted(arm!(SubagentStartedEvent, e, T::SubagentStarted, {
                subagent_run_id: e.subagent_run_id.clone(),
                name: e.name.clone(),
                description: e.description.clone(),
                parent_subagent_run_id: e.parent_subagent_run_id.clone(),
                parent_tool_call_id: e.parent_tool_call_id.clone(),
                parent_message_id: e.parent_message_id.clone(),
            }))
        }
        Event::SubagentFinished(e) => {
            let (outcome, ids) = match &e.outcome {
                None => ("", Vec::new()),
                Some(SubagentFinishedOutcome::Success(_)) => ("success", Vec::new()),
                Some(SubagentFinishedOutcome::Suspended(s)) => {
                    ("suspended", s.interrupt_ids.clone().unwrap_or_default())
                }
            };
            A::SubagentFinished(arm!(SubagentFinishedEvent, e, T::SubagentFinished, {
                subagent_run_id: e.subagent_run_id.clone(),
                result: value(&e.result),
                outcome: outcome.to_owned(),
                interrupt_ids: ids,
            }))
        }
        Event::SubagentError(e) => {
            A::SubagentError(arm!(SubagentErrorEvent, e, T::SubagentError, {
                subagent_run_id: e.subagent_run_id.clone(),
                message: e.message.clone(),
                code: e.code.clone(),
            }))
        }
    }
}
