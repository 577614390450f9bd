//! The reducer: applies events to a conversation (messages and state) exactly as the
//! reference client's default event application does, and reports what changed.
//!
//! Cost per event does not grow with the conversation: messages are found through an
//! id index (rebuilt only when messages are inserted in the middle, replaced or
//! removed), text and argument deltas are appended in place, and state patches are
//! applied in place with an undo log instead of a copy of the state.

use std::collections::{HashMap, HashSet};

use indexmap::IndexSet;
use serde_json::Value;

use crate::event::*;
use crate::types::*;
use crate::{JsonObject, JsonText};

use super::patch::{apply_patch, Patcher};

mod activity;
mod metadata;
pub use activity::{authoritative_activity_types, ActivityOwnership};
use metadata::merge_metadata;

/// How a run ended, as reported to the application when `RUN_FINISHED` is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// The run completed (absent outcome or `success`).
    Success {
        /// The run's `result`.
        result: Option<Value>,
        /// Tool calls left for the application to answer: the outcome's non-empty
        /// list, else the calls started in this run that got no result, in order.
        pending_tool_call_ids: Vec<String>,
    },
    /// The run paused on interrupts.
    Interrupt {
        /// The open interrupts.
        interrupts: Vec<Interrupt>,
    },
    /// The run was cancelled.
    Cancelled,
}

/// What applying one event changed, so that a UI can re-render only what moved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// The message list changed (the reference would report a messages mutation).
    pub messages_changed: bool,
    /// Messages were inserted in the middle, replaced, removed or reordered.
    pub structure_changed: bool,
    /// Index of the one message changed in place (content, tool call, metadata).
    pub updated: Option<usize>,
    /// Ids of the messages this event created, in order.
    pub new_message_ids: Vec<String>,
    /// The state changed.
    pub state_changed: bool,
    /// For `RUN_FINISHED`: how the run ended.
    pub outcome: Option<RunOutcome>,
    /// What the reference would warn about (the event was skipped or partly applied).
    pub warning: Option<String>,
}

/// Why an event cannot be applied at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// A `*_CHUNK` event reached the reducer; expand chunks first.
    #[error("event {index}: {event_type} must be transformed before being applied")]
    UntransformedChunk {
        /// Index of the event among those applied.
        index: usize,
        /// The chunk type.
        event_type: EventType,
    },
}

/// A conversation being built from events: messages, state, pending interrupts.
#[derive(Debug, Clone, Default)]
pub struct Reducer {
    messages: Vec<Message>,
    state: Option<Value>,
    /// Applies state patches, keeping the state's size for the `copy` bound.
    patcher: Patcher,
    pending_interrupts: Vec<Interrupt>,
    last_outcome: Option<RunOutcome>,
    by_id: HashMap<String, usize>,
    tool_calls: HashMap<String, (usize, usize)>,
    run_tool_call_ids: IndexSet<String>,
    answered_tool_call_ids: HashSet<String>,
    applied: usize,
}

/// Appends to a message's text as the reference does (`(string content or "") +
/// delta`). Activity messages are refused by the caller.
fn append_text(m: &mut Message, delta: &str) {
    match m {
        Message::Developer(x) => x.content.push_str(delta),
        Message::System(x) => x.content.push_str(delta),
        Message::Reasoning(x) => x.content.push_str(delta),
        Message::Assistant(x) => x.content.get_or_insert_with(String::new).push_str(delta),
        Message::User(x) => push_content(&mut x.content, delta),
        Message::Tool(x) => push_content(&mut x.content, delta),
        Message::Activity(_) => {}
    }
}

fn push_content(c: &mut Content, delta: &str) {
    match c {
        Content::Text(s) => s.push_str(delta),
        Content::Parts(_) => *c = Content::Text(delta.to_owned()),
    }
}

