//! Threads as an index over runs: a thread's key, its record, and the compacted form
//! in which each of its runs joins its history.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use agui_sdk_core::semantics::Compactor;
use agui_sdk_core::Event;
use bytes::Bytes;

use super::RunKey;

/// The name of a thread in a store: derived from its owner and thread id (see
/// [`ThreadKey::derive`]), so that the same thread id under another owner is another
/// thread, and a key reveals neither. Its text is the owner's scope
/// ([`owner_scope`]), a `.`, and the thread's own hash: a store lists an owner's
/// threads by the scope.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadKey(Arc<str>);

impl ThreadKey {
    /// The key of thread `thread_id` owned by `owner`: [`owner_scope`]`(owner)`, a
    /// `.`, and the first 16 bytes of SHA-256 over `thread`, the owner and the thread
    /// id (separated by the byte 0x1f), in hex.
    pub fn derive(owner: &str, thread_id: &str) -> Self {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"thread\x1f");
        h.update(owner.as_bytes());
        h.update([0x1f]);
        h.update(thread_id.as_bytes());
        let key = super::hex(&h.finalize()[..16]);
        ThreadKey(format!("{}.{key}", owner_scope(owner)).into())
    }

    /// The scope of the thread's owner (see [`owner_scope`]): the text before the `.`.
    pub fn scope(&self) -> &str {
        self.0.split_once('.').map_or("", |(scope, _)| scope)
    }

    /// A key from its text (as a store keeps it).
    pub fn from_text(text: &str) -> Self {
        ThreadKey(text.into())
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The scope under which a store lists the threads of `owner`: the first 16 bytes of
/// SHA-256 over `owner` and the owner (separated by the byte 0x1f), in hex.
pub fn owner_scope(owner: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"owner\x1f");
    h.update(owner.as_bytes());
    super::hex(&h.finalize()[..16])
}

/// A thread as a list of threads shows it: see
/// [`ThreadIndex::list_threads`](super::ThreadIndex::list_threads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSummary {
    /// The thread's key.
    pub key: ThreadKey,
    /// The client's thread id.
    pub thread_id: String,
    /// The agent of its last run.
    pub agent: String,
    /// When its first run ended, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it last changed (a run ended, or it was renamed, archived or restored),
    /// likewise.
    pub updated_at_ms: u64,
    /// When its last run ended, likewise: what a list is ordered by.
    pub last_run_at_ms: u64,
    /// The name it was given, if any.
    pub name: Option<String>,
    /// Whether it is archived.
    pub archived: bool,
}

/// A change to a thread's name or archived flag: see
/// [`ThreadIndex::update_thread`](super::ThreadIndex::update_thread). `None` leaves it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadUpdate {
    /// The new name.
    pub name: Option<String>,
    /// Archived or not.
    pub archived: Option<bool>,
}

/// Which of an owner's threads a list returns, and from where: see
/// [`ThreadIndex::list_threads`](super::ThreadIndex::list_threads). The list's order is the
/// time a thread's last run ended, the latest first, then the key, the greatest first
/// (one total order, so that pages neither repeat nor skip a thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadQuery {
    /// Only the threads after this place in the order: the `last_run_at_ms` and key of
    /// the previous page's last thread.
    pub after: Option<(u64, ThreadKey)>,
    /// Most threads returned.
    pub limit: usize,
    /// Archived threads too.
    pub include_archived: bool,
    /// Only threads whose last run ran one of these agents; empty: any agent.
    pub agents: Vec<String>,
}

impl ThreadQuery {
    /// The first `limit` threads, archived ones left out, of any agent.
    pub fn first(limit: usize) -> Self {
        ThreadQuery {
            after: None,
            limit,
            include_archived: false,
            agents: Vec::new(),
        }
    }

    /// Whether `t` passes the filters (the place is the store's: it reads its index from
    /// [`after`](Self::after) on).
    pub fn admits(&self, t: &ThreadSummary) -> bool {
        (self.include_archived || !t.archived)
            && (self.agents.is_empty() || self.agents.contains(&t.agent))
    }
}

