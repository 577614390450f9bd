//! A compact description of the protocol's JSON shapes, as enforcement and
//! optional-null omission need it: which keys each object defines (and whether they
//! are optional), which positions are opaque JSON, which arrays hold what, and which
//! positions are unions discriminated by a tag.

/// The shape of a JSON position.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// Opaque or scalar: passed whole (state, metadata, payloads, strings, numbers).
    Any,
    /// An object with known keys.
    Obj(&'static Obj),
    /// An array of elements of one shape.
    Arr(&'static Shape),
    /// A union of objects discriminated by a tag key.
    Union(&'static Union),
    /// A string or an array of elements of one shape (message content).
    TextOr(&'static Shape),
}

/// One key of an object.
#[derive(Debug)]
pub(crate) struct Field {
    pub key: &'static str,
    pub shape: Shape,
    pub optional: bool,
}

/// An object shape.
#[derive(Debug)]
pub(crate) struct Obj {
    pub fields: &'static [Field],
    /// Keys it does not define are kept (JSON Patch operations, RFC 6902 §4).
    pub spec_open: bool,
}

impl Obj {
    pub fn field(&self, key: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.key == key)
    }
}

/// A discriminated union.
#[derive(Debug)]
pub(crate) struct Union {
    pub tag: &'static str,
    pub members: &'static [(&'static str, &'static Obj)],
}

impl Union {
    pub fn member(&self, tag: &str) -> Option<&'static Obj> {
        self.members
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, o)| *o)
    }
}

const fn req(key: &'static str, shape: Shape) -> Field {
    Field {
        key,
        shape,
        optional: false,
    }
}
const fn opt(key: &'static str, shape: Shape) -> Field {
    Field {
        key,
        shape,
        optional: true,
    }
}
const fn obj(fields: &'static [Field]) -> Obj {
    Obj {
        fields,
        spec_open: false,
    }
}
const fn open(fields: &'static [Field]) -> Obj {
    Obj {
        fields,
        spec_open: true,
    }
}

use Shape::Any as A;

// ---- shared types ----------------------------------------------------------------

static TOKEN_USAGE: Obj = obj(&[
    opt("provider", A),
    opt("model", A),
    opt("inputTokens", A),
    opt("outputTokens", A),
    opt("totalTokens", A),
    opt("reasoningTokens", A),
    opt("cachedInputTokens", A),
    opt("cacheWriteInputTokens", A),
]);
static USAGE: Shape = Shape::Obj(&TOKEN_USAGE);

static INTERRUPT: Obj = obj(&[
    opt("subagentRunId", A),
    req("id", A),
    req("reason", A),
    opt("message", A),
    opt("toolCallId", A),
    opt("responseSchema", A),
    opt("expiresAt", A),
    opt("metadata", A),
]);
static INTERRUPT_SHAPE: Shape = Shape::Obj(&INTERRUPT);

static OUTCOME_SUCCESS: Obj = obj(&[req("type", A), opt("pendingToolCallIds", A)]);
static OUTCOME_INTERRUPT: Obj = obj(&[
    req("type", A),
    req("interrupts", Shape::Arr(&INTERRUPT_SHAPE)),
]);
static OUTCOME_CANCELLED: Obj = obj(&[req("type", A)]);
static RUN_OUTCOME: Union = Union {
    tag: "type",
    members: &[
        ("success", &OUTCOME_SUCCESS),
        ("interrupt", &OUTCOME_INTERRUPT),
        ("cancelled", &OUTCOME_CANCELLED),
    ],
};

static SUB_SUCCESS: Obj = obj(&[req("type", A)]);
static SUB_SUSPENDED: Obj = obj(&[req("type", A), opt("interruptIds", A)]);
static SUB_OUTCOME: Union = Union {
    tag: "type",
    members: &[("success", &SUB_SUCCESS), ("suspended", &SUB_SUSPENDED)],
};

static OP_VALUE: Obj = open(&[req("op", A), req("path", A), req("value", A)]);
static OP_PATH: Obj = open(&[req("op", A), req("path", A)]);
static OP_FROM: Obj = open(&[req("op", A), req("from", A), req("path", A)]);
static PATCH_OP: Union = Union {
    tag: "op",
    members: &[
        ("add", &OP_VALUE),
        ("remove", &OP_PATH),
        ("replace", &OP_VALUE),
        ("move", &OP_FROM),
        ("copy", &OP_FROM),
        ("test", &OP_VALUE),
    ],
};
static PATCH_OP_SHAPE: Shape = Shape::Union(&PATCH_OP);
static PATCH: Shape = Shape::Arr(&PATCH_OP_SHAPE);

