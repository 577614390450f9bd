//! Chunk expansion: rewrites the `TEXT_MESSAGE_CHUNK`, `TOOL_CALL_CHUNK` and
//! `REASONING_MESSAGE_CHUNK` shorthands into start / content / end events with the
//! reference client's exact rules (one pending stream per subagent lane).

use indexmap::IndexMap;
use serde_json::Value;

use crate::event::*;
use crate::types::TextMessageRole;
use crate::JsonObject;

/// Which shorthand a chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Tool,
    Reasoning,
}

impl Kind {
    fn entity(self) -> &'static str {
        match self {
            Kind::Text => "text message",
            Kind::Tool => "tool call",
            Kind::Reasoning => "reasoning message",
        }
    }
    fn chunk_type(self) -> &'static str {
        match self {
            Kind::Text => "TEXT_MESSAGE_CHUNK",
            Kind::Tool => "TOOL_CALL_CHUNK",
            Kind::Reasoning => "REASONING_MESSAGE_CHUNK",
        }
    }
    fn id_field(self) -> &'static str {
        match self {
            Kind::Tool => "toolCallId",
            _ => "messageId",
        }
    }
}

/// Why a chunk cannot be expanded. The `Display` text is the reference's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkRule {
    /// The chunk opens a stream but lacks its id.
    #[error("First {chunk_type} must have a {field}")]
    MissingField {
        /// The chunk type.
        chunk_type: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// A continuation chunk disagrees with its stream's opener.
    #[error("Cannot continue {entity} '{id}': chunk {field} '{incoming}' does not match the open stream's {field} {}.", .established.as_ref().map(|e| format!("'{e}'")).unwrap_or_else(|| "(absent)".to_owned()))]
    OpenerMismatch {
        /// `text message`, `tool call`.
        entity: &'static str,
        /// The stream's id.
        id: String,
        /// The disagreeing field.
        field: &'static str,
        /// The chunk's value.
        incoming: String,
        /// The opener's value.
        established: Option<String>,
    },
    /// The chunk's tag names another lane than the one holding its id.
    #[error("Cannot continue {entity} '{id}': chunk subagentRunId '{tag}' does not match the open stream's subagent '{}'.", .owner.as_deref().unwrap_or("(the parent agent)"))]
    LaneMismatch {
        /// The entity kind.
        entity: &'static str,
        /// The stream's id.
        id: String,
        /// The chunk's tag.
        tag: String,
        /// The lane holding the id.
        owner: Option<String>,
    },
    /// An untagged chunk without id while several lanes have an open stream of its kind.
    #[error("Ambiguous {chunk_type}: it carries neither a {field} nor a subagentRunId, but {count} lanes have an open {entity}. Attribute the chunk to the subagent it belongs to.")]
    Ambiguous {
        /// The chunk type.
        chunk_type: &'static str,
        /// The id field.
        field: &'static str,
        /// How many lanes.
        count: usize,
        /// The entity kind.
        entity: &'static str,
    },
}

impl ChunkRule {
    /// The rule's stable id (see [`VerifyRule::id`](crate::semantics::VerifyRule::id)).
    pub fn id(&self) -> &'static str {
        match self {
            ChunkRule::MissingField { .. } => "chunks/first-chunk-names-its-entity",
            ChunkRule::OpenerMismatch { .. }
            | ChunkRule::LaneMismatch { .. }
            | ChunkRule::Ambiguous { .. } => "chunks/continuation-matches-opener",
        }
    }
}

/// A chunk expansion failure at an event index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {index}: {rule}")]
pub struct ChunkError {
    /// Index of the chunk in the input stream.
    pub index: usize,
    /// What went wrong.
    pub rule: ChunkRule,
}

#[derive(Debug, Clone)]
enum Pending {
    Text {
        id: String,
        role: TextMessageRole,
        name: Option<String>,
        tag: Option<String>,
    },
    Tool {
        id: String,
        name: String,
        parent: Option<String>,
        tag: Option<String>,
    },
    Reasoning {
        id: String,
        tag: Option<String>,
    },
}

