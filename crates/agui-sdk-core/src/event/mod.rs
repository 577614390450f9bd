//! The 31 AG-UI 1.1 events, one struct each, gathered in the [`Event`] enum that is
//! tagged by `type` on the wire.
//!
//! `Event` is `#[non_exhaustive]`: a 1.x protocol release may add event types without
//! a breaking release of this crate. The event structs are plain data with public
//! fields; each keeps the keys it does not know in `extra`. The large, rare events
//! (`RUN_STARTED`, `RUN_FINISHED`, the `SUBAGENT_*` starts and finishes, tool call starts,
//! results and chunks, snapshots, `RAW`, `CUSTOM`, …) are boxed inside [`Event`], so an
//! `Event` is the size of a `TEXT_MESSAGE_START` (120 bytes, not 480): match them as
//! `Event::RunFinished(e)` and use `e` as usual (it dereferences), build them with
//! `Event::from(..)` or the short constructors. Every event's `rawEvent`, `metadata` and
//! unknown keys, rare on the wire, are boxed in their structs for the same reason
//! (`raw_event: Option<Box<Value>>`, `metadata: Option<Box<JsonObject>>`, `extra`:
//! [`Extra`](crate::Extra), one pointer when empty). Build the
//! structs with `new` (the
//! required fields) and struct update syntax from it (the optional ones), or with the
//! short constructors on [`Event`]. Only an event whose fields are all optional (the
//! three `*_CHUNK` events) has `Default`; an empty `TEXT_MESSAGE_CONTENT` would not be
//! valid, so it cannot be built by accident:
//!
//! ```compile_fail
//! let empty = agui_sdk_core::event::TextMessageContent::default();
//! ```
//!
//! ```
//! use agui_sdk_core::event::{TextMessageChunk, TextMessageStart};
//! use agui_sdk_core::types::TextMessageRole;
//! let start = TextMessageStart {
//!     role: Some(TextMessageRole::User),
//!     ..TextMessageStart::new("m1")
//! };
//! // A continuation chunk leaves the id out.
//! let more = TextMessageChunk { delta: Some("…".into()), ..Default::default() };
//! # let _ = (start, more);
//! ```

#[macro_use]
mod macros;
mod activity;
// `Recycler` is public through `encoding::sse::parallel` with `unstable-parallel` only.
mod lifecycle;
#[cfg_attr(not(feature = "unstable-parallel"), allow(unreachable_pub))]
pub(crate) mod plain;
mod reasoning;
mod special;
mod state;
mod subagent;
mod text;
mod tool;

pub use activity::*;
pub use lifecycle::*;
pub use reasoning::*;
pub use special::*;
pub use state::*;
pub use subagent::*;
pub use text::*;
pub use tool::*;

use serde_json::Value;

use crate::types::{Content, JsonPatch, Message};
use crate::JsonObject;

/// What an event does to a pending chunk stream, as the list of events writes it:
/// `chunk` (a chunk event: expanded), `ends` (ends the stream pending in its lane) or
/// `keeps` (passes through it). Any other word does not compile.
macro_rules! chunks {
    (@is_chunk chunk) => {
        true
    };
    (@is_chunk ends) => {
        false
    };
    (@is_chunk keeps) => {
        false
    };
    (@ends chunk) => {
        false
    };
    (@ends ends) => {
        true
    };
    (@ends keeps) => {
        false
    };
}

