//! How the protobuf reader (`table.rs`) rebuilds an [`Event`] from what it read, following the reference decoder
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

mod message;

pub(super) use message::{messages, parts, run_agent_input};

use super::generated as pb;
use super::value::{Struct as PbStruct, Value as PbValue};
use crate::event::ToolRole;
use crate::types::*;
use crate::wire::de::{is_json_pointer, MAX_SAFE_INTEGER};
use crate::JsonObject;

pub(super) type R<T> = Result<T, String>;

/// The base fields of every event.
pub(super) struct Base {
    pub(super) timestamp: Option<i64>,
    pub(super) raw_event: Option<Json>,
    pub(super) metadata: Option<JsonObject>,
}

pub(super) fn base(b: Option<pb::BaseEvent>, expected: pb::EventType) -> R<Base> {
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

pub(super) fn any(v: Option<PbValue>) -> Option<Json> {
    v.and_then(|v| v.0)
}

pub(super) fn not_null(v: Option<PbValue>, what: &str) -> R<Option<Json>> {
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

pub(super) fn strukt(s: Option<PbStruct>) -> Option<JsonObject> {
    s.map(|s| s.0)
}

pub(super) fn text_role(r: Option<String>) -> R<Option<TextMessageRole>> {
    r.map(|r| match r.as_str() {
        "developer" => Ok(TextMessageRole::Developer),
        "system" => Ok(TextMessageRole::System),
        "assistant" => Ok(TextMessageRole::Assistant),
        "user" => Ok(TextMessageRole::User),
        other => Err(format!("role {other:?} is not a text message role")),
    })
    .transpose()
}

pub(super) fn usage(u: Vec<pb::Usage>) -> R<Option<Vec<TokenUsage>>> {
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
                ..TokenUsage::wire_blank()
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
        ..Interrupt::wire_blank()
    })
}

fn string_array(v: Vec<String>) -> Json {
    Json::Array(v.into_iter().map(Json::String).collect())
}

pub(super) fn run_finished_outcome(
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
                extra: extra.into(),
            })
        }
        "interrupt" => {
            if interrupts.is_empty() {
                return Err("an interrupt outcome needs at least one interrupt".into());
            }
            if !pending.is_empty() {
                extra.insert("pendingToolCallIds".into(), string_array(pending));
            }
            RunFinishedOutcome::Interrupt(InterruptOutcome {
                interrupts,
                extra: extra.into(),
            })
        }
        "cancelled" => {
            if !pending.is_empty() {
                extra.insert("pendingToolCallIds".into(), string_array(pending));
            }
            if !interrupts.is_empty() {
                extra.insert("interrupts".into(), interrupts_json(&interrupts));
            }
            RunFinishedOutcome::Cancelled(CancelledOutcome {
                extra: extra.into(),
            })
        }
        other => {
            return Err(format!(
                "outcome {other:?} is not a RUN_FINISHED outcome type"
            ))
        }
    };
    Ok(Some(outcome))
}

pub(super) fn subagent_outcome(
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
            SubagentFinishedOutcome::Success(SubagentSuccessOutcome {
                extra: extra.into(),
            })
        }
        "suspended" => SubagentFinishedOutcome::Suspended(SubagentSuspendedOutcome {
            interrupt_ids: ids,
            ..SubagentSuspendedOutcome::wire_blank()
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

pub(super) fn patch(ops: Vec<pb::JsonPatchOperation>) -> R<JsonPatch> {
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
                        0 => PatchOperation::Add(AddOperation {
                            path,
                            value,
                            extra: extra.into(),
                        }),
                        2 => PatchOperation::Replace(ReplaceOperation {
                            path,
                            value,
                            extra: extra.into(),
                        }),
                        _ => PatchOperation::Test(TestOperation {
                            path,
                            value,
                            extra: extra.into(),
                        }),
                    }
                }
                1 => {
                    if let Some(from) = o.from {
                        extra.insert("from".into(), Json::String(from));
                    }
                    if let Some(v) = value {
                        extra.insert("value".into(), v);
                    }
                    PatchOperation::Remove(RemoveOperation {
                        path,
                        extra: extra.into(),
                    })
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
                        PatchOperation::Move(MoveOperation {
                            from,
                            path,
                            extra: extra.into(),
                        })
                    } else {
                        PatchOperation::Copy(CopyOperation {
                            from,
                            path,
                            extra: extra.into(),
                        })
                    }
                }
                n => return Err(format!("patch operation {n} is not a JSON Patch op")),
            };
            Ok(op)
        })
        .collect()
}

pub(super) fn tool_role(r: Option<String>) -> R<Option<ToolRole>> {
    r.map(|r| {
        if r == "tool" {
            Ok(ToolRole::Tool)
        } else {
            Err(format!("TOOL_CALL_RESULT role {r:?} is not \"tool\""))
        }
    })
    .transpose()
}