impl Pending {
    fn kind(&self) -> Kind {
        match self {
            Pending::Text { .. } => Kind::Text,
            Pending::Tool { .. } => Kind::Tool,
            Pending::Reasoning { .. } => Kind::Reasoning,
        }
    }
    fn id(&self) -> &str {
        match self {
            Pending::Text { id, .. } | Pending::Tool { id, .. } | Pending::Reasoning { id, .. } => {
                id
            }
        }
    }
    fn tag(&self) -> Option<&String> {
        match self {
            Pending::Text { tag, .. }
            | Pending::Tool { tag, .. }
            | Pending::Reasoning { tag, .. } => tag.as_ref(),
        }
    }
    fn end_event(self) -> Event {
        match self {
            Pending::Text { id, tag, .. } => Event::TextMessageEnd(TextMessageEnd {
                message_id: id,
                subagent_run_id: tag,
                ..TextMessageEnd::wire_blank()
            }),
            Pending::Tool { id, tag, .. } => Event::ToolCallEnd(ToolCallEnd {
                tool_call_id: id,
                subagent_run_id: tag,
                ..ToolCallEnd::wire_blank()
            }),
            Pending::Reasoning { id, tag } => Event::ReasoningMessageEnd(ReasoningMessageEnd {
                message_id: id,
                subagent_run_id: tag,
                ..ReasoningMessageEnd::wire_blank()
            }),
        }
    }
}

/// The fields every chunk kind shares.
struct Chunk {
    kind: Kind,
    id: Option<String>,
    tag: Option<String>,
    delta: Option<String>,
    metadata: Option<JsonObject>,
    raw_event: Option<Value>,
    extra: JsonObject,
}

/// The chunk expander: feed events in order with [`ChunkExpander::push`]; expanded
/// events are appended to the output. Pending streams at the end of the input are
/// dropped without an end event, as in the reference.
#[derive(Debug, Clone, Default)]
pub struct ChunkExpander {
    lanes: IndexMap<Option<String>, Pending>,
    index: usize,
}