static SRC_DATA: Obj = obj(&[req("type", A), req("value", A), req("mimeType", A)]);
static SRC_URL: Obj = obj(&[req("type", A), req("value", A), opt("mimeType", A)]);
static SRC_FILE: Obj = obj(&[
    req("type", A),
    req("value", A),
    opt("provider", A),
    opt("mimeType", A),
]);
static PART_SOURCE: Union = Union {
    tag: "type",
    members: &[("data", &SRC_DATA), ("url", &SRC_URL), ("file", &SRC_FILE)],
};
static PART_TEXT: Obj = obj(&[
    req("type", A),
    opt("id", A),
    req("text", A),
    opt("metadata", A),
]);
static PART_MEDIA: Obj = obj(&[
    req("type", A),
    opt("id", A),
    req("source", Shape::Union(&PART_SOURCE)),
    opt("metadata", A),
]);
static CONTENT_PART: Union = Union {
    tag: "type",
    members: &[
        ("text", &PART_TEXT),
        ("image", &PART_MEDIA),
        ("audio", &PART_MEDIA),
        ("video", &PART_MEDIA),
        ("document", &PART_MEDIA),
    ],
};
static PART_SHAPE: Shape = Shape::Union(&CONTENT_PART);
static CONTENT: Shape = Shape::TextOr(&PART_SHAPE);

static FUNCTION_CALL: Obj = obj(&[req("name", A), req("arguments", A)]);
static TOOL_CALL: Obj = obj(&[
    req("id", A),
    req("type", A),
    req("function", Shape::Obj(&FUNCTION_CALL)),
    opt("encryptedValue", A),
    opt("encryptedValueType", A),
    opt("metadata", A),
]);
static TOOL_CALL_SHAPE: Shape = Shape::Obj(&TOOL_CALL);

static MSG_DEVELOPER: Obj = obj(&[
    opt("subagentRunId", A),
    req("id", A),
    req("role", A),
    opt("name", A),
    opt("encryptedValue", A),
    opt("encryptedValueType", A),
    opt("metadata", A),
    req("content", A),
]);
static MSG_ASSISTANT: Obj = obj(&[
    opt("subagentRunId", A),
    req("id", A),
    req("role", A),
    opt("name", A),
    opt("encryptedValue", A),
    opt("encryptedValueType", A),
    opt("metadata", A),
    opt("content", A),
    opt("toolCalls", Shape::Arr(&TOOL_CALL_SHAPE)),
]);
static MSG_USER: Obj = obj(&[
    opt("subagentRunId", A),
    req("id", A),
    req("role", A),
    opt("name", A),
    opt("encryptedValue", A),
    opt("encryptedValueType", A),
    opt("metadata", A),
    req("content", CONTENT),
]);
static MSG_TOOL: Obj = obj(&[
    opt("subagentRunId", A),
    req("id", A),
    req("role", A),
    req("content", CONTENT),
    req("toolCallId", A),
    opt("error", A),
    opt("encryptedValue", A),
    opt("encryptedValueType", A),
    opt("metadata", A),
]);
static MSG_ACTIVITY: Obj = obj(&[
    opt("subagentRunId", A),
    req("id", A),
    req("role", A),
    req("activityType", A),
    req("content", A),
    opt("metadata", A),
]);
static MSG_REASONING: Obj = obj(&[
    opt("subagentRunId", A),
    req("id", A),
    req("role", A),
    req("content", A),
    opt("encryptedValue", A),
    opt("encryptedValueType", A),
    opt("metadata", A),
]);
static MESSAGE: Union = Union {
    tag: "role",
    members: &[
        ("developer", &MSG_DEVELOPER),
        ("system", &MSG_DEVELOPER),
        ("assistant", &MSG_ASSISTANT),
        ("user", &MSG_USER),
        ("tool", &MSG_TOOL),
        ("activity", &MSG_ACTIVITY),
        ("reasoning", &MSG_REASONING),
    ],
};
static MESSAGE_SHAPE: Shape = Shape::Union(&MESSAGE);
static MESSAGES: Shape = Shape::Arr(&MESSAGE_SHAPE);

