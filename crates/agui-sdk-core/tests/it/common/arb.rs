//! Proptest strategies for every protocol type, shared by the property tests.
//! Unknown keys (`extra`) are named `x-...` so that they never collide with a protocol
//! key.

use agui_sdk_core::event::*;
use agui_sdk_core::types::*;
use agui_sdk_core::{Event, JsonObject};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::Value;

pub(crate) fn id() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z0-9-]{1,12}", "\\PC{0,8}"]
}

pub(crate) fn text() -> impl Strategy<Value = String> {
    "\\PC{0,40}"
}

pub(crate) fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec(("\\PC{0,6}", inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

pub(crate) fn non_null_json() -> impl Strategy<Value = Value> {
    json().prop_filter("not null", |v| !v.is_null())
}

pub(crate) fn object() -> impl Strategy<Value = JsonObject> {
    vec(("\\PC{0,6}", json()), 0..4).prop_map(|kv| kv.into_iter().collect())
}

/// Unknown keys: named so that they can never collide with a protocol key.
pub(crate) fn extra() -> impl Strategy<Value = JsonObject> {
    vec(("x-[a-z]{1,5}", json()), 0..2).prop_map(|kv| kv.into_iter().collect())
}

pub(crate) fn ts() -> impl Strategy<Value = Option<i64>> {
    option::of(-9_007_199_254_740_991i64..=9_007_199_254_740_991)
}

pub(crate) fn count() -> impl Strategy<Value = Option<u64>> {
    option::of(0u64..=9_007_199_254_740_991)
}

pub(crate) fn pointer() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "(/([a-z0-9]|~0|~1){0,4}){1,3}"]
}

pub(crate) fn source() -> impl Strategy<Value = PartSource> {
    prop_oneof![
        (text(), text(), extra()).prop_map(|(value, mime_type, extra)| PartSource::Data(
            DataSource {
                value,
                mime_type,
                extra: extra.into()
            }
        )),
        (text(), option::of(text()), extra()).prop_map(
            |(value, mime_type, extra)| PartSource::Url(UrlSource {
                value,
                mime_type,
                extra: extra.into()
            })
        ),
        (text(), option::of(id()), option::of(text()), extra()).prop_map(
            |(value, provider, mime_type, extra)| PartSource::File(FileSource {
                value,
                provider,
                mime_type,
                extra: extra.into()
            })
        ),
    ]
}

pub(crate) fn media() -> impl Strategy<Value = MediaPart> {
    (
        option::of(id()),
        source(),
        option::of(non_null_json()),
        extra(),
    )
        .prop_map(|(id, source, metadata, extra)| MediaPart {
            id,
            source,
            metadata: metadata.map(Into::into),
            extra: extra.into(),
        })
}

pub(crate) fn part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        (
            option::of(id()),
            text(),
            option::of(non_null_json()),
            extra()
        )
            .prop_map(|(id, text, metadata, extra)| ContentPart::Text(TextPart {
                id,
                text,
                metadata: metadata.map(Into::into),
                extra: extra.into()
            })),
        media().prop_map(ContentPart::Image),
        media().prop_map(ContentPart::Audio),
        media().prop_map(ContentPart::Video),
        media().prop_map(ContentPart::Document),
    ]
}

pub(crate) fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        text().prop_map(Content::Text),
        vec(part(), 0..3).prop_map(Content::Parts)
    ]
}

pub(crate) fn tool_call() -> impl Strategy<Value = ToolCall> {
    (
        id(),
        id(),
        text(),
        option::of(text()),
        option::of(text()),
        option::of(object()),
        extra(),
    )
        .prop_map(
            |(id, name, arguments, encrypted_value, encrypted_value_type, metadata, extra)| {
                ToolCall {
                    id,
                    r#type: ToolCallType::Function,
                    function: FunctionCall {
                        name,
                        arguments,
                        extra: Default::default(),
                    },
                    encrypted_value,
                    encrypted_value_type,
                    metadata: metadata.map(Into::into),
                    extra: extra.into(),
                }
            },
        )
}

