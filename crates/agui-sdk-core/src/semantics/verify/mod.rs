//! The stream verifier: a state machine fed one event at a time that decides whether
//! a stream obeys the AG-UI 1.1 lifecycle rules (runs, messages, tool calls, steps,
//! reasoning, subagents and who owns what), with the same verdicts as the reference
//! client's verifier.

use indexmap::{IndexMap as IndexMapWith, IndexSet as IndexSetWith};

use crate::event::{Event, EventType};
use crate::types::Message;

use rule::Owner;
pub use rule::{VerifyError, VerifyRule};

mod repeat;
mod rule;

use repeat::Repeat;

// The verifier looks ids up on every event: a seeded fast hasher (foldhash, the one
// hashbrown uses) rather than SipHash. Its per-process random seed keeps an id
// chosen by a peer from being aimed at a collision.
type Hasher = foldhash::fast::RandomState;
type HashMap<K, V> = std::collections::HashMap<K, V, Hasher>;
type HashSet<K> = std::collections::HashSet<K, Hasher>;
type IndexMap<K, V> = IndexMapWith<K, V, Hasher>;
type IndexSet<K> = IndexSetWith<K, Hasher>;

/// The per-stream verifier. Feed it every event in order with [`Verifier::push`]; the
/// first violation is returned as an error (the reference ends the stream there).
#[derive(Debug, Default, Clone)]
pub struct Verifier {
    index: usize,
    active_messages: IndexSet<String>,
    active_tool_calls: IndexSet<String>,
    active_reasoning_spans: IndexSet<String>,
    active_reasoning_messages: IndexSet<String>,
    owner_message: HashMap<String, Owner>,
    owner_tool_call: HashMap<String, Owner>,
    owner_activity: HashMap<String, Owner>,
    owner_reasoning: HashMap<String, Owner>,
    active_steps: IndexMap<Owner, IndexSet<String>>,
    active_subagents: IndexSet<String>,
    closed_subagents: HashSet<String>,
    run_started: bool,
    run_finished: bool,
    run_error: bool,
    first_event_received: bool,
    /// The open (or last) run's `runId` and `threadId`, from its `RUN_STARTED`.
    run_ids: Option<(String, String)>,
    /// The stream's thread: the input's when known, else the first run's.
    stream_thread: Option<String>,
    /// The last event accepted, when it streamed content (see `Repeat`).
    repeat: Repeat,
}

impl Verifier {
    /// A verifier at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// A verifier for the stream answering an input on `thread_id`: every run on it
    /// must be on that thread (without it, the first run's thread is the stream's).
    pub fn for_thread(thread_id: impl Into<String>) -> Self {
        Verifier {
            stream_thread: Some(thread_id.into()),
            ..Self::default()
        }
    }

    /// The end of the stream: an error when a run is still open (a stream that stops
    /// before its run's terminal event fails the run). The verifier is unchanged.
    pub fn finish(&self) -> Result<(), VerifyRule> {
        if self.run_active() {
            let run_id = self
                .run_ids
                .as_ref()
                .map(|(r, _)| r.clone())
                .unwrap_or_default();
            return Err(VerifyRule::EndedWithoutTerminal {
                run_id,
                events: self.index,
            });
        }
        Ok(())
    }

    /// How many events have been accepted.
    pub fn events_seen(&self) -> usize {
        self.index
    }

    /// Whether a run is currently open (started, neither finished nor errored).
    pub fn run_active(&self) -> bool {
        self.run_started && !self.run_finished && !self.run_error
    }

    fn reset_run(&mut self) {
        self.active_messages.clear();
        self.active_tool_calls.clear();
        self.active_reasoning_spans.clear();
        self.active_reasoning_messages.clear();
        self.owner_message.clear();
        self.owner_tool_call.clear();
        self.owner_activity.clear();
        self.owner_reasoning.clear();
        self.active_steps.clear();
        self.active_subagents.clear();
        self.closed_subagents.clear();
        self.run_finished = false;
        self.run_error = false;
        self.run_started = true;
    }

    fn seed_owners(&mut self, messages: &[Message], authoritative: bool) {
        for msg in messages {
            let owner: Owner = msg.subagent_run_id().map(str::to_owned);
            let bucket = match msg {
                Message::Reasoning(_) => &mut self.owner_reasoning,
                Message::Activity(_) => &mut self.owner_activity,
                _ => &mut self.owner_message,
            };
            if authoritative || !bucket.contains_key(msg.id()) {
                bucket.insert(msg.id().to_owned(), owner.clone());
            }
            if let Message::Assistant(a) = msg {
                for tc in a.tool_calls.iter().flatten() {
                    if authoritative || !self.owner_tool_call.contains_key(&tc.id) {
                        self.owner_tool_call.insert(tc.id.clone(), owner.clone());
                    }
                }
            }
        }
    }