/// Declares the [`Event`] enum, [`EventType`] and the per-variant accessors from one list.
macro_rules! events {
    ($(
        $variant:ident = $wire:literal, $ctor:ident, $callback:ident, $inner:ty, $proto:tt,
        ($family:ident, $chunks:ident, $since:ident);
    )*) => {
        wire_union! {
            /// Any AG-UI event, discriminated by `type`.
            #[non_exhaustive]
            pub enum Event : tag "type", expecting "an AG-UI event object with a `type`" {
                $(
                    #[doc = concat!("`", $wire, "`.")]
                    $variant($inner) = $wire,
                )*
            }
        }

        $(
            impl From<$variant> for Event {
                fn from(e: $variant) -> Event {
                    Event::$variant(e.into())
                }
            }
        )*

        /// The `type` of an event.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum EventType {
            $(
                #[doc = concat!("`", $wire, "`.")]
                $variant,
            )*
        }

        impl EventType {
            /// All 31 event types of protocol 1.1.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),*];

            /// The wire name (`TEXT_MESSAGE_CONTENT`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( EventType::$variant => $wire, )*
                }
            }

            /// The type with this wire name.
            pub fn from_wire(name: &str) -> Option<EventType> {
                match name {
                    $( $wire => Some(EventType::$variant), )*
                    _ => None,
                }
            }

            /// The family the type belongs to (`TEXT_MESSAGE_*` are
            /// [`EventFamily::Text`], and so on).
            #[inline]
            pub const fn family(self) -> EventFamily {
                match self {
                    $( EventType::$variant => EventFamily::$family, )*
                }
            }

            /// The protocol release that introduced the type.
            #[inline]
            pub const fn since(self) -> Since {
                match self {
                    $( EventType::$variant => Since::$since, )*
                }
            }

            /// Whether the type is one of the `*_CHUNK` events, which chunk expansion
            /// ([`ChunkExpander`](crate::semantics::ChunkExpander)) turns into start,
            /// content and end events.
            #[inline]
            pub const fn is_chunk(self) -> bool {
                match self {
                    $( EventType::$variant => chunks!(@is_chunk $chunks), )*
                }
            }

            /// Whether the type is run-scoped: it has no `subagentRunId` and belongs to
            /// the run as a whole (`RUN_*` and `MESSAGES_SNAPSHOT`).
            #[inline]
            pub const fn is_run_scoped(self) -> bool {
                match self {
                    $( EventType::$variant => $variant::RUN_SCOPED, )*
                }
            }

            /// Whether an event of this type ends the chunk stream pending in its lane
            /// (its subagent's, or for a run-scoped event every lane) before it passes
            /// chunk expansion; `false` for the chunk events themselves and for the
            /// events the reference lets through a pending stream.
            #[inline]
            pub(crate) const fn ends_pending_chunks(self) -> bool {
                match self {
                    $( EventType::$variant => chunks!(@ends $chunks), )*
                }
            }
        }

        impl Event {
            /// This event's type.
            #[inline]
            pub fn event_type(&self) -> EventType {
                match self {
                    $( Event::$variant(_) => EventType::$variant, )*
                }
            }

            /// The subagent invocation the event belongs to: its attribution tag, or for
            /// `SUBAGENT_*` events the invocation's identity. `None` for run-scoped events.
            #[inline]
            pub fn subagent_run_id(&self) -> Option<&str> {
                match self {
                    $( Event::$variant(e) => e.attribution(), )*
                }
            }

            /// The optional attribution tag, mutably: `None` for events that carry none
            /// (run-scoped events) or whose id is their identity (`SUBAGENT_*`).
            #[inline]
            pub fn subagent_run_id_mut(&mut self) -> Option<&mut Option<String>> {
                match self {
                    $( Event::$variant(e) => e.attribution_mut(), )*
                }
            }

            /// The event's `timestamp`.
            pub fn timestamp(&self) -> Option<i64> {
                match self {
                    $( Event::$variant(e) => e.timestamp, )*
                }
            }

            /// Sets the event's `timestamp`.
            pub fn set_timestamp(&mut self, ts: Option<i64>) {
                match self {
                    $( Event::$variant(e) => e.timestamp = ts, )*
                }
            }

            /// The event's `metadata`.
            pub fn metadata(&self) -> Option<&JsonObject> {
                match self {
                    $( Event::$variant(e) => e.metadata.as_deref(), )*
                }
            }

            /// The event's `metadata`, mutably (boxed: a rare field, kept out of the
            /// event's own size).
            pub fn metadata_mut(&mut self) -> &mut Option<Box<JsonObject>> {
                match self {
                    $( Event::$variant(e) => &mut e.metadata, )*
                }
            }

            /// The event's `rawEvent`.
            pub fn raw_event(&self) -> Option<&Value> {
                match self {
                    $( Event::$variant(e) => e.raw_event.as_deref(), )*
                }
            }

            /// The event's `rawEvent`, mutably (boxed, as `metadata`).
            pub fn raw_event_mut(&mut self) -> &mut Option<Box<Value>> {
                match self {
                    $( Event::$variant(e) => &mut e.raw_event, )*
                }
            }

            /// Unknown keys carried by the event, mutably (an [`Extra`](crate::Extra):
            /// it allocates only when written to).
            pub fn extra_mut(&mut self) -> &mut crate::Extra {
                match self {
                    $( Event::$variant(e) => &mut e.extra, )*
                }
            }
        }
    };
}

