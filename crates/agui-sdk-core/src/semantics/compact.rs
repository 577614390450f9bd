//! Compaction of a finished (recorded) stream with the reference client's rules: each
//! text message and tool call collapses to start / one content / end, events that
//! arrived while it was open move after it, and each run window's state events
//! collapse into one snapshot placed at the window's end.

use indexmap::IndexMap;
use serde_json::Value;

use crate::event::*;
use crate::types::JsonPatch;
use crate::JsonObject;

use super::patch::Patcher;

fn merge(target: Option<JsonObject>, incoming: Option<&JsonObject>) -> Option<JsonObject> {
    match (target, incoming) {
        (t, None) => t,
        (None, Some(i)) => Some(i.clone()),
        (Some(mut t), Some(i)) => {
            for (k, v) in i {
                t.insert(k.clone(), v.clone());
            }
            Some(t)
        }
    }
}

#[derive(Debug, Default)]
struct Stream {
    start: Option<Event>,
    delta: String,
    contents: usize,
    other: Vec<Event>,
    post_start_metadata: Option<JsonObject>,
}

impl Stream {
    fn start(&mut self, mut next: Event) {
        if self.contents == 0 {
            // A start replayed before any content replaces the buffered one but keeps
            // the merged metadata of both.
            if let Some(prev) = self.start.take() {
                if let Some(m) = merge(prev.metadata().cloned(), next.metadata()) {
                    *next.metadata_mut() = Some(Box::new(m));
                }
            }
            self.start = Some(next);
        } else {
            // Replayed after content: its fields replace the start's, its metadata joins
            // the collapsed content.
            self.post_start_metadata = merge(self.post_start_metadata.take(), next.metadata());
            let carried = self.start.as_ref().and_then(|p| p.metadata().cloned());
            *next.metadata_mut() = carried.map(Box::new);
            self.start = Some(next);
        }
    }

    fn content(&mut self, delta: &str, metadata: Option<&JsonObject>) {
        self.delta.push_str(delta);
        self.contents += 1;
        self.post_start_metadata = merge(self.post_start_metadata.take(), metadata);
    }

    fn flush(self, id: String, text: bool, end: Option<Event>, out: &mut Vec<Event>) {
        if let Some(s) = self.start {
            out.push(s);
        }
        if self.contents > 0 {
            out.push(if text {
                Event::TextMessageContent(TextMessageContent {
                    message_id: id,
                    delta: self.delta,
                    metadata: self.post_start_metadata.map(Box::new),
                    ..TextMessageContent::wire_blank()
                })
            } else {
                Event::ToolCallArgs(ToolCallArgs {
                    tool_call_id: id,
                    delta: self.delta,
                    metadata: self.post_start_metadata.map(Box::new),
                    ..ToolCallArgs::wire_blank()
                })
            });
        }
        if let Some(e) = end {
            out.push(e);
        }
        out.extend(self.other);
    }
}

/// The compactor: feed events with [`Compactor::push`] (compacted events are appended
/// to the output as soon as their place is known) and call [`Compactor::finish`] at
/// the end of the recording.
#[derive(Debug, Default)]
pub struct Compactor {
    texts: IndexMap<String, Stream>,
    tools: IndexMap<String, Stream>,
    /// The state window's events, each with its index in the recording.
    state_events: Vec<(u64, Event)>,
    /// Events pushed so far.
    index: u64,
    warnings: Vec<CompactWarning>,
}

/// Most warnings a [`Compactor`] holds until they are taken.
pub const MAX_WARNINGS: usize = 1024;

/// What a compaction could not keep: a state patch that did not apply to the state
/// before it (the compacted snapshot is the state without it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {index}: Failed to apply state patch: {message}")]
pub struct CompactWarning {
    /// The patch's index in the recording (0-based).
    pub index: u64,
    /// Why it did not apply.
    pub message: String,
}

impl Compactor {
    /// A compactor at the start of a recording.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the compaction could not keep since the last call, oldest first.
    pub fn take_warnings(&mut self) -> Vec<CompactWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// Processes one event.
    pub fn push(&mut self, event: Event, out: &mut Vec<Event>) {
        let index = self.index;
        self.index += 1;
        match event {
            Event::TextMessageStart(ref e) => {
                let id = e.message_id.clone();
                self.texts.entry(id).or_default().start(event);
            }
            Event::TextMessageContent(e) => {
                self.texts
                    .entry(e.message_id)
                    .or_default()
                    .content(&e.delta, e.metadata.as_deref());
            }
            Event::TextMessageEnd(ref e) => {
                let id = e.message_id.clone();
                let s = self.texts.shift_remove(&id).unwrap_or_default();
                s.flush(id, true, Some(event), out);
            }
            Event::ToolCallStart(ref e) => {
                let id = e.tool_call_id.clone();
                self.tools.entry(id).or_default().start(event);
            }
            Event::ToolCallArgs(e) => {
                self.tools
                    .entry(e.tool_call_id)
                    .or_default()
                    .content(&e.delta, e.metadata.as_deref());
            }
            Event::ToolCallEnd(ref e) => {
                let id = e.tool_call_id.clone();
                let s = self.tools.shift_remove(&id).unwrap_or_default();
                s.flush(id, false, Some(event), out);
            }
            // The run's boundaries close the state window; state events are held for
            // it; everything else waits behind an open stream.
            _ if event.family() == EventFamily::Run => {
                self.flush_state(out);
                out.push(event);
            }
            _ if event.family() == EventFamily::State => self.state_events.push((index, event)),
            other => {
                let open = self
                    .texts
                    .values_mut()
                    .find(|s| s.start.is_some())
                    .or_else(|| self.tools.values_mut().find(|s| s.start.is_some()));
                match open {
                    Some(s) => s.other.push(other),
                    None => out.push(other),
                }
            }
        }
    }