    /// Checks one event against the stream so far. The first error ends the stream, as
    /// in the reference (which errors the stream): do not push further events after it.
    pub fn push(&mut self, event: &Event) -> Result<(), VerifyError> {
        let index = self.index;
        let event_type = event.event_type();
        let content = Repeat::content_id(event).map(|id| (id, event.subagent_run_id()));
        match content {
            Some((id, tag)) => {
                if self.repeat.matches(event_type, id, tag) {
                    self.index += 1;
                    return Ok(());
                }
            }
            None => self.repeat.forget(),
        }
        match self.check(event, event_type) {
            Ok(()) => {
                if let Some((id, tag)) = content {
                    self.repeat.set(event_type, id, tag);
                }
                self.index += 1;
                Ok(())
            }
            Err(rule) => {
                log_debug!(index, %event_type, %rule, "stream verification failed");
                Err(VerifyError {
                    index,
                    event_type,
                    rule,
                })
            }
        }
    }

    fn tag_check(
        event_type: EventType,
        tag: Option<&str>,
        owner: Option<&Owner>,
        kind: &'static str,
        id: &str,
    ) -> Result<(), VerifyRule> {
        if let (Some(tag), Some(owner)) = (tag, owner) {
            if owner.as_deref() != Some(tag) {
                return Err(VerifyRule::OwnerMismatch {
                    event_type,
                    tag: tag.to_owned(),
                    kind,
                    id: id.to_owned(),
                    owner: owner.clone(),
                });
            }
        }
        Ok(())
    }