static TOOL: Obj = obj(&[
    req("name", A),
    req("description", A),
    opt("parameters", A),
    opt("metadata", A),
]);
static TOOL_SHAPE: Shape = Shape::Obj(&TOOL);
static CONTEXT: Obj = obj(&[req("description", A), req("value", A)]);
static CONTEXT_SHAPE: Shape = Shape::Obj(&CONTEXT);
static RESUME_ENTRY: Obj = obj(&[
    req("interruptId", A),
    req("status", A),
    opt("payload", A),
    opt("metadata", A),
]);
static RESUME_SHAPE: Shape = Shape::Obj(&RESUME_ENTRY);

/// `RunAgentInput`.
pub(crate) static RUN_AGENT_INPUT: Obj = obj(&[
    req("threadId", A),
    req("runId", A),
    opt("protocolVersion", A),
    opt("parentRunId", A),
    opt("state", A),
    req("messages", MESSAGES),
    opt("tools", Shape::Arr(&TOOL_SHAPE)),
    opt("context", Shape::Arr(&CONTEXT_SHAPE)),
    opt("forwardedProps", A),
    opt("resume", Shape::Arr(&RESUME_SHAPE)),
]);

// ---- events ------------------------------------------------------------------------

macro_rules! event {
    ($name:ident, attributable, [$($f:expr),* $(,)?]) => {
        static $name: Obj = obj(&[
            req("type", A), opt("timestamp", A), opt("rawEvent", A), opt("metadata", A),
            opt("subagentRunId", A), $($f),*
        ]);
    };
    ($name:ident, run_scoped, [$($f:expr),* $(,)?]) => {
        static $name: Obj = obj(&[
            req("type", A), opt("timestamp", A), opt("rawEvent", A), opt("metadata", A), $($f),*
        ]);
    };
    ($name:ident, subagent, [$($f:expr),* $(,)?]) => {
        static $name: Obj = obj(&[
            req("type", A), opt("timestamp", A), opt("rawEvent", A), opt("metadata", A),
            req("subagentRunId", A), $($f),*
        ]);
    };
}