impl fmt::Debug for ThreadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadKey({})", self.0)
    }
}

impl fmt::Display for ThreadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One ended run as its thread's history keeps it: compacted (one start, one content
/// and one end per message and tool call; one state snapshot), with the ids of the
/// messages it records. Build one with [`ThreadEntryBuilder`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadEntry {
    /// The compacted events' canonical JSON, one event per line (`\n` after each).
    pub events: Bytes,
    /// How many events `events` holds.
    pub count: usize,
    /// The ids of the messages the run records (see [`recorded_message_ids`]).
    pub message_ids: Vec<String>,
}

impl ThreadEntry {
    /// Each event's JSON, in order.
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.events
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
    }

    /// An entry from its stored text (`events`, one JSON event per line) and message
    /// ids: the count is recomputed.
    pub fn from_parts(events: Bytes, message_ids: Vec<String>) -> Self {
        let count = events
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        ThreadEntry {
            events,
            count,
            message_ids,
        }
    }
}

/// Compacts a run's events, as they are read, into its [`ThreadEntry`].
#[derive(Debug, Default)]
pub struct ThreadEntryBuilder {
    compactor: Compactor,
    out: Vec<Event>,
}

impl ThreadEntryBuilder {
    /// A builder at the start of a run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the run's next event.
    pub fn push(&mut self, event: Event) {
        self.compactor.push(event, &mut self.out);
    }

    /// Takes the run's next event from its canonical JSON; an event that does not
    /// decode is skipped with a warning (a store holds what the server wrote).
    pub fn push_json(&mut self, json: &[u8]) {
        match Event::from_json_slice(json) {
            Ok(e) => self.push(e),
            Err(err) => {
                tracing::warn!(error = %err, "a stored event does not decode: left out of the thread's history")
            }
        }
    }

    /// The run's entry.
    pub fn finish(mut self) -> ThreadEntry {
        self.compactor.finish(&mut self.out);
        let mut ids = HashSet::new();
        recorded_message_ids(&self.out, &mut ids);
        let mut events = Vec::new();
        for e in &self.out {
            e.write_json(&mut events);
            events.push(b'\n');
        }
        let mut message_ids: Vec<String> = ids.into_iter().collect();
        message_ids.sort_unstable();
        ThreadEntry {
            events: Bytes::from(events),
            count: self.out.len(),
            message_ids,
        }
    }
}

/// A thread's running run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRun {
    /// Its key in the store.
    pub key: RunKey,
    /// The client's run id.
    pub run_id: String,
}

/// A thread as it is now: see [`ThreadIndex::thread`](super::ThreadIndex::thread).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadRecord {
    /// Each ended run, compacted, oldest first (its message ids are in
    /// [`known_message_ids`](Self::known_message_ids), not in the entries).
    pub history: Vec<ThreadEntry>,
    /// The running run, when one runs.
    pub live: Option<LiveRun>,
    /// The ids of the messages the history records (so a client's re-sent messages are
    /// not recorded twice).
    /// Shared with the store where it can be (a read copies no set).
    pub known_message_ids: Arc<HashSet<String>>,
}

/// Adds to `out` the ids of the messages `events` record (message events and
/// `RUN_STARTED` input): what [`ThreadRecord::known_message_ids`] holds for a history.
pub fn recorded_message_ids(events: &[Event], out: &mut HashSet<String>) {
    for e in events {
        match e {
            Event::RunStarted(s) => {
                if let Some(input) = &s.input {
                    out.extend(input.messages.iter().map(|m| m.id().to_owned()));
                }
            }
            Event::TextMessageStart(m) => {
                out.insert(m.message_id.clone());
            }
            Event::ToolCallResult(r) => {
                out.insert(r.message_id.clone());
            }
            Event::ToolCallStart(t) => {
                if let Some(p) = &t.parent_message_id {
                    out.insert(p.clone());
                }
            }
            Event::ReasoningMessageStart(m) => {
                out.insert(m.message_id.clone());
            }
            Event::MessagesSnapshot(s) => out.extend(s.messages.iter().map(|m| m.id().to_owned())),
            _ => {}
        }
    }
}