    fn check(&mut self, event: &Event, event_type: EventType) -> Result<(), VerifyRule> {
        use EventType as T;
        if self.run_error && event_type != T::RunStarted {
            return Err(VerifyRule::AfterRunError { event_type });
        }
        if self.run_finished && event_type != T::RunError && event_type != T::RunStarted {
            return Err(VerifyRule::AfterRunFinished { event_type });
        }
        if !self.first_event_received {
            if event_type != T::RunStarted && event_type != T::RunError {
                // The reference marks the first event as received even when it rejects it.
                self.first_event_received = true;
                return Err(VerifyRule::FirstEventNotRunStarted);
            }
        } else if event_type == T::RunStarted && self.run_active() {
            return Err(VerifyRule::RunAlreadyActive);
        }
        // Run-scoped events have no `subagentRunId` field; an explicit null there is
        // kept as an unknown key, which the reference still rejects.
        let run_scoped_extra = event_type.is_run_scoped().then(|| event.extra());
        if run_scoped_extra
            .and_then(|x| x.get("subagentRunId"))
            .is_some_and(|v| v.is_null())
        {
            return Err(VerifyRule::NullSubagentRunId { event_type });
        }
        // From here on the event is accepted unless a rule below rejects it; state
        // changes happen only once it is accepted.
        if !self.first_event_received {
            self.first_event_received = true;
        } else if event_type == T::RunStarted && (self.run_finished || self.run_error) {
            self.reset_run();
        }
        let tag = event.subagent_run_id();
        match event {
            Event::TextMessageStart(e) => {
                let id = &e.message_id;
                if self.active_messages.contains(id) {
                    return Err(VerifyRule::AlreadyInProgress {
                        event_type,
                        kind: "text message",
                        id: id.clone(),
                        end: "TEXT_MESSAGE_END",
                    });
                }
                let existing = self.owner_message.get(id);
                Self::tag_check(event_type, tag, existing, "message", id)?;
                let had = existing.is_some();
                self.active_messages.insert(id.clone());
                if !had {
                    self.owner_message
                        .insert(id.clone(), tag.map(str::to_owned));
                }
            }
            Event::TextMessageContent(e) => {
                self.continue_text(event_type, tag, &e.message_id, false)?
            }
            Event::TextMessageEnd(e) => self.continue_text(event_type, tag, &e.message_id, true)?,
            Event::ToolCallStart(e) => {
                let id = &e.tool_call_id;
                if self.active_tool_calls.contains(id) {
                    return Err(VerifyRule::AlreadyInProgress {
                        event_type,
                        kind: "tool call",
                        id: id.clone(),
                        end: "TOOL_CALL_END",
                    });
                }
                let mut inherited: Option<Owner> = None;
                if let Some(parent) = &e.parent_message_id {
                    if let Some(parent_owner) = self.owner_message.get(parent) {
                        if let Some(t) = tag {
                            if parent_owner.as_deref() != Some(t) {
                                return Err(VerifyRule::ToolCallParentMismatch {
                                    tag: t.to_owned(),
                                    parent_message_id: parent.clone(),
                                    parent_owner: parent_owner.clone(),
                                });
                            }
                        }
                        inherited = Some(parent_owner.clone());
                    }
                }
                let existing = self.owner_tool_call.get(id);
                if let Some(existing) = existing {
                    Self::tag_check(event_type, tag, Some(existing), "tool call", id)?;
                    if tag.is_none() {
                        if let Some(inh) = &inherited {
                            if inh != existing {
                                return Err(VerifyRule::ToolCallReopenMismatch {
                                    tool_call_id: id.clone(),
                                    call_owner: existing.clone(),
                                    parent_message_id: e
                                        .parent_message_id
                                        .clone()
                                        .unwrap_or_default(),
                                    parent_owner: inh.clone(),
                                });
                            }
                        }
                    }
                }
                let had = existing.is_some();
                self.active_tool_calls.insert(id.clone());
                if !had {
                    let owner = match tag {
                        Some(t) => Some(t.to_owned()),
                        None => inherited.unwrap_or(None),
                    };
                    self.owner_tool_call.insert(id.clone(), owner);
                }
            }
            Event::ToolCallArgs(e) => {
                self.continue_tool(event_type, tag, &e.tool_call_id, false)?
            }
            Event::ToolCallEnd(e) => self.continue_tool(event_type, tag, &e.tool_call_id, true)?,
            Event::StepStarted(e) => {
                let owner: Owner = tag.map(str::to_owned);
                let steps = self.active_steps.entry(owner.clone()).or_default();
                if steps.contains(&e.step_name) {
                    return Err(VerifyRule::StepAlreadyActive {
                        step: e.step_name.clone(),
                        owner,
                    });
                }
                steps.insert(e.step_name.clone());
            }
            Event::StepFinished(e) => {
                let owner: Owner = tag.map(str::to_owned);
                let open_here = self
                    .active_steps
                    .entry(owner.clone())
                    .or_default()
                    .contains(&e.step_name);
                if !open_here {
                    let other = self
                        .active_steps
                        .iter()
                        .find(|(o, names)| **o != owner && names.contains(&e.step_name))
                        .map(|(o, _)| o.clone());
                    return Err(match other {
                        Some(open_under) => VerifyRule::StepOwnerMismatch {
                            step: e.step_name.clone(),
                            owner,
                            open_under,
                        },
                        None => VerifyRule::StepNotStarted {
                            step: e.step_name.clone(),
                        },
                    });
                }
                if let Some(steps) = self.active_steps.get_mut(&owner) {
                    steps.shift_remove(&e.step_name);
                }
            }
            Event::ActivitySnapshot(e) => {
                let is_new = !self.owner_activity.contains_key(&e.message_id);
                if is_new || e.replace != Some(false) {
                    self.owner_activity
                        .insert(e.message_id.clone(), tag.map(str::to_owned));
                }
            }
            Event::ToolCallResult(e) => {
                self.owner_message
                    .insert(e.message_id.clone(), tag.map(str::to_owned));
            }
            Event::ReasoningStart(e) => {
                self.open_reasoning(event_type, tag, &e.message_id, true)?
            }
            Event::ReasoningMessageStart(e) => {
                self.open_reasoning(event_type, tag, &e.message_id, false)?
            }
            Event::ReasoningMessageContent(e) => {
                self.continue_reasoning(event_type, tag, &e.message_id, false, false)?
            }
            Event::ReasoningMessageEnd(e) => {
                self.continue_reasoning(event_type, tag, &e.message_id, false, true)?
            }
            Event::ReasoningEnd(e) => {
                self.continue_reasoning(event_type, tag, &e.message_id, true, true)?
            }
            Event::ReasoningEncryptedValue(e) => {
                use crate::event::EncryptedValueSubtype as S;
                let (owner, kind) = match e.subtype {
                    S::ToolCall => (self.owner_tool_call.get(&e.entity_id), "tool call"),
                    S::Message => (
                        self.owner_message
                            .get(&e.entity_id)
                            .or_else(|| self.owner_reasoning.get(&e.entity_id)),
                        "message",
                    ),
                };
                Self::tag_check(event_type, tag, owner, kind, &e.entity_id)?;
            }
            Event::ActivityDelta(e) => {
                Self::tag_check(
                    event_type,
                    tag,
                    self.owner_activity.get(&e.message_id),
                    "activity",
                    &e.message_id,
                )?;
            }
            Event::SubagentStarted(e) => {
                let id = &e.subagent_run_id;
                if self.active_subagents.contains(id) {
                    return Err(VerifyRule::SubagentAlreadyActive { id: id.clone() });
                }
                if self.closed_subagents.contains(id) {
                    return Err(VerifyRule::SubagentReused { id: id.clone() });
                }
                if let Some(parent) = &e.parent_subagent_run_id {
                    if !self.active_subagents.contains(parent)
                        && !self.closed_subagents.contains(parent)
                    {
                        return Err(VerifyRule::SubagentParentUnknown {
                            parent: parent.clone(),
                        });
                    }
                }
                self.active_subagents.insert(id.clone());
            }
            Event::SubagentFinished(_) | Event::SubagentError(_) => {
                let id = tag.unwrap_or_default();
                if !self.active_subagents.contains(id) {
                    return Err(VerifyRule::SubagentNotActive {
                        event_type,
                        id: id.to_owned(),
                    });
                }
                self.active_subagents.shift_remove(id);
                self.closed_subagents.insert(id.to_owned());
            }
            Event::MessagesSnapshot(e) => self.seed_owners(&e.messages, true),
            Event::RunStarted(e) => {
                match &self.stream_thread {
                    Some(t) if *t != e.thread_id => {
                        return Err(VerifyRule::WrongThread {
                            expected: t.clone(),
                            got: e.thread_id.clone(),
                        })
                    }
                    Some(_) => {}
                    None => self.stream_thread = Some(e.thread_id.clone()),
                }
                self.run_ids = Some((e.run_id.clone(), e.thread_id.clone()));
                self.run_started = true;
                if let Some(input) = &e.input {
                    self.seed_owners(&input.messages, false);
                }
            }
            Event::RunFinished(e) => {
                let mut parts: Vec<String> = Vec::new();
                for (owner, names) in &self.active_steps {
                    for name in names {
                        parts.push(match owner {
                            Some(o) => format!("{name} (subagent '{o}')"),
                            None => name.clone(),
                        });
                    }
                }
                let join = |s: &IndexSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
                if !parts.is_empty() {
                    return Err(VerifyRule::RunFinishedWhileActive {
                        what: "steps",
                        open: parts.join(", "),
                    });
                }
                for (what, set) in [
                    ("text messages", &self.active_messages),
                    ("reasoning messages", &self.active_reasoning_messages),
                    ("reasoning spans", &self.active_reasoning_spans),
                    ("tool calls", &self.active_tool_calls),
                    ("subagents", &self.active_subagents),
                ] {
                    if !set.is_empty() {
                        return Err(VerifyRule::RunFinishedWhileActive {
                            what,
                            open: join(set),
                        });
                    }
                }
                // After the open entities, as the reference orders its checks: a stream
                // both reject gets the same message.
                if let Some((run_id, thread_id)) = &self.run_ids {
                    if *run_id != e.run_id {
                        return Err(VerifyRule::RunIdMismatch {
                            started: run_id.clone(),
                            finished: e.run_id.clone(),
                        });
                    }
                    if *thread_id != e.thread_id {
                        return Err(VerifyRule::ThreadIdMismatch {
                            started: thread_id.clone(),
                            finished: e.thread_id.clone(),
                        });
                    }
                }
                if let Some(crate::types::RunFinishedOutcome::Interrupt(o)) = &e.outcome {
                    let mut ids = HashSet::default();
                    for i in &o.interrupts {
                        if !ids.insert(i.id.as_str()) {
                            return Err(VerifyRule::DuplicateInterruptId { id: i.id.clone() });
                        }
                    }
                }
                self.run_finished = true;
            }
            Event::RunError(_) => self.run_error = true,
            Event::TextMessageChunk(_)
            | Event::ToolCallChunk(_)
            | Event::StateSnapshot(_)
            | Event::StateDelta(_)
            | Event::Raw(_)
            | Event::Custom(_)
            | Event::ReasoningMessageChunk(_) => {}
        }
        Ok(())
    }