/// Calls the macro `$m` with the list of every event: `Variant = "WIRE_NAME",
/// snake_name, on_callback, Payload, [protobuf table], (Family, chunks, Since);` once per
/// event, in the protocol's order. This list is the one place an event type is declared:
/// the [`Event`] enum, [`EventType`], the per-event callbacks of the client's
/// `Subscriber`, the protobuf codec and the methods the pipeline's stages sort events by
/// are all generated from it, so a new event appears everywhere at once. Only the
/// stages that act on each event one by one (the reducer, the verifier, the open-stream
/// tracker, chunk expansion and, in tests, the protobuf oracle) `match` over [`Event`]
/// without a catch-all arm, and fail to compile until they handle it.
///
/// The last group sorts the event: its [`EventFamily`] ([`EventType::family`]); what it
/// does to a chunk stream pending in its lane, `chunk` (it is one of the `*_CHUNK`
/// events, [`EventType::is_chunk`]), `ends` (it ends the stream) or `keeps` (it passes
/// through, as `RAW` and `ACTIVITY_*` do in the reference); and the [`Since`] release
/// that introduced it ([`EventType::since`]). Whether it is run-scoped
/// ([`EventType::is_run_scoped`]) and where its `subagentRunId` is
/// ([`Event::subagent_run_id`]) come from its struct's declaration.
///
/// The protobuf table reads `[arm => tag field, …]`: `arm` is the event's field number
/// in the `ag_ui.Event` oneof, then each field number of the event's message (field 1,
/// `base_event`, is implied) with the struct field it carries, in field-number order. A
/// field's Rust type picks its protobuf encoding; `lo..=hi field as Codec` hands a run
/// of field numbers that together carry one Rust field to a codec of its own (an
/// outcome spread over several wire fields). A consumer that does not need the table
/// matches it, and the sorting group, as one `tt` each.
#[macro_export]
macro_rules! for_each_event {
    ($m:ident) => {
        $m! {
            TextMessageStart = "TEXT_MESSAGE_START", text_message_start, on_text_message_start, TextMessageStart,
                [1 => 2 message_id, 3 role, 4 name, 5 subagent_run_id], (Text, ends, V0_0);
            TextMessageContent = "TEXT_MESSAGE_CONTENT", text_message_content, on_text_message_content, TextMessageContent,
                [2 => 2 message_id, 3 delta, 4 subagent_run_id], (Text, ends, V0_0);
            TextMessageEnd = "TEXT_MESSAGE_END", text_message_end, on_text_message_end, TextMessageEnd,
                [3 => 2 message_id, 3 subagent_run_id], (Text, ends, V0_0);
            TextMessageChunk = "TEXT_MESSAGE_CHUNK", text_message_chunk, on_text_message_chunk, Box<TextMessageChunk>,
                [17 => 2 message_id, 3 role, 4 delta, 5 name, 6 subagent_run_id], (Text, chunk, V0_0);
            ToolCallStart = "TOOL_CALL_START", tool_call_start, on_tool_call_start, Box<ToolCallStart>,
                [4 => 2 tool_call_id, 3 tool_call_name, 4 parent_message_id, 5 subagent_run_id], (ToolCall, ends, V0_0);
            ToolCallArgs = "TOOL_CALL_ARGS", tool_call_args, on_tool_call_args, ToolCallArgs,
                [5 => 2 tool_call_id, 3 delta, 4 subagent_run_id], (ToolCall, ends, V0_0);
            ToolCallEnd = "TOOL_CALL_END", tool_call_end, on_tool_call_end, ToolCallEnd,
                [6 => 2 tool_call_id, 3 subagent_run_id], (ToolCall, ends, V0_0);
            ToolCallChunk = "TOOL_CALL_CHUNK", tool_call_chunk, on_tool_call_chunk, Box<ToolCallChunk>,
                [18 => 2 tool_call_id, 3 tool_call_name, 4 parent_message_id, 5 delta, 6 subagent_run_id], (ToolCall, chunk, V0_0);
            ToolCallResult = "TOOL_CALL_RESULT", tool_call_result, on_tool_call_result, Box<ToolCallResult>,
                [22 => 2 subagent_run_id, 3 message_id, 4 tool_call_id, 5..=7 content as ToolResultBody], (ToolCall, ends, V0_0);
            StateSnapshot = "STATE_SNAPSHOT", state_snapshot, on_state_snapshot, Box<StateSnapshot>,
                [7 => 2 snapshot, 3 subagent_run_id], (State, ends, V0_0);
            StateDelta = "STATE_DELTA", state_delta, on_state_delta, StateDelta,
                [8 => 2 delta, 3 subagent_run_id], (State, ends, V0_0);
            MessagesSnapshot = "MESSAGES_SNAPSHOT", messages_snapshot, on_messages_snapshot, MessagesSnapshot,
                [9 => 2 messages], (Messages, ends, V0_0);
            ActivitySnapshot = "ACTIVITY_SNAPSHOT", activity_snapshot, on_activity_snapshot, Box<ActivitySnapshot>,
                [23 => 2 subagent_run_id, 3 message_id, 4 activity_type, 5 content, 6 replace], (Activity, keeps, V0_0);
            ActivityDelta = "ACTIVITY_DELTA", activity_delta, on_activity_delta, Box<ActivityDelta>,
                [24 => 2 subagent_run_id, 3 message_id, 4 activity_type, 5 patch], (Activity, keeps, V0_0);
            Raw = "RAW", raw, on_raw, Box<Raw>,
                [10 => 2 event, 3 source, 4 subagent_run_id], (Special, keeps, V0_0);
            Custom = "CUSTOM", custom, on_custom, Box<Custom>,
                [11 => 2 name, 3 value, 4 subagent_run_id], (Special, ends, V0_0);
            RunStarted = "RUN_STARTED", run_started, on_run_started_event, Box<RunStarted>,
                [12 => 2 thread_id, 3 run_id, 4 parent_run_id, 5 input, 6 protocol_version], (Run, ends, V0_0);
            RunFinished = "RUN_FINISHED", run_finished, on_run_finished_event, Box<RunFinished>,
                [13 => 2 thread_id, 3 run_id, 4 result, 5..=8 outcome as RunFinishedTail], (Run, ends, V0_0);
            RunError = "RUN_ERROR", run_error, on_run_error_event, RunError,
                [14 => 2 code, 3 message, 4 usage], (Run, ends, V0_0);
            StepStarted = "STEP_STARTED", step_started, on_step_started, StepStarted,
                [15 => 2 step_name, 3 subagent_run_id], (Step, ends, V0_0);
            StepFinished = "STEP_FINISHED", step_finished, on_step_finished, StepFinished,
                [16 => 2 step_name, 3 subagent_run_id], (Step, ends, V0_0);
            ReasoningStart = "REASONING_START", reasoning_start, on_reasoning_start, ReasoningStart,
                [25 => 2 subagent_run_id, 3 message_id], (Reasoning, ends, V0_0);
            ReasoningMessageStart = "REASONING_MESSAGE_START", reasoning_message_start, on_reasoning_message_start, ReasoningMessageStart,
                [26 => 2 subagent_run_id, 3 message_id, 4 role], (Reasoning, ends, V0_0);
            ReasoningMessageContent = "REASONING_MESSAGE_CONTENT", reasoning_message_content, on_reasoning_message_content, ReasoningMessageContent,
                [27 => 2 subagent_run_id, 3 message_id, 4 delta], (Reasoning, ends, V0_0);
            ReasoningMessageEnd = "REASONING_MESSAGE_END", reasoning_message_end, on_reasoning_message_end, ReasoningMessageEnd,
                [28 => 2 subagent_run_id, 3 message_id], (Reasoning, ends, V0_0);
            ReasoningMessageChunk = "REASONING_MESSAGE_CHUNK", reasoning_message_chunk, on_reasoning_message_chunk, ReasoningMessageChunk,
                [29 => 2 subagent_run_id, 3 message_id, 4 delta], (Reasoning, chunk, V0_0);
            ReasoningEnd = "REASONING_END", reasoning_end, on_reasoning_end, ReasoningEnd,
                [30 => 2 subagent_run_id, 3 message_id], (Reasoning, ends, V0_0);
            ReasoningEncryptedValue = "REASONING_ENCRYPTED_VALUE", reasoning_encrypted_value, on_reasoning_encrypted_value, Box<ReasoningEncryptedValue>,
                [31 => 2 subagent_run_id, 3 subtype, 4 entity_id, 5 encrypted_value, 6 encrypted_value_type], (Reasoning, keeps, V0_0);
            SubagentStarted = "SUBAGENT_STARTED", subagent_started, on_subagent_started, Box<SubagentStarted>,
                [19 => 2 subagent_run_id, 3 name, 4 description, 5 parent_subagent_run_id, 6 parent_tool_call_id, 7 parent_message_id], (Subagent, keeps, V1_0);
            SubagentFinished = "SUBAGENT_FINISHED", subagent_finished, on_subagent_finished, Box<SubagentFinished>,
                [20 => 2 subagent_run_id, 3 result, 4..=5 outcome as SubagentTail], (Subagent, ends, V1_0);
            SubagentError = "SUBAGENT_ERROR", subagent_error, on_subagent_error, SubagentError,
                [21 => 2 subagent_run_id, 3 message, 4 code], (Subagent, ends, V1_0);
        }
    };
}