event!(
    TEXT_MESSAGE_START,
    attributable,
    [req("messageId", A), opt("role", A), opt("name", A)]
);
event!(
    TEXT_MESSAGE_CONTENT,
    attributable,
    [req("messageId", A), req("delta", A)]
);
event!(TEXT_MESSAGE_END, attributable, [req("messageId", A)]);
event!(
    TEXT_MESSAGE_CHUNK,
    attributable,
    [
        opt("messageId", A),
        opt("role", A),
        opt("delta", A),
        opt("name", A)
    ]
);
event!(
    TOOL_CALL_START,
    attributable,
    [
        req("toolCallId", A),
        req("toolCallName", A),
        opt("parentMessageId", A)
    ]
);
event!(
    TOOL_CALL_ARGS,
    attributable,
    [req("toolCallId", A), req("delta", A)]
);
event!(TOOL_CALL_END, attributable, [req("toolCallId", A)]);
event!(
    TOOL_CALL_CHUNK,
    attributable,
    [
        opt("toolCallId", A),
        opt("toolCallName", A),
        opt("parentMessageId", A),
        opt("delta", A)
    ]
);
event!(
    TOOL_CALL_RESULT,
    attributable,
    [
        req("messageId", A),
        req("toolCallId", A),
        req("content", CONTENT),
        opt("role", A)
    ]
);
event!(STATE_SNAPSHOT, attributable, [req("snapshot", A)]);
event!(STATE_DELTA, attributable, [req("delta", PATCH)]);
event!(MESSAGES_SNAPSHOT, run_scoped, [req("messages", MESSAGES)]);
event!(
    ACTIVITY_SNAPSHOT,
    attributable,
    [
        req("messageId", A),
        req("activityType", A),
        req("content", A),
        opt("replace", A)
    ]
);
event!(
    ACTIVITY_DELTA,
    attributable,
    [
        req("messageId", A),
        req("activityType", A),
        req("patch", PATCH)
    ]
);
event!(RAW, attributable, [req("event", A), opt("source", A)]);
event!(CUSTOM, attributable, [req("name", A), req("value", A)]);
event!(
    RUN_STARTED,
    run_scoped,
    [
        req("threadId", A),
        req("runId", A),
        opt("protocolVersion", A),
        opt("parentRunId", A),
        opt("input", Shape::Obj(&RUN_AGENT_INPUT))
    ]
);
event!(
    RUN_FINISHED,
    run_scoped,
    [
        req("threadId", A),
        req("runId", A),
        opt("result", A),
        opt("outcome", Shape::Union(&RUN_OUTCOME)),
        opt("usage", Shape::Arr(&USAGE))
    ]
);
event!(
    RUN_ERROR,
    run_scoped,
    [
        req("message", A),
        opt("code", A),
        opt("usage", Shape::Arr(&USAGE))
    ]
);
event!(STEP_STARTED, attributable, [req("stepName", A)]);
event!(STEP_FINISHED, attributable, [req("stepName", A)]);
event!(REASONING_START, attributable, [req("messageId", A)]);
event!(
    REASONING_MESSAGE_START,
    attributable,
    [req("messageId", A), req("role", A)]
);
event!(
    REASONING_MESSAGE_CONTENT,
    attributable,
    [req("messageId", A), req("delta", A)]
);
event!(REASONING_MESSAGE_END, attributable, [req("messageId", A)]);
event!(
    REASONING_MESSAGE_CHUNK,
    attributable,
    [opt("messageId", A), opt("delta", A)]
);
event!(REASONING_END, attributable, [req("messageId", A)]);
event!(
    REASONING_ENCRYPTED_VALUE,
    attributable,
    [
        req("subtype", A),
        req("entityId", A),
        req("encryptedValue", A),
        opt("encryptedValueType", A)
    ]
);
event!(
    SUBAGENT_STARTED,
    subagent,
    [
        req("name", A),
        opt("description", A),
        opt("parentSubagentRunId", A),
        opt("parentToolCallId", A),
        opt("parentMessageId", A)
    ]
);
event!(
    SUBAGENT_FINISHED,
    subagent,
    [opt("result", A), opt("outcome", Shape::Union(&SUB_OUTCOME))]
);
event!(
    SUBAGENT_ERROR,
    subagent,
    [req("message", A), opt("code", A)]
);