    fn continue_text(
        &mut self,
        event_type: EventType,
        tag: Option<&str>,
        id: &str,
        close: bool,
    ) -> Result<(), VerifyRule> {
        if !self.active_messages.contains(id) {
            return Err(if close {
                VerifyRule::NotActiveEnd {
                    event_type,
                    kind: "text message",
                    id: id.to_owned(),
                    start: "TEXT_MESSAGE_START",
                }
            } else {
                VerifyRule::NotActiveStart {
                    event_type,
                    kind: "text message",
                    id: id.to_owned(),
                    start: "TEXT_MESSAGE_START",
                }
            });
        }
        Self::tag_check(event_type, tag, self.owner_message.get(id), "message", id)?;
        if close {
            self.active_messages.shift_remove(id);
        }
        Ok(())
    }

    fn continue_tool(
        &mut self,
        event_type: EventType,
        tag: Option<&str>,
        id: &str,
        close: bool,
    ) -> Result<(), VerifyRule> {
        if !self.active_tool_calls.contains(id) {
            return Err(if close {
                VerifyRule::NotActiveEnd {
                    event_type,
                    kind: "tool call",
                    id: id.to_owned(),
                    start: "TOOL_CALL_START",
                }
            } else {
                VerifyRule::NotActiveStart {
                    event_type,
                    kind: "tool call",
                    id: id.to_owned(),
                    start: "TOOL_CALL_START",
                }
            });
        }
        Self::tag_check(
            event_type,
            tag,
            self.owner_tool_call.get(id),
            "tool call",
            id,
        )?;
        if close {
            self.active_tool_calls.shift_remove(id);
        }
        Ok(())
    }