for_each_event!(events);

/// The family of an event type: what it is about. See [`EventType::family`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventFamily {
    /// The run's boundaries: `RUN_STARTED`, `RUN_FINISHED`, `RUN_ERROR`.
    Run,
    /// `STEP_STARTED`, `STEP_FINISHED`.
    Step,
    /// `TEXT_MESSAGE_*`.
    Text,
    /// `TOOL_CALL_*`, `TOOL_CALL_RESULT` included.
    ToolCall,
    /// `STATE_SNAPSHOT`, `STATE_DELTA`.
    State,
    /// `MESSAGES_SNAPSHOT`.
    Messages,
    /// `ACTIVITY_SNAPSHOT`, `ACTIVITY_DELTA`.
    Activity,
    /// `REASONING_*`, `REASONING_ENCRYPTED_VALUE` included.
    Reasoning,
    /// `SUBAGENT_STARTED`, `SUBAGENT_FINISHED`, `SUBAGENT_ERROR`.
    Subagent,
    /// The pass-through events `RAW` and `CUSTOM`.
    Special,
}

/// The protocol release that introduced an event type. See [`EventType::since`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Since {
    /// The 0.0.x releases before 1.0: a pre-1.0 consumer (`@ag-ui/core` 0.0.48) knows it.
    V0_0,
    /// Protocol 1.0.
    V1_0,
    /// Protocol 1.1.
    V1_1,
}