/// Stores a `REASONING_ENCRYPTED_VALUE`'s value and type on a message (protocol 1.1: the
/// type travels with the value, so a stored type is removed when the event carries
/// none). `false` for an activity message, which has no encrypted value.
fn set_encrypted_value(m: &mut Message, v: String, ty: Option<String>) -> bool {
    let (value, value_type) = match m {
        Message::Developer(x) => (&mut x.encrypted_value, &mut x.encrypted_value_type),
        Message::System(x) => (&mut x.encrypted_value, &mut x.encrypted_value_type),
        Message::Reasoning(x) => (&mut x.encrypted_value, &mut x.encrypted_value_type),
        Message::Assistant(x) => (&mut x.encrypted_value, &mut x.encrypted_value_type),
        Message::User(x) => (&mut x.encrypted_value, &mut x.encrypted_value_type),
        Message::Tool(x) => (&mut x.encrypted_value, &mut x.encrypted_value_type),
        Message::Activity(_) => return false,
    };
    *value = Some(v);
    *value_type = ty;
    true
}

impl Reducer {
    /// A reducer starting from these messages and this state (`None`: no state).
    pub fn new(messages: Vec<Message>, state: Option<Value>) -> Self {
        let mut r = Reducer {
            messages,
            state,
            ..Default::default()
        };
        r.rebuild_index();
        r
    }

    /// A reducer starting from a run input's messages and state.
    pub fn from_input(input: &RunAgentInput) -> Self {
        Self::new(
            input.messages.clone(),
            input.state.as_ref().map(crate::JsonText::to_value),
        )
    }

    /// The conversation's messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The state (`None`: never set).
    pub fn state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    /// The interrupts the last `RUN_FINISHED` left open.
    pub fn pending_interrupts(&self) -> &[Interrupt] {
        &self.pending_interrupts
    }

    /// How the last finished run ended.
    pub fn last_outcome(&self) -> Option<&RunOutcome> {
        self.last_outcome.as_ref()
    }

    /// The check to make before sending the next run: every pending interrupt must be
    /// answered by `resume`, and an expired one only by `cancelled`.
    pub fn check_resume(
        &self,
        resume: Option<&[ResumeEntry]>,
        now: std::time::SystemTime,
    ) -> Result<(), super::ResumeCheckError> {
        super::check_resume(&self.pending_interrupts, resume, now)
    }

    /// The messages and state, consuming the reducer.
    pub fn into_parts(self) -> (Vec<Message>, Option<Value>) {
        (self.messages, self.state)
    }

    /// The first message with this id.
    pub fn message(&self, id: &str) -> Option<&Message> {
        self.by_id.get(id).and_then(|&i| self.messages.get(i))
    }

    fn rebuild_index(&mut self) {
        self.by_id.clear();
        self.tool_calls.clear();
        for i in 0..self.messages.len() {
            self.index_message(i);
        }
    }

    fn index_message(&mut self, i: usize) {
        let Some(m) = self.messages.get(i) else {
            return;
        };
        self.by_id.entry(m.id().to_owned()).or_insert(i);
        if let Message::Assistant(a) = m {
            for (j, tc) in a.tool_calls.iter().flatten().enumerate() {
                self.tool_calls.entry(tc.id.clone()).or_insert((i, j));
            }
        }
    }