impl ChunkExpander {
    /// An expander at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn close_lane(&mut self, owner: &Option<String>, out: &mut Vec<Event>) {
        if let Some(p) = self.lanes.shift_remove(owner) {
            out.push(p.end_event());
        }
    }

    fn close_all(&mut self, out: &mut Vec<Event>) {
        for (_, p) in self.lanes.drain(..) {
            out.push(p.end_event());
        }
    }

    fn resolve_lane(&self, c: &Chunk) -> Result<Option<String>, ChunkRule> {
        if let Some(id) = &c.id {
            if let Some((owner, _)) = self
                .lanes
                .iter()
                .find(|(_, p)| p.kind() == c.kind && p.id() == id)
            {
                if let Some(tag) = &c.tag {
                    if Some(tag) != owner.as_ref() {
                        return Err(ChunkRule::LaneMismatch {
                            entity: c.kind.entity(),
                            id: id.clone(),
                            tag: tag.clone(),
                            owner: owner.clone(),
                        });
                    }
                }
                return Ok(owner.clone());
            }
            return Ok(c.tag.clone());
        }
        if c.tag.is_some() {
            return Ok(c.tag.clone());
        }
        if self.lanes.get(&None).is_some_and(|p| p.kind() == c.kind) {
            return Ok(None);
        }
        let candidates: Vec<&Option<String>> = self
            .lanes
            .iter()
            .filter(|(_, p)| p.kind() == c.kind)
            .map(|(o, _)| o)
            .collect();
        match candidates.len() {
            0 => Ok(None),
            1 => Ok(candidates[0].clone()),
            n => Err(ChunkRule::Ambiguous {
                chunk_type: c.kind.chunk_type(),
                field: c.kind.id_field(),
                count: n,
                entity: c.kind.entity(),
            }),
        }
    }

    /// Processes one event, appending what it expands to (or the event itself) to `out`.
    pub fn push(&mut self, event: Event, out: &mut Vec<Event>) -> Result<(), ChunkError> {
        let index = self.index;
        self.index += 1;
        self.push_inner(event, out)
            .map_err(|rule| ChunkError { index, rule })
    }

    fn push_inner(&mut self, event: Event, out: &mut Vec<Event>) -> Result<(), ChunkRule> {
        match event {
            Event::TextMessageChunk(e) => {
                let (role, name) = (e.role, e.name);
                let c = Chunk {
                    kind: Kind::Text,
                    id: e.message_id,
                    tag: e.subagent_run_id,
                    delta: e.delta,
                    metadata: e.metadata.map(|b| *b),
                    raw_event: e.raw_event.map(|b| *b),
                    extra: e.extra.into_map(),
                };
                self.expand(c, ChunkOpener::Text { role, name }, out)
            }
            Event::ToolCallChunk(e) => {
                let c = Chunk {
                    kind: Kind::Tool,
                    id: e.tool_call_id,
                    tag: e.subagent_run_id,
                    delta: e.delta,
                    metadata: e.metadata.map(|b| *b),
                    raw_event: e.raw_event.map(|b| *b),
                    extra: e.extra.into_map(),
                };
                self.expand(
                    c,
                    ChunkOpener::Tool {
                        name: e.tool_call_name,
                        parent: e.parent_message_id,
                    },
                    out,
                )
            }
            Event::ReasoningMessageChunk(e) => {
                let c = Chunk {
                    kind: Kind::Reasoning,
                    id: e.message_id,
                    tag: e.subagent_run_id,
                    delta: e.delta,
                    metadata: e.metadata.map(|b| *b),
                    raw_event: e.raw_event.map(|b| *b),
                    extra: e.extra.into_map(),
                };
                self.expand(c, ChunkOpener::Reasoning, out)
            }
            // Every other event sorts by what it does to the chunk streams pending
            // (`ends`/`keeps` in `for_each_event!`): a run-scoped event ends every lane's,
            // another its own lane's (a subagent's end its invocation's), unless it
            // passes through them as `RAW` and `ACTIVITY_*` do in the reference.
            _ => {
                let ty = event.event_type();
                if ty.is_run_scoped() {
                    self.close_all(out);
                } else if ty.ends_pending_chunks() {
                    let owner = event.subagent_run_id().map(str::to_owned);
                    self.close_lane(&owner, out);
                }
                out.push(event);
                Ok(())
            }
        }
    }

    fn expand(
        &mut self,
        c: Chunk,
        opener: ChunkOpener,
        out: &mut Vec<Event>,
    ) -> Result<(), ChunkRule> {
        let lane = self.resolve_lane(&c)?;
        let start = out.len();
        let continuing = match self.lanes.get(&lane) {
            Some(p) if p.kind() == c.kind && c.id.as_ref().is_none_or(|id| id == p.id()) => {
                match (p, &opener) {
                    (
                        Pending::Text { id, role, name, .. },
                        ChunkOpener::Text { role: r, name: n },
                    ) => {
                        agree(c.kind, id, "role", r.map(role_str), Some(role_str(*role)))?;
                        agree(c.kind, id, "name", n.as_deref(), name.as_deref())?;
                    }
                    (
                        Pending::Tool {
                            id, name, parent, ..
                        },
                        ChunkOpener::Tool {
                            name: n,
                            parent: pm,
                        },
                    ) => {
                        agree(c.kind, id, "toolCallName", n.as_deref(), Some(name))?;
                        agree(
                            c.kind,
                            id,
                            "parentMessageId",
                            pm.as_deref(),
                            parent.as_deref(),
                        )?;
                    }
                    _ => {}
                }
                true
            }
            _ => false,
        };
        let (id, opener_tag) = if continuing {
            match self.lanes.get(&lane) {
                Some(p) => (p.id().to_owned(), p.tag().cloned()),
                None => return Ok(()),
            }
        } else {
            self.close_lane(&lane, out);
            let Some(id) = c.id.clone() else {
                return Err(ChunkRule::MissingField {
                    chunk_type: c.kind.chunk_type(),
                    field: c.kind.id_field(),
                });
            };
            let (pending, opener_event) = match opener {
                ChunkOpener::Text { role, name } => {
                    let role = role.unwrap_or_default();
                    (
                        Pending::Text {
                            id: id.clone(),
                            role,
                            name: name.clone(),
                            tag: c.tag.clone(),
                        },
                        Event::TextMessageStart(TextMessageStart {
                            message_id: id.clone(),
                            role: Some(role),
                            name,
                            subagent_run_id: c.tag.clone(),
                            metadata: c.metadata.clone().map(Box::new),
                            ..TextMessageStart::wire_blank()
                        }),
                    )
                }
                ChunkOpener::Tool { name, parent } => {
                    let Some(name) = name else {
                        return Err(ChunkRule::MissingField {
                            chunk_type: "TOOL_CALL_CHUNK",
                            field: "toolCallName",
                        });
                    };
                    (
                        Pending::Tool {
                            id: id.clone(),
                            name: name.clone(),
                            parent: parent.clone(),
                            tag: c.tag.clone(),
                        },
                        Event::from(ToolCallStart {
                            tool_call_id: id.clone(),
                            tool_call_name: name,
                            parent_message_id: parent,
                            subagent_run_id: c.tag.clone(),
                            metadata: c.metadata.clone().map(Box::new),
                            ..ToolCallStart::wire_blank()
                        }),
                    )
                }
                ChunkOpener::Reasoning => (
                    Pending::Reasoning {
                        id: id.clone(),
                        tag: c.tag.clone(),
                    },
                    Event::ReasoningMessageStart(ReasoningMessageStart {
                        message_id: id.clone(),
                        subagent_run_id: c.tag.clone(),
                        metadata: c.metadata.clone().map(Box::new),
                        ..ReasoningMessageStart::wire_blank()
                    }),
                ),
            };
            self.lanes.insert(lane, pending);
            out.push(opener_event);
            (id, c.tag.clone())
        };
        let owner = c.tag.clone().or(opener_tag);
        let has_extra = !c.extra.is_empty();
        let emit_content = c.delta.is_some() || c.raw_event.is_some();
        let nothing_yet = out.len() == start;
        if emit_content || (nothing_yet && (c.metadata.is_some() || has_extra)) {
            out.push(content_event(
                c.kind,
                id,
                c.delta.unwrap_or_default(),
                owner,
                c.metadata,
                c.raw_event,
                c.extra,
            ));
        } else if has_extra {
            // Only an opener was emitted: unknown keys ride on it; described keys win.
            if let Some(last) = out.last_mut() {
                let mut extra = c.extra;
                if let Event::ReasoningMessageStart(_) = last {
                    if extra.shift_remove("role").is_some() {
                        log_warn!(
                            "A REASONING_MESSAGE_CHUNK carried 'role', which the synthesized REASONING_MESSAGE_START already describes; the synthesized value is kept"
                        );
                    }
                }
                if !extra.is_empty() {
                    last.extra_mut().extend(extra.into());
                }
            }
        }
        Ok(())
    }

    /// Expands a whole list of events.
    pub fn expand_all(events: impl IntoIterator<Item = Event>) -> Result<Vec<Event>, ChunkError> {
        let mut x = ChunkExpander::new();
        let mut out = Vec::new();
        for e in events {
            x.push(e, &mut out)?;
        }
        Ok(out)
    }
}