pub(crate) fn message() -> impl Strategy<Value = Message> {
    let common = || {
        (
            option::of(id()),
            id(),
            option::of(text()),
            option::of(text()),
            option::of(object()),
            option::of(text()),
        )
    };
    prop_oneof![
        (common(), text(), extra()).prop_map(|((s, id, name, ev, md, evt), content, extra)| {
            Message::Developer(DeveloperMessage {
                subagent_run_id: s,
                id,
                name,
                encrypted_value: ev,
                encrypted_value_type: evt,
                metadata: md.map(Into::into),
                content,
                extra: extra.into(),
            })
        }),
        (common(), text(), extra()).prop_map(|((s, id, name, ev, md, evt), content, extra)| {
            Message::System(SystemMessage {
                subagent_run_id: s,
                id,
                name,
                encrypted_value: ev,
                encrypted_value_type: evt,
                metadata: md.map(Into::into),
                content,
                extra: extra.into(),
            })
        }),
        (
            common(),
            option::of(text()),
            option::of(vec(tool_call(), 0..3)),
            extra()
        )
            .prop_map(|((s, id, name, ev, md, evt), content, tool_calls, extra)| {
                Message::Assistant(AssistantMessage {
                    subagent_run_id: s,
                    id,
                    name,
                    encrypted_value: ev,
                    encrypted_value_type: evt,
                    metadata: md.map(Into::into),
                    content,
                    tool_calls,
                    extra: extra.into(),
                })
            }),
        (common(), content(), extra()).prop_map(|((s, id, name, ev, md, evt), content, extra)| {
            Message::User(UserMessage {
                subagent_run_id: s,
                id,
                name,
                encrypted_value: ev,
                encrypted_value_type: evt,
                metadata: md.map(Into::into),
                content,
                extra: extra.into(),
            })
        }),
        (common(), content(), id(), option::of(text()), extra()).prop_map(
            |((s, id, _, ev, md, evt), content, tool_call_id, error, extra)| Message::Tool(
                ToolMessage {
                    subagent_run_id: s,
                    id,
                    content,
                    tool_call_id,
                    error,
                    encrypted_value: ev,
                    encrypted_value_type: evt,
                    metadata: md.map(Into::into),
                    extra: extra.into()
                }
            )
        ),
        (common(), id(), object(), extra()).prop_map(
            |((s, id, _, _, md, _), activity_type, content, extra)| Message::Activity(
                ActivityMessage {
                    subagent_run_id: s,
                    id,
                    activity_type,
                    content: content.into(),
                    metadata: md.map(Into::into),
                    extra: extra.into()
                }
            )
        ),
        (common(), text(), extra()).prop_map(|((s, id, _, ev, md, evt), content, extra)| {
            Message::Reasoning(ReasoningMessage {
                subagent_run_id: s,
                id,
                content,
                encrypted_value: ev,
                encrypted_value_type: evt,
                metadata: md.map(Into::into),
                extra: extra.into(),
            })
        }),
    ]
}

pub(crate) fn patch_op() -> impl Strategy<Value = PatchOperation> {
    prop_oneof![
        (pointer(), json()).prop_map(|(p, v)| PatchOperation::add(p, v)),
        pointer().prop_map(PatchOperation::remove),
        (pointer(), json()).prop_map(|(p, v)| PatchOperation::replace(p, v)),
        (pointer(), pointer()).prop_map(|(f, p)| PatchOperation::move_(f, p)),
        (pointer(), pointer()).prop_map(|(f, p)| PatchOperation::copy(f, p)),
        (pointer(), json()).prop_map(|(p, v)| PatchOperation::test(p, v)),
    ]
}

pub(crate) fn interrupt() -> impl Strategy<Value = Interrupt> {
    (
        option::of(id()),
        id(),
        text(),
        option::of(text()),
        option::of(id()),
        option::of(object()),
        option::of(text()),
        option::of(object()),
        extra(),
    )
        .prop_map(
            |(
                s,
                id,
                reason,
                message,
                tool_call_id,
                response_schema,
                expires_at,
                metadata,
                extra,
            )| Interrupt {
                subagent_run_id: s,
                id,
                reason,
                message,
                tool_call_id,
                response_schema,
                expires_at,
                metadata,
                extra: extra.into(),
            },
        )
}