impl EventType {
    /// Whether the type ends a run: `RUN_FINISHED` or `RUN_ERROR`.
    #[inline]
    pub const fn is_terminal(self) -> bool {
        matches!(self, EventType::RunFinished | EventType::RunError)
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for EventType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for EventType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let k = crate::wire::de::Key::deserialize(d)?;
        EventType::from_wire(k.as_str())
            .ok_or_else(|| serde::de::Error::unknown_variant(k.as_str(), Event::TAGS))
    }
}

impl Event {
    /// The family of the event's type. See [`EventType::family`].
    #[inline]
    pub fn family(&self) -> EventFamily {
        self.event_type().family()
    }

    /// Decodes one event from JSON bytes, strictly as the reference schema does. The
    /// error names the failing field.
    ///
    /// The streamed-content events in their plain shape (three string members) are read
    /// directly, without serde; everything else, and every error, goes through the
    /// exact decoder.
    #[inline]
    pub fn from_json_slice(bytes: &[u8]) -> Result<Event, crate::wire::JsonError> {
        plain::decode(bytes, &mut String::with_capacity)
    }

    /// Decodes one event from a JSON string. See [`Event::from_json_slice`].
    pub fn from_json_str(s: &str) -> Result<Event, crate::wire::JsonError> {
        match plain::read(s) {
            Some(event) => Ok(event),
            None => crate::wire::decode_text(s),
        }
    }