    /// Flushes unfinished streams and the last state window (what it could not keep:
    /// [`take_warnings`](Self::take_warnings) before, or [`finish_with_warnings`](Self::finish_with_warnings)).
    pub fn finish(self, out: &mut Vec<Event>) {
        self.finish_with_warnings(out);
    }

    /// [`finish`](Self::finish), returning what the compaction could not keep and was
    /// not yet taken.
    pub fn finish_with_warnings(mut self, out: &mut Vec<Event>) -> Vec<CompactWarning> {
        for (id, s) in std::mem::take(&mut self.texts) {
            s.flush(id, true, None, out);
        }
        for (id, s) in std::mem::take(&mut self.tools) {
            s.flush(id, false, None, out);
        }
        self.flush_state(out);
        self.warnings
    }

    fn flush_state(&mut self, out: &mut Vec<Event>) {
        let events = std::mem::take(&mut self.state_events);
        if events.is_empty() {
            return;
        }
        let Some(last) = events
            .iter()
            .rposition(|(_, e)| matches!(e, Event::StateSnapshot(_)))
        else {
            out.extend(events.into_iter().map(|(_, e)| e));
            return;
        };
        let mut metadata: Option<JsonObject> = None;
        for (_, e) in &events {
            metadata = merge(metadata, e.metadata());
        }
        let mut state = Value::Object(JsonObject::new());
        // One patcher for the whole run of patches: the state's size is measured once.
        let mut patcher = Patcher::new();
        for (index, e) in events.into_iter().skip(last) {
            match e {
                Event::StateSnapshot(s) => {
                    state = s.snapshot;
                    patcher.reset();
                }
                Event::StateDelta(d) => {
                    let patch: JsonPatch = d.delta;
                    if let Err(err) = patcher.apply(&mut state, patch) {
                        log_debug!(index, %err, "a state patch does not apply; compacted without it");
                        // Kept to a bound while nobody takes them (the rest only logged).
                        if self.warnings.len() < MAX_WARNINGS {
                            self.warnings.push(CompactWarning {
                                index,
                                message: err.to_string(),
                            });
                        }
                    }
                }
                // The window holds only the state events `push` put there.
                _ => {}
            }
        }
        out.push(Event::from(StateSnapshot {
            snapshot: state,
            metadata: metadata.map(Box::new),
            ..StateSnapshot::wire_blank()
        }));
    }

    /// Compacts a whole recording.
    pub fn compact_all(events: impl IntoIterator<Item = Event>) -> Vec<Event> {
        let mut c = Compactor::new();
        let mut out = Vec::new();
        for e in events {
            c.push(e, &mut out);
        }
        c.finish(&mut out);
        out
    }
}

/// Iterator adapter compacting a recording; see [`compact_events`].
#[derive(Debug)]
pub struct CompactEvents<I> {
    inner: I,
    compactor: Option<Compactor>,
    buffer: std::collections::VecDeque<Event>,
    scratch: Vec<Event>,
}

/// Compacts an event iterator, yielding each compacted event as soon as its place is
/// known (state snapshots at their window's end, open streams at their end).
pub fn compact_events<I: IntoIterator<Item = Event>>(events: I) -> CompactEvents<I::IntoIter> {
    CompactEvents {
        inner: events.into_iter(),
        compactor: Some(Compactor::new()),
        buffer: Default::default(),
        scratch: Vec::new(),
    }
}

impl<I: Iterator<Item = Event>> Iterator for CompactEvents<I> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(e) = self.buffer.pop_front() {
                return Some(e);
            }
            let c = self.compactor.as_mut()?;
            match self.inner.next() {
                Some(e) => c.push(e, &mut self.scratch),
                None => {
                    if let Some(c) = self.compactor.take() {
                        c.finish(&mut self.scratch);
                    }
                }
            }
            self.buffer.extend(self.scratch.drain(..));
        }
    }
}