pub(crate) fn usage() -> impl Strategy<Value = TokenUsage> {
    (
        option::of(id()),
        option::of(id()),
        count(),
        count(),
        count(),
        count(),
        count(),
        count(),
    )
        .prop_map(|(provider, model, i, o, t, r, c, w)| TokenUsage {
            provider,
            model,
            input_tokens: i,
            output_tokens: o,
            total_tokens: t,
            reasoning_tokens: r,
            cached_input_tokens: c,
            cache_write_input_tokens: w,
            extra: Default::default(),
        })
}

pub(crate) fn input() -> impl Strategy<Value = RunAgentInput> {
    (
        (
            id(),
            id(),
            option::of(Just("1.0".to_owned())),
            option::of(id()),
        ),
        option::of(non_null_json()),
        vec(message(), 0..3),
        vec(
            (
                id(),
                text(),
                option::of(non_null_json()),
                option::of(object()),
            ),
            0..2,
        ),
        vec((text(), text()), 0..2),
        option::of(non_null_json()),
        option::of(vec(
            (
                id(),
                any::<bool>(),
                option::of(non_null_json()),
                option::of(object()),
            ),
            0..2,
        )),
    )
        .prop_map(
            |(
                (thread_id, run_id, protocol_version, parent_run_id),
                state,
                messages,
                tools,
                context,
                forwarded_props,
                resume,
            )| RunAgentInput {
                thread_id,
                run_id,
                protocol_version,
                parent_run_id,
                state: state.map(Into::into),
                messages,
                tools: tools
                    .into_iter()
                    .map(|(name, description, parameters, metadata)| Tool {
                        name,
                        description,
                        parameters: parameters.map(Into::into),
                        metadata: metadata.map(Into::into),
                        extra: Default::default(),
                    })
                    .collect(),
                context: context
                    .into_iter()
                    .map(|(d, v)| Context::new(d, v))
                    .collect(),
                forwarded_props: forwarded_props.map(Into::into),
                resume: resume.map(|r| {
                    r.into_iter()
                        .map(|(interrupt_id, resolved, payload, metadata)| ResumeEntry {
                            interrupt_id,
                            status: if resolved {
                                ResumeStatus::Resolved
                            } else {
                                ResumeStatus::Cancelled
                            },
                            payload: payload.map(Into::into),
                            metadata: metadata.map(Into::into),
                            extra: Default::default(),
                        })
                        .collect()
                }),
                extra: Default::default(),
            },
        )
}

/// Base fields: timestamp, rawEvent, metadata, subagentRunId, unknown keys.
pub(crate) type Base = (
    Option<i64>,
    Option<Value>,
    Option<JsonObject>,
    Option<String>,
    JsonObject,
);

pub(crate) fn base() -> impl Strategy<Value = Base> {
    (
        ts(),
        option::of(non_null_json()),
        option::of(object()),
        option::of(id()),
        extra(),
    )
}

macro_rules! ev {
    ($b:expr, $ty:ident { $($f:ident : $v:expr),* $(,)? }) => {{
        let (timestamp, raw_event, metadata, subagent_run_id, extra) = $b;
        Event::from($ty { timestamp, raw_event: raw_event.map(Box::new), metadata: metadata.map(Box::new), subagent_run_id, extra: extra.into(), $($f: $v),* })
    }};
}

macro_rules! ev_run {
    ($b:expr, $ty:ident { $($f:ident : $v:expr),* $(,)? }) => {{
        let (timestamp, raw_event, metadata, _s, extra) = $b;
        Event::from($ty { timestamp, raw_event: raw_event.map(Box::new), metadata: metadata.map(Box::new), extra: extra.into(), $($f: $v),* })
    }};
}