/// The schema of an event type, by wire name.
pub(crate) fn event_schema(ty: &str) -> Option<&'static Obj> {
    Some(match ty {
        "TEXT_MESSAGE_START" => &TEXT_MESSAGE_START,
        "TEXT_MESSAGE_CONTENT" => &TEXT_MESSAGE_CONTENT,
        "TEXT_MESSAGE_END" => &TEXT_MESSAGE_END,
        "TEXT_MESSAGE_CHUNK" => &TEXT_MESSAGE_CHUNK,
        "TOOL_CALL_START" => &TOOL_CALL_START,
        "TOOL_CALL_ARGS" => &TOOL_CALL_ARGS,
        "TOOL_CALL_END" => &TOOL_CALL_END,
        "TOOL_CALL_CHUNK" => &TOOL_CALL_CHUNK,
        "TOOL_CALL_RESULT" => &TOOL_CALL_RESULT,
        "STATE_SNAPSHOT" => &STATE_SNAPSHOT,
        "STATE_DELTA" => &STATE_DELTA,
        "MESSAGES_SNAPSHOT" => &MESSAGES_SNAPSHOT,
        "ACTIVITY_SNAPSHOT" => &ACTIVITY_SNAPSHOT,
        "ACTIVITY_DELTA" => &ACTIVITY_DELTA,
        "RAW" => &RAW,
        "CUSTOM" => &CUSTOM,
        "RUN_STARTED" => &RUN_STARTED,
        "RUN_FINISHED" => &RUN_FINISHED,
        "RUN_ERROR" => &RUN_ERROR,
        "STEP_STARTED" => &STEP_STARTED,
        "STEP_FINISHED" => &STEP_FINISHED,
        "REASONING_START" => &REASONING_START,
        "REASONING_MESSAGE_START" => &REASONING_MESSAGE_START,
        "REASONING_MESSAGE_CONTENT" => &REASONING_MESSAGE_CONTENT,
        "REASONING_MESSAGE_END" => &REASONING_MESSAGE_END,
        "REASONING_MESSAGE_CHUNK" => &REASONING_MESSAGE_CHUNK,
        "REASONING_END" => &REASONING_END,
        "REASONING_ENCRYPTED_VALUE" => &REASONING_ENCRYPTED_VALUE,
        "SUBAGENT_STARTED" => &SUBAGENT_STARTED,
        "SUBAGENT_FINISHED" => &SUBAGENT_FINISHED,
        "SUBAGENT_ERROR" => &SUBAGENT_ERROR,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::*;
    use crate::types::*;

    fn keys(o: &Obj) -> Vec<&'static str> {
        let mut k: Vec<_> = o.fields.iter().map(|f| f.key).collect();
        k.sort_unstable();
        k
    }

    fn with_type(k: &[&'static str]) -> Vec<&'static str> {
        let mut v = k.to_vec();
        v.push("type");
        v.sort_unstable();
        v
    }

    /// The table agrees with the typed model on which keys each object defines.
    #[test]
    fn table_matches_typed_model() {
        for ty in crate::event::EventType::ALL {
            assert!(event_schema(ty.as_str()).is_some(), "{ty}");
        }
        assert_eq!(
            keys(&TEXT_MESSAGE_START),
            with_type(TextMessageStart::WIRE_KEYS)
        );
        assert_eq!(keys(&TOOL_CALL_CHUNK), with_type(ToolCallChunk::WIRE_KEYS));
        assert_eq!(
            keys(&TOOL_CALL_RESULT),
            with_type(ToolCallResult::WIRE_KEYS)
        );
        assert_eq!(keys(&RUN_STARTED), with_type(RunStarted::WIRE_KEYS));
        assert_eq!(keys(&RUN_FINISHED), with_type(RunFinished::WIRE_KEYS));
        assert_eq!(
            keys(&SUBAGENT_STARTED),
            with_type(SubagentStarted::WIRE_KEYS)
        );
        assert_eq!(
            keys(&SUBAGENT_FINISHED),
            with_type(SubagentFinished::WIRE_KEYS)
        );
        assert_eq!(
            keys(&ACTIVITY_SNAPSHOT),
            with_type(ActivitySnapshot::WIRE_KEYS)
        );
        assert_eq!(
            keys(&REASONING_ENCRYPTED_VALUE),
            with_type(ReasoningEncryptedValue::WIRE_KEYS)
        );
        assert_eq!(
            keys(&MESSAGES_SNAPSHOT),
            with_type(MessagesSnapshot::WIRE_KEYS)
        );
        let sorted = |k: &[&'static str]| {
            let mut v = k.to_vec();
            v.sort_unstable();
            v
        };
        assert_eq!(keys(&RUN_AGENT_INPUT), sorted(RunAgentInput::WIRE_KEYS));
        assert_eq!(keys(&INTERRUPT), sorted(Interrupt::WIRE_KEYS));
        assert_eq!(keys(&TOOL_CALL), sorted(ToolCall::WIRE_KEYS));
        assert_eq!(keys(&TOOL), sorted(Tool::WIRE_KEYS));
        assert_eq!(keys(&RESUME_ENTRY), sorted(ResumeEntry::WIRE_KEYS));
        assert_eq!(keys(&TOKEN_USAGE), sorted(TokenUsage::WIRE_KEYS));
        assert_eq!(keys(&MSG_ASSISTANT), with_role(AssistantMessage::WIRE_KEYS));
        assert_eq!(keys(&MSG_USER), with_role(UserMessage::WIRE_KEYS));
        assert_eq!(keys(&MSG_TOOL), with_role(ToolMessage::WIRE_KEYS));
        assert_eq!(keys(&MSG_ACTIVITY), with_role(ActivityMessage::WIRE_KEYS));
        assert_eq!(keys(&MSG_REASONING), with_role(ReasoningMessage::WIRE_KEYS));
        assert_eq!(keys(&MSG_DEVELOPER), with_role(DeveloperMessage::WIRE_KEYS));
        assert_eq!(keys(&PART_MEDIA), with_type(MediaPart::WIRE_KEYS));
        assert_eq!(keys(&SRC_FILE), with_type(FileSource::WIRE_KEYS));
    }

    fn with_role(k: &[&'static str]) -> Vec<&'static str> {
        let mut v = k.to_vec();
        v.push("role");
        v.sort_unstable();
        v
    }
}