enum ChunkOpener {
    Text {
        role: Option<TextMessageRole>,
        name: Option<String>,
    },
    Tool {
        name: Option<String>,
        parent: Option<String>,
    },
    Reasoning,
}

fn role_str(r: TextMessageRole) -> &'static str {
    crate::types::Role::from(r).as_str()
}

fn agree(
    kind: Kind,
    id: &str,
    field: &'static str,
    incoming: Option<&str>,
    established: Option<&str>,
) -> Result<(), ChunkRule> {
    match incoming {
        Some(i) if Some(i) != established => Err(ChunkRule::OpenerMismatch {
            entity: kind.entity(),
            id: id.to_owned(),
            field,
            incoming: i.to_owned(),
            established: established.map(str::to_owned),
        }),
        _ => Ok(()),
    }
}

fn content_event(
    kind: Kind,
    id: String,
    delta: String,
    owner: Option<String>,
    metadata: Option<JsonObject>,
    raw_event: Option<Value>,
    extra: JsonObject,
) -> Event {
    match kind {
        Kind::Text => Event::TextMessageContent(TextMessageContent {
            message_id: id,
            delta,
            subagent_run_id: owner,
            metadata: metadata.map(Box::new),
            raw_event: raw_event.map(Box::new),
            extra: extra.into(),
            ..TextMessageContent::wire_blank()
        }),
        Kind::Tool => Event::ToolCallArgs(ToolCallArgs {
            tool_call_id: id,
            delta,
            subagent_run_id: owner,
            metadata: metadata.map(Box::new),
            raw_event: raw_event.map(Box::new),
            extra: extra.into(),
            ..ToolCallArgs::wire_blank()
        }),
        Kind::Reasoning => Event::ReasoningMessageContent(ReasoningMessageContent {
            message_id: id,
            delta,
            subagent_run_id: owner,
            metadata: metadata.map(Box::new),
            raw_event: raw_event.map(Box::new),
            extra: extra.into(),
            ..ReasoningMessageContent::wire_blank()
        }),
    }
}

/// Iterator adapter expanding chunks; see [`expand_chunks`].
#[derive(Debug)]
pub struct ExpandChunks<I> {
    inner: I,
    expander: ChunkExpander,
    buffer: std::collections::VecDeque<Event>,
    scratch: Vec<Event>,
    failed: bool,
}

/// Expands chunk events in an event iterator. Yields an error (and then ends) where
/// the reference would error the stream.
pub fn expand_chunks<I: IntoIterator<Item = Event>>(events: I) -> ExpandChunks<I::IntoIter> {
    ExpandChunks {
        inner: events.into_iter(),
        expander: ChunkExpander::new(),
        buffer: Default::default(),
        scratch: Vec::new(),
        failed: false,
    }
}

impl<I: Iterator<Item = Event>> Iterator for ExpandChunks<I> {
    type Item = Result<Event, ChunkError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.buffer.pop_front() {
                return Some(Ok(e));
            }
            if self.failed {
                return None;
            }
            let e = self.inner.next()?;
            if let Err(err) = self.expander.push(e, &mut self.scratch) {
                self.failed = true;
                self.scratch.clear();
                return Some(Err(err));
            }
            self.buffer.extend(self.scratch.drain(..));
        }
    }
}