pub(crate) fn event() -> impl Strategy<Value = Event> {
    let text_role = || {
        prop_oneof![
            Just(TextMessageRole::Developer),
            Just(TextMessageRole::System),
            Just(TextMessageRole::Assistant),
            Just(TextMessageRole::User)
        ]
    };
    let outcome = prop_oneof![
        option::of(vec(id(), 0..3)).prop_map(|p| RunFinishedOutcome::Success(SuccessOutcome {
            pending_tool_call_ids: p,
            extra: Default::default()
        })),
        vec(interrupt(), 1..3).prop_map(RunFinishedOutcome::interrupt),
        Just(RunFinishedOutcome::Cancelled(CancelledOutcome::default())),
    ];
    let sub_outcome = prop_oneof![
        Just(SubagentFinishedOutcome::Success(
            SubagentSuccessOutcome::default()
        )),
        option::of(vec(id(), 0..3)).prop_map(|ids| SubagentFinishedOutcome::Suspended(
            SubagentSuspendedOutcome {
                interrupt_ids: ids,
                extra: Default::default()
            }
        )),
    ];
    prop_oneof![
        (base(), id(), option::of(text_role()), option::of(text())).prop_map(|(b, m, r, n)| ev!(
            b,
            TextMessageStart {
                message_id: m,
                role: r,
                name: n
            }
        )),
        (base(), id(), text()).prop_map(|(b, m, d)| ev!(
            b,
            TextMessageContent {
                message_id: m,
                delta: d
            }
        )),
        (base(), id()).prop_map(|(b, m)| ev!(b, TextMessageEnd { message_id: m })),
        (
            base(),
            option::of(id()),
            option::of(text_role()),
            option::of(text()),
            option::of(text())
        )
            .prop_map(|(b, m, r, d, n)| ev!(
                b,
                TextMessageChunk {
                    message_id: m,
                    role: r,
                    delta: d,
                    name: n
                }
            )),
        (base(), id(), id(), option::of(id())).prop_map(|(b, t, n, p)| ev!(
            b,
            ToolCallStart {
                tool_call_id: t,
                tool_call_name: n,
                parent_message_id: p
            }
        )),
        (base(), id(), text()).prop_map(|(b, t, d)| ev!(
            b,
            ToolCallArgs {
                tool_call_id: t,
                delta: d
            }
        )),
        (base(), id()).prop_map(|(b, t)| ev!(b, ToolCallEnd { tool_call_id: t })),
        (
            base(),
            option::of(id()),
            option::of(id()),
            option::of(id()),
            option::of(text())
        )
            .prop_map(|(b, t, n, p, d)| ev!(
                b,
                ToolCallChunk {
                    tool_call_id: t,
                    tool_call_name: n,
                    parent_message_id: p,
                    delta: d
                }
            )),
        (base(), id(), id(), content(), any::<bool>()).prop_map(|(b, m, t, c, r)| ev!(
            b,
            ToolCallResult {
                message_id: m,
                tool_call_id: t,
                content: c,
                role: r.then_some(ToolRole::Tool)
            }
        )),
        (base(), json()).prop_map(|(b, s)| ev!(b, StateSnapshot { snapshot: s })),
        (base(), vec(patch_op(), 0..4)).prop_map(|(b, d)| ev!(b, StateDelta { delta: d })),
        (base(), vec(message(), 0..4))
            .prop_map(|(b, m)| ev_run!(b, MessagesSnapshot { messages: m })),
        (base(), id(), id(), object(), option::of(any::<bool>())).prop_map(|(b, m, a, c, r)| ev!(
            b,
            ActivitySnapshot {
                message_id: m,
                activity_type: a,
                content: c,
                replace: r
            }
        )),
        (base(), id(), id(), vec(patch_op(), 0..3)).prop_map(|(b, m, a, p)| ev!(
            b,
            ActivityDelta {
                message_id: m,
                activity_type: a,
                patch: p
            }
        )),
        (base(), json(), option::of(text())).prop_map(|(b, e, s)| ev!(
            b,
            Raw {
                event: e,
                source: s
            }
        )),
        (base(), text(), json()).prop_map(|(b, n, v)| ev!(b, Custom { name: n, value: v })),
        (base(), id(), id(), option::of(id()), option::of(input())).prop_map(
            |(b, t, r, p, i)| ev_run!(
                b,
                RunStarted {
                    thread_id: t,
                    run_id: r,
                    protocol_version: Some("1.0".into()),
                    parent_run_id: p,
                    input: i.map(Box::new)
                }
            )
        ),
        (
            base(),
            id(),
            id(),
            option::of(non_null_json()),
            option::of(outcome),
            option::of(vec(usage(), 0..2))
        )
            .prop_map(|(b, t, r, res, o, u)| ev_run!(
                b,
                RunFinished {
                    thread_id: t,
                    run_id: r,
                    result: res,
                    outcome: o,
                    usage: u
                }
            )),
        (
            base(),
            text(),
            option::of(id()),
            option::of(vec(usage(), 0..2))
        )
            .prop_map(|(b, m, c, u)| ev_run!(
                b,
                RunError {
                    message: m,
                    code: c,
                    usage: u
                }
            )),
        (base(), text()).prop_map(|(b, s)| ev!(b, StepStarted { step_name: s })),
        (base(), text()).prop_map(|(b, s)| ev!(b, StepFinished { step_name: s })),
        (base(), id()).prop_map(|(b, m)| ev!(b, ReasoningStart { message_id: m })),
        (base(), id()).prop_map(|(b, m)| ev!(
            b,
            ReasoningMessageStart {
                message_id: m,
                role: ReasoningRole::Reasoning
            }
        )),
        (base(), id(), text()).prop_map(|(b, m, d)| ev!(
            b,
            ReasoningMessageContent {
                message_id: m,
                delta: d
            }
        )),
        (base(), id()).prop_map(|(b, m)| ev!(b, ReasoningMessageEnd { message_id: m })),
        (base(), option::of(id()), option::of(text())).prop_map(|(b, m, d)| ev!(
            b,
            ReasoningMessageChunk {
                message_id: m,
                delta: d
            }
        )),
        (base(), id()).prop_map(|(b, m)| ev!(b, ReasoningEnd { message_id: m })),
        (base(), any::<bool>(), id(), text(), option::of(text())).prop_map(|(b, t, e, v, vt)| ev!(
            b,
            ReasoningEncryptedValue {
                subtype: if t {
                    EncryptedValueSubtype::ToolCall
                } else {
                    EncryptedValueSubtype::Message
                },
                entity_id: e,
                encrypted_value: v,
                encrypted_value_type: vt
            }
        )),
        (
            base(),
            id(),
            id(),
            option::of(text()),
            option::of(id()),
            option::of(id()),
            option::of(id())
        )
            .prop_map(|((t, r, m, _, x), s, n, d, ps, pt, pm)| Event::from(
                SubagentStarted {
                    timestamp: t,
                    raw_event: r.map(Box::new),
                    metadata: m.map(Box::new),
                    extra: x.into(),
                    subagent_run_id: s,
                    name: n,
                    description: d,
                    parent_subagent_run_id: ps,
                    parent_tool_call_id: pt,
                    parent_message_id: pm
                }
            )),
        (
            base(),
            id(),
            option::of(non_null_json()),
            option::of(sub_outcome)
        )
            .prop_map(
                |((t, r, m, _, x), s, res, o)| Event::from(SubagentFinished {
                    timestamp: t,
                    raw_event: r.map(Box::new),
                    metadata: m.map(Box::new),
                    extra: x.into(),
                    subagent_run_id: s,
                    result: res,
                    outcome: o
                })
            ),
        (base(), id(), text(), option::of(id())).prop_map(|((t, r, m, _, x), s, msg, c)| {
            Event::SubagentError(SubagentError {
                timestamp: t,
                raw_event: r.map(Box::new),
                metadata: m.map(Box::new),
                extra: x.into(),
                subagent_run_id: s,
                message: msg,
                code: c,
            })
        }),
    ]
}