    fn open_reasoning(
        &mut self,
        event_type: EventType,
        tag: Option<&str>,
        id: &str,
        span: bool,
    ) -> Result<(), VerifyRule> {
        let open = if span {
            &self.active_reasoning_spans
        } else {
            &self.active_reasoning_messages
        };
        if open.contains(id) {
            return Err(if span {
                VerifyRule::AlreadyInProgress {
                    event_type,
                    kind: "reasoning span",
                    id: id.to_owned(),
                    end: "REASONING_END",
                }
            } else {
                VerifyRule::AlreadyInProgress {
                    event_type,
                    kind: "reasoning message",
                    id: id.to_owned(),
                    end: "REASONING_MESSAGE_END",
                }
            });
        }
        let existing = self.owner_reasoning.get(id);
        Self::tag_check(event_type, tag, existing, "reasoning message", id)?;
        let had = existing.is_some();
        if span {
            self.active_reasoning_spans.insert(id.to_owned());
        } else {
            self.active_reasoning_messages.insert(id.to_owned());
        }
        if !had {
            self.owner_reasoning
                .insert(id.to_owned(), tag.map(str::to_owned));
        }
        Ok(())
    }

    fn continue_reasoning(
        &mut self,
        event_type: EventType,
        tag: Option<&str>,
        id: &str,
        span: bool,
        close: bool,
    ) -> Result<(), VerifyRule> {
        let open = if span {
            &self.active_reasoning_spans
        } else {
            &self.active_reasoning_messages
        };
        if !open.contains(id) {
            return Err(if span {
                VerifyRule::NotActiveEnd {
                    event_type,
                    kind: "reasoning span",
                    id: id.to_owned(),
                    start: "REASONING_START",
                }
            } else {
                VerifyRule::NotActiveStart {
                    event_type,
                    kind: "reasoning message",
                    id: id.to_owned(),
                    start: "REASONING_MESSAGE_START",
                }
            });
        }
        Self::tag_check(
            event_type,
            tag,
            self.owner_reasoning.get(id),
            "reasoning message",
            id,
        )?;
        if close {
            if span {
                self.active_reasoning_spans.shift_remove(id);
            } else {
                self.active_reasoning_messages.shift_remove(id);
            }
        }
        Ok(())
    }
}

/// Verifies a whole stream; `Ok(n)` is the number of events accepted.
pub fn verify_events<'a, I>(events: I) -> Result<usize, VerifyError>
where
    I: IntoIterator<Item = &'a Event>,
{
    let mut v = Verifier::new();
    for e in events {
        v.push(e)?;
    }
    Ok(v.events_seen())
}

/// An iterator that verifies events as they pass; see [`verified`].
#[derive(Debug)]
pub struct Verified<I> {
    inner: I,
    verifier: Verifier,
    failed: bool,
}

/// Verifies an event iterator as it is consumed: yields the events, then the first
/// violation as an error, then ends.
pub fn verified<I: IntoIterator<Item = Event>>(events: I) -> Verified<I::IntoIter> {
    Verified {
        inner: events.into_iter(),
        verifier: Verifier::new(),
        failed: false,
    }
}

impl<I: Iterator<Item = Event>> Iterator for Verified<I> {
    type Item = Result<Event, VerifyError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let e = self.inner.next()?;
        match self.verifier.push(&e) {
            Ok(()) => Some(Ok(e)),
            Err(err) => {
                self.failed = true;
                Some(Err(err))
            }
        }
    }
}

#[cfg(test)]
mod tests;