    /// Writes the event's canonical wire JSON (keys in the reference order, numbers as
    /// ECMAScript spells them: what [`crate::wire::write_canonical`] writes of it) into
    /// `out`: the same bytes as the data of its SSE frame. It writes straight from the
    /// event's fields, without going through `Serialize` for the fields it can.
    #[inline]
    pub fn write_json(&self, out: &mut Vec<u8>) {
        self.write_json_direct(out);
    }

    /// The event's canonical wire JSON.
    pub fn to_json_string(&self) -> String {
        let mut out = Vec::with_capacity(128);
        self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    // Short constructors for the common events.

    /// `RUN_STARTED` speaking protocol 1.1 ([`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION)).
    pub fn run_started(thread_id: impl Into<String>, run_id: impl Into<String>) -> Event {
        RunStarted::new(thread_id, run_id).into()
    }
    /// A successful `RUN_FINISHED`.
    pub fn run_finished(thread_id: impl Into<String>, run_id: impl Into<String>) -> Event {
        RunFinished::new(thread_id, run_id).into()
    }
    /// `RUN_ERROR`.
    pub fn run_error(message: impl Into<String>) -> Event {
        RunError::new(message).into()
    }
    /// `STEP_STARTED`.
    pub fn step_started(step_name: impl Into<String>) -> Event {
        StepStarted::new(step_name).into()
    }
    /// `STEP_FINISHED`.
    pub fn step_finished(step_name: impl Into<String>) -> Event {
        StepFinished::new(step_name).into()
    }
    /// `TEXT_MESSAGE_START` with role `assistant`.
    pub fn text_message_start(message_id: impl Into<String>) -> Event {
        TextMessageStart::new(message_id).into()
    }
    /// `TEXT_MESSAGE_CONTENT`.
    pub fn text_message_content(message_id: impl Into<String>, delta: impl Into<String>) -> Event {
        TextMessageContent::new(message_id, delta).into()
    }
    /// `TEXT_MESSAGE_END`.
    pub fn text_message_end(message_id: impl Into<String>) -> Event {
        TextMessageEnd::new(message_id).into()
    }
    /// `TOOL_CALL_START`.
    pub fn tool_call_start(
        tool_call_id: impl Into<String>,
        tool_call_name: impl Into<String>,
    ) -> Event {
        ToolCallStart::new(tool_call_id, tool_call_name).into()
    }
    /// `TOOL_CALL_ARGS`.
    pub fn tool_call_args(tool_call_id: impl Into<String>, delta: impl Into<String>) -> Event {
        ToolCallArgs::new(tool_call_id, delta).into()
    }
    /// `TOOL_CALL_END`.
    pub fn tool_call_end(tool_call_id: impl Into<String>) -> Event {
        ToolCallEnd::new(tool_call_id).into()
    }
    /// `TOOL_CALL_RESULT`.
    pub fn tool_call_result(
        message_id: impl Into<String>,
        tool_call_id: impl Into<String>,
        content: impl Into<Content>,
    ) -> Event {
        ToolCallResult::new(message_id, tool_call_id, content).into()
    }
    /// `STATE_SNAPSHOT`.
    pub fn state_snapshot(snapshot: Value) -> Event {
        StateSnapshot::new(snapshot).into()
    }
    /// `STATE_DELTA`.
    pub fn state_delta(delta: JsonPatch) -> Event {
        StateDelta::new(delta).into()
    }
    /// `MESSAGES_SNAPSHOT`.
    pub fn messages_snapshot(messages: Vec<Message>) -> Event {
        MessagesSnapshot::new(messages).into()
    }
    /// `ACTIVITY_SNAPSHOT`.
    pub fn activity_snapshot(
        message_id: impl Into<String>,
        activity_type: impl Into<String>,
        content: JsonObject,
    ) -> Event {
        ActivitySnapshot::new(message_id, activity_type, content).into()
    }
    /// `ACTIVITY_DELTA`.
    pub fn activity_delta(
        message_id: impl Into<String>,
        activity_type: impl Into<String>,
        patch: JsonPatch,
    ) -> Event {
        ActivityDelta::new(message_id, activity_type, patch).into()
    }
    /// `RAW`.
    pub fn raw(event: Value) -> Event {
        Raw::new(event).into()
    }
    /// `CUSTOM`.
    pub fn custom(name: impl Into<String>, value: Value) -> Event {
        Custom::new(name, value).into()
    }
    /// `REASONING_START`.
    pub fn reasoning_start(message_id: impl Into<String>) -> Event {
        ReasoningStart::new(message_id).into()
    }
    /// `REASONING_MESSAGE_START`.
    pub fn reasoning_message_start(message_id: impl Into<String>) -> Event {
        ReasoningMessageStart::new(message_id).into()
    }
    /// `REASONING_MESSAGE_CONTENT`.
    pub fn reasoning_message_content(
        message_id: impl Into<String>,
        delta: impl Into<String>,
    ) -> Event {
        ReasoningMessageContent::new(message_id, delta).into()
    }
    /// `REASONING_MESSAGE_END`.
    pub fn reasoning_message_end(message_id: impl Into<String>) -> Event {
        ReasoningMessageEnd::new(message_id).into()
    }
    /// `REASONING_END`.
    pub fn reasoning_end(message_id: impl Into<String>) -> Event {
        ReasoningEnd::new(message_id).into()
    }
    /// `TEXT_MESSAGE_CHUNK` opening a message (id and first text).
    pub fn text_message_chunk(message_id: impl Into<String>, delta: impl Into<String>) -> Event {
        TextMessageChunk::new(message_id, delta).into()
    }
    /// `TOOL_CALL_CHUNK` opening a tool call (id, tool name and first argument piece).
    pub fn tool_call_chunk(
        tool_call_id: impl Into<String>,
        tool_call_name: impl Into<String>,
        delta: impl Into<String>,
    ) -> Event {
        ToolCallChunk::new(tool_call_id, tool_call_name, delta).into()
    }
    /// `REASONING_MESSAGE_CHUNK` opening a reasoning message (id and first text).
    pub fn reasoning_message_chunk(
        message_id: impl Into<String>,
        delta: impl Into<String>,
    ) -> Event {
        ReasoningMessageChunk::new(message_id, delta).into()
    }
    /// `REASONING_ENCRYPTED_VALUE` for an entity (a message or a tool call).
    pub fn reasoning_encrypted_value(
        subtype: crate::event::EncryptedValueSubtype,
        entity_id: impl Into<String>,
        encrypted_value: impl Into<String>,
    ) -> Event {
        ReasoningEncryptedValue::new(subtype, entity_id, encrypted_value).into()
    }
    /// `SUBAGENT_STARTED`.
    pub fn subagent_started(subagent_run_id: impl Into<String>, name: impl Into<String>) -> Event {
        SubagentStarted::new(subagent_run_id, name).into()
    }
    /// `SUBAGENT_FINISHED` (success).
    pub fn subagent_finished(subagent_run_id: impl Into<String>) -> Event {
        SubagentFinished::new(subagent_run_id).into()
    }
    /// `SUBAGENT_ERROR`.
    pub fn subagent_error(subagent_run_id: impl Into<String>, message: impl Into<String>) -> Event {
        SubagentError::new(subagent_run_id, message).into()
    }
}

crate::wire::shape::leaves!(ToolRole, ReasoningRole, EncryptedValueSubtype);