    fn push_message(&mut self, m: Message) -> usize {
        self.messages.push(m);
        let i = self.messages.len() - 1;
        self.index_message(i);
        i
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    fn tool_call_mut(&mut self, id: &str) -> Option<(usize, &mut ToolCall)> {
        let &(i, j) = self.tool_calls.get(id)?;
        match self.messages.get_mut(i) {
            Some(Message::Assistant(a)) => a.tool_calls.as_mut()?.get_mut(j).map(|tc| (i, tc)),
            _ => None,
        }
    }

    /// Applies one event (cloning what it keeps from it).
    pub fn apply(&mut self, event: &Event) -> Result<Applied, ApplyError> {
        self.apply_owned(event.clone())
    }

    /// Applies one event, moving what it keeps out of it.
    pub fn apply_owned(&mut self, event: Event) -> Result<Applied, ApplyError> {
        let index = self.applied;
        self.applied += 1;
        let mut out = Applied::default();
        match event {
            Event::TextMessageChunk(_)
            | Event::ToolCallChunk(_)
            | Event::ReasoningMessageChunk(_) => {
                return Err(ApplyError::UntransformedChunk {
                    index,
                    event_type: event.event_type(),
                })
            }
            Event::TextMessageStart(e) => {
                let role = e.role.unwrap_or_default();
                self.start_message(
                    &mut out,
                    "TEXT_MESSAGE_START",
                    "text",
                    e.message_id,
                    e.metadata.map(|b| *b),
                    |id, sub| {
                        let mut name = e.name;
                        match role {
                            TextMessageRole::Assistant => Message::Assistant(AssistantMessage {
                                id,
                                name: name.take(),
                                content: Some(String::new()),
                                subagent_run_id: sub,
                                ..AssistantMessage::wire_blank()
                            }),
                            TextMessageRole::User => Message::User(UserMessage {
                                id,
                                name: name.take(),
                                content: Content::Text(String::new()),
                                subagent_run_id: sub,
                                ..UserMessage::wire_blank()
                            }),
                            TextMessageRole::System => Message::System(SystemMessage {
                                id,
                                name: name.take(),
                                subagent_run_id: sub,
                                ..SystemMessage::wire_blank()
                            }),
                            TextMessageRole::Developer => Message::Developer(DeveloperMessage {
                                id,
                                name: name.take(),
                                subagent_run_id: sub,
                                ..DeveloperMessage::wire_blank()
                            }),
                        }
                    },
                    e.subagent_run_id,
                );
            }
            Event::ReasoningMessageStart(e) => {
                self.start_message(
                    &mut out,
                    "REASONING_MESSAGE_START",
                    "reasoning",
                    e.message_id,
                    e.metadata.map(|b| *b),
                    |id, sub| {
                        Message::Reasoning(ReasoningMessage {
                            id,
                            subagent_run_id: sub,
                            ..ReasoningMessage::wire_blank()
                        })
                    },
                    e.subagent_run_id,
                );
            }
            Event::TextMessageContent(e) => self.content(
                &mut out,
                "TEXT_MESSAGE_CONTENT",
                "text",
                &e.message_id,
                Some(&e.delta),
                e.metadata.map(|b| *b),
            ),
            Event::ReasoningMessageContent(e) => self.content(
                &mut out,
                "REASONING_MESSAGE_CONTENT",
                "reasoning",
                &e.message_id,
                Some(&e.delta),
                e.metadata.map(|b| *b),
            ),
            Event::TextMessageEnd(e) => self.content(
                &mut out,
                "TEXT_MESSAGE_END",
                "text",
                &e.message_id,
                None,
                e.metadata.map(|b| *b),
            ),
            Event::ReasoningMessageEnd(e) => self.content(
                &mut out,
                "REASONING_MESSAGE_END",
                "reasoning",
                &e.message_id,
                None,
                e.metadata.map(|b| *b),
            ),
            Event::ToolCallStart(e) => self.tool_call_start(&mut out, *e),
            Event::ToolCallArgs(e) => match self.tool_call_mut(&e.tool_call_id) {
                None => warn(
                    &mut out,
                    format!(
                        "TOOL_CALL_ARGS: No message found containing tool call with ID '{}'",
                        e.tool_call_id
                    ),
                ),
                Some((i, tc)) => {
                    tc.function.arguments.push_str(&e.delta);
                    merge_metadata(&mut tc.metadata, e.metadata.map(|b| *b));
                    out.messages_changed = true;
                    out.updated = Some(i);
                }
            },
            Event::ToolCallEnd(e) => match self.tool_call_mut(&e.tool_call_id) {
                None => warn(
                    &mut out,
                    format!(
                        "TOOL_CALL_END: No message found containing tool call with ID '{}'",
                        e.tool_call_id
                    ),
                ),
                Some((i, tc)) => {
                    if merge_metadata(&mut tc.metadata, e.metadata.map(|b| *b)) {
                        out.messages_changed = true;
                        out.updated = Some(i);
                    }
                }
            },
            Event::ToolCallResult(e) => self.tool_call_result(&mut out, *e),
            Event::StateSnapshot(e) => {
                self.state = Some(e.snapshot);
                self.patcher.reset();
                out.state_changed = true;
            }
            Event::StateDelta(e) => match self.patcher.apply_optional(&mut self.state, e.delta) {
                Ok(()) => out.state_changed = true,
                Err(err) => warn(&mut out, format!("Failed to apply state patch: {err}")),
            },
            Event::MessagesSnapshot(e) => self.messages_snapshot(&mut out, e),
            Event::ActivitySnapshot(e) => self.activity_snapshot(&mut out, *e),
            Event::ActivityDelta(e) => self.activity_delta(&mut out, *e),
            Event::ReasoningEncryptedValue(e) => match e.subtype {
                EncryptedValueSubtype::ToolCall => {
                    if let Some((i, tc)) = self.tool_call_mut(&e.entity_id) {
                        tc.encrypted_value = Some(e.encrypted_value);
                        tc.encrypted_value_type = e.encrypted_value_type;
                        out.messages_changed = true;
                        out.updated = Some(i);
                    }
                }
                EncryptedValueSubtype::Message => {
                    if let Some(i) = self.find(&e.entity_id) {
                        if let Some(m) = self.messages.get_mut(i) {
                            if set_encrypted_value(m, e.encrypted_value, e.encrypted_value_type) {
                                out.messages_changed = true;
                                out.updated = Some(i);
                            }
                        }
                    }
                }
            },
            Event::RunStarted(e) => {
                self.run_tool_call_ids.clear();
                self.answered_tool_call_ids.clear();
                if let Some(input) = e.input {
                    for m in input.messages {
                        if self.find(m.id()).is_none() {
                            out.new_message_ids.push(m.id().to_owned());
                            self.push_message(m);
                        }
                    }
                    out.messages_changed = true;
                }
            }
            Event::RunFinished(e) => {
                let outcome = match e.outcome {
                    Some(RunFinishedOutcome::Interrupt(i)) => RunOutcome::Interrupt {
                        interrupts: i.interrupts,
                    },
                    Some(RunFinishedOutcome::Cancelled(_)) => RunOutcome::Cancelled,
                    other => {
                        let named = match other {
                            Some(RunFinishedOutcome::Success(s)) => s.pending_tool_call_ids,
                            _ => None,
                        };
                        let pending = match named {
                            Some(n) if !n.is_empty() => n,
                            _ => self
                                .run_tool_call_ids
                                .iter()
                                .filter(|id| !self.answered_tool_call_ids.contains(*id))
                                .cloned()
                                .collect(),
                        };
                        RunOutcome::Success {
                            result: e.result,
                            pending_tool_call_ids: pending,
                        }
                    }
                };
                self.pending_interrupts = match &outcome {
                    RunOutcome::Interrupt { interrupts } => interrupts.clone(),
                    _ => Vec::new(),
                };
                self.last_outcome = Some(outcome.clone());
                out.outcome = Some(outcome);
            }
            Event::Raw(_)
            | Event::Custom(_)
            | Event::RunError(_)
            | Event::StepStarted(_)
            | Event::StepFinished(_)
            | Event::ReasoningStart(_)
            | Event::ReasoningEnd(_)
            | Event::SubagentStarted(_)
            | Event::SubagentFinished(_)
            | Event::SubagentError(_) => {}
        }
        #[cfg(feature = "tracing")]
        if let Some(w) = &out.warning {
            log_warn!(index, warning = %w, "event not fully applied");
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn start_message(
        &mut self,
        out: &mut Applied,
        ty: &str,
        what: &str,
        id: String,
        metadata: Option<JsonObject>,
        make: impl FnOnce(String, Option<String>) -> Message,
        subagent_run_id: Option<String>,
    ) {
        match self.find(&id) {
            Some(i) => {
                let Some(m) = self.messages.get_mut(i) else {
                    return;
                };
                if matches!(m, Message::Activity(_)) {
                    warn(
                        out,
                        format!("{ty}: Message '{id}' is an activity message — message ids must be unique across activity and {what} messages"),
                    );
                    return;
                }
                if merge_metadata(m.metadata_mut(), metadata) {
                    out.messages_changed = true;
                    out.updated = Some(i);
                }
            }
            None => {
                let mut m = make(id.clone(), subagent_run_id);
                merge_metadata(m.metadata_mut(), metadata);
                self.push_message(m);
                out.new_message_ids.push(id);
                out.messages_changed = true;
            }
        }
    }

    fn content(
        &mut self,
        out: &mut Applied,
        ty: &str,
        what: &str,
        id: &str,
        delta: Option<&str>,
        metadata: Option<JsonObject>,
    ) {
        let Some(i) = self.find(id) else {
            warn(out, format!("{ty}: No message found with ID '{id}'"));
            return;
        };
        let Some(m) = self.messages.get_mut(i) else {
            return;
        };
        if matches!(m, Message::Activity(_)) {
            warn(
                out,
                format!("{ty}: Message '{id}' is an activity message — message ids must be unique across activity and {what} messages"),
            );
            return;
        }
        let mut changed = false;
        if let Some(d) = delta {
            append_text(m, d);
            changed = true;
        }
        changed |= merge_metadata(m.metadata_mut(), metadata);
        if changed {
            out.messages_changed = true;
            out.updated = Some(i);
        }
    }

    fn tool_call_start(&mut self, out: &mut Applied, e: ToolCallStart) {
        self.run_tool_call_ids.insert(e.tool_call_id.clone());
        if let Some((i, tc)) = self.tool_call_mut(&e.tool_call_id) {
            let renamed = tc.function.name != e.tool_call_name;
            if renamed {
                let w = format!(
                    "TOOL_CALL_START: tool call '{}' already exists with name '{}' — updating it to '{}'",
                    e.tool_call_id, tc.function.name, e.tool_call_name
                );
                tc.function.name = e.tool_call_name;
                out.warning = Some(w);
            }
            if merge_metadata(&mut tc.metadata, e.metadata.map(|b| *b)) || renamed {
                out.messages_changed = true;
                out.updated = Some(i);
            }
            return;
        }
        // Resolve the owning assistant message, creating it when needed.
        let parent = e.parent_message_id.filter(|p| !p.is_empty());
        let target = match parent {
            Some(p) => match self.find(&p) {
                Some(i) if matches!(self.messages.get(i), Some(Message::Assistant(_))) => Ok(i),
                Some(i) => {
                    let role = self
                        .messages
                        .get(i)
                        .map(|m| m.role().as_str())
                        .unwrap_or("");
                    out.warning = Some(format!(
                        "TOOL_CALL_START: parentMessageId '{p}' matches a '{role}' message, not assistant — falling back to toolCallId"
                    ));
                    Err(e.tool_call_id.clone())
                }
                None => Err(p),
            },
            None => Err(e.tool_call_id.clone()),
        };
        let i = match target {
            Ok(i) => i,
            Err(new_id) => {
                let was_new = self.find(&new_id).is_none();
                let m = Message::Assistant(AssistantMessage {
                    id: new_id.clone(),
                    subagent_run_id: if was_new { e.subagent_run_id } else { None },
                    tool_calls: Some(Vec::new()),
                    ..AssistantMessage::wire_blank()
                });
                out.new_message_ids.push(new_id);
                self.push_message(m)
            }
        };
        let mut tc = ToolCall::new(e.tool_call_id.clone(), e.tool_call_name, "");
        merge_metadata(&mut tc.metadata, e.metadata.map(|b| *b));
        if let Some(Message::Assistant(a)) = self.messages.get_mut(i) {
            let calls = a.tool_calls.get_or_insert_with(Vec::new);
            calls.push(tc);
            let j = calls.len() - 1;
            match self.tool_calls.get(&e.tool_call_id) {
                Some(&(k, _)) if k <= i => {}
                _ => {
                    self.tool_calls.insert(e.tool_call_id, (i, j));
                }
            }
        }
        out.messages_changed = true;
        if out.new_message_ids.is_empty() {
            out.updated = Some(i);
        }
    }

    fn tool_call_result(&mut self, out: &mut Applied, e: ToolCallResult) {
        self.answered_tool_call_ids.insert(e.tool_call_id.clone());
        let mut m = ToolMessage {
            id: e.message_id.clone(),
            tool_call_id: e.tool_call_id.clone(),
            content: e.content,
            subagent_run_id: e.subagent_run_id,
            ..ToolMessage::wire_blank()
        };
        merge_metadata(&mut m.metadata, e.metadata.map(|b| *b));
        out.new_message_ids.push(e.message_id);
        out.messages_changed = true;
        match self.tool_calls.get(&e.tool_call_id) {
            None => {
                self.push_message(Message::Tool(m));
            }
            Some(&(owner, _)) => {
                let mut at = owner + 1;
                while matches!(self.messages.get(at), Some(Message::Tool(_))) {
                    at += 1;
                }
                if at >= self.messages.len() {
                    self.push_message(Message::Tool(m));
                } else {
                    self.messages.insert(at, Message::Tool(m));
                    self.rebuild_index();
                    out.structure_changed = true;
                }
            }
        }
    }

    fn messages_snapshot(&mut self, out: &mut Applied, e: MessagesSnapshot) {
        let ownership = authoritative_activity_types(e.metadata.as_deref());
        let snapshot = e.messages;
        let has_activity = snapshot.iter().any(|m| matches!(m, Message::Activity(_)));
        let has_reasoning = snapshot.iter().any(|m| matches!(m, Message::Reasoning(_)));
        // The last snapshot message with each id wins, as in a map built from the list.
        let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(snapshot.len());
        for (i, m) in snapshot.iter().enumerate() {
            by_id.insert(m.id(), i);
        }
        let preserved = |m: &Message| match m {
            Message::Activity(a) => match &ownership {
                ActivityOwnership::Types(t) => !t.contains(&a.activity_type),
                ActivityOwnership::Null => false,
                ActivityOwnership::Undeclared => !has_activity,
            },
            Message::Reasoning(_) => !has_reasoning,
            _ => false,
        };
        let old = std::mem::take(&mut self.messages);
        let mut result: Vec<Message> = Vec::with_capacity(old.len().max(snapshot.len()));
        for m in old {
            match by_id.get(m.id()) {
                Some(&i) => {
                    if let Some(s) = snapshot.get(i) {
                        result.push(s.clone());
                    }
                }
                None if preserved(&m) => result.push(m),
                None => {}
            }
        }
        let existing: HashSet<String> = result.iter().map(|m| m.id().to_owned()).collect();
        drop(by_id);
        for m in snapshot {
            if !existing.contains(m.id()) {
                out.new_message_ids.push(m.id().to_owned());
                result.push(m);
            }
        }
        self.messages = result;
        self.rebuild_index();
        out.messages_changed = true;
        out.structure_changed = true;
    }

    /// The conversation as the JSON object `{"messages": [...], "state": ...}` (`state`
    /// omitted when never set).
    pub fn to_json(&self) -> Value {
        let mut o = JsonObject::new();
        o.insert(
            "messages".into(),
            serde_json::to_value(&self.messages).unwrap_or(Value::Null),
        );
        if let Some(s) = &self.state {
            o.insert("state".into(), s.clone());
        }
        Value::Object(o)
    }
}

fn warn(out: &mut Applied, w: String) {
    out.warning = Some(w);
}
