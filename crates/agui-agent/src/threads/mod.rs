//! Threads: each thread's past runs and its live run, kept behind [`ThreadStore`].
//!
//! A thread is a conversation: a sequence of runs with the same `threadId`. The
//! CopilotKit runtime (`agui_server::copilotkit`) keeps every run it executes in a store:
//!
//! * the **live run**: its events as they are produced, in order, readable from any
//!   position (a cursor is an index into the run's events) while the run goes on, and
//!   waited on for more;
//! * the **history**: each finished run, compacted (one start, one content and one end
//!   per message and tool call; one state snapshot per run), oldest first.
//!
//! At most one run is live per thread. The store is the seam between executing runs
//! and serving them: the response of the request that started a run, a client that
//! reconnects to it, and a client restoring the thread all read from it.
//! [`InMemoryThreadStore`] is the default, bounded by [`ThreadLimits`].

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agui_core::Event;

pub mod contract;
mod memory;

pub use memory::{InMemoryThreadStore, ThreadLimits};

/// A boxed future returned by [`ThreadStore`] methods.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The thread already has a live run.
    #[error("thread '{thread_id}' is already running run '{run_id}'")]
    Busy {
        /// The thread.
        thread_id: String,
        /// Its live run.
        run_id: String,
    },
    /// No room for another thread: the store holds its limit of threads and none can be
    /// evicted (all are running).
    #[error("the thread store is full: {limit} threads, none idle")]
    Full {
        /// The configured limit.
        limit: usize,
    },
    /// No room for more bytes: the store holds its byte limit and no idle thread is
    /// left to evict.
    #[error(
        "the thread store holds its limit of {limit} bytes, and no idle thread is left to evict"
    )]
    OverBudget {
        /// The configured limit, in bytes.
        limit: usize,
    },
    /// The run is not the thread's live (or last) run.
    #[error("run '{run_id}' is not the live run of thread '{thread_id}'")]
    NotLive {
        /// The thread.
        thread_id: String,
        /// The run asked for.
        run_id: String,
    },
    /// The live run has as many events as a run may have.
    #[error("run '{run_id}' of thread '{thread_id}' reached the limit of {limit} events")]
    RunTooLong {
        /// The thread.
        thread_id: String,
        /// The run.
        run_id: String,
        /// The configured limit.
        limit: usize,
    },
    /// The storage backend failed.
    #[error("thread store backend failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// What [`ThreadStore::begin_run`] tells about the thread the run joins.
#[derive(Debug, Clone, Default)]
pub struct RunBegun {
    /// Ids of the messages the thread's history already holds (so a client's re-sent
    /// messages are not recorded twice).
    pub known_message_ids: HashSet<String>,
}

/// A thread as it is now: see [`ThreadStore::snapshot`].
#[derive(Debug, Clone, Default)]
pub struct ThreadSnapshot {
    /// Each finished run, compacted, oldest first.
    pub history: Vec<Arc<[Event]>>,
    /// The live run, when one is running: its id.
    pub live: Option<String>,
}

/// A read of the live run's events: see [`ThreadStore::read_run`].
#[derive(Debug, Clone, Default)]
pub struct RunPage {
    /// The events from the cursor on (possibly none).
    pub events: Vec<Event>,
    /// Whether the run has ended (its last event is among those read, or before).
    pub ended: bool,
}

/// Storage of threads. See the [module docs](self).
///
/// Every method names the thread; methods about a run name it too, so a store can
/// refuse a writer or reader that lost track. Implementations must be safe to call
/// from many tasks at once.
pub trait ThreadStore: Send + Sync + 'static {
    /// Makes `run_id` the live run of `thread_id` (creating the thread when it is new).
    /// Fails with [`StoreError::Busy`] when another run is live, [`StoreError::Full`]
    /// when a new thread does not fit.
    fn begin_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, RunBegun>;

    /// Appends events to the live run. A store with a bound on a run's events refuses
    /// a batch beyond it with [`StoreError::RunTooLong`], except a batch whose last
    /// event is terminal (`RUN_FINISHED`, `RUN_ERROR`): the end of a run always fits.
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        events: Vec<Event>,
    ) -> StoreFuture<'a, ()>;

    /// Ends the live run: it joins the history, compacted. Its events stay readable
    /// by [`read_run`](Self::read_run) until the thread's next run begins.
    fn end_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, ()>;

    /// The thread's history and live run; `None` for a thread the store does not hold.
    fn snapshot<'a>(&'a self, thread_id: &'a str) -> StoreFuture<'a, Option<ThreadSnapshot>>;

    /// The events of the live (or just ended) run `run_id` from index `from` on.
    fn read_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        from: usize,
    ) -> StoreFuture<'a, RunPage>;

    /// Resolves when the run `run_id` may have events after index `from`, or has ended,
    /// or is gone; waking early is allowed (the caller reads again).
    fn wait<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        from: usize,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

    /// Called by the process running `run_id` every [`KEEP_ALIVE_INTERVAL`] while it
    /// runs: a store shared by several processes extends the run's lease (a run whose
    /// process stops calling is ended by the next reader as lost). Returns whether a
    /// stop was requested through [`request_stop`](Self::request_stop). The default
    /// (a store in one process) does nothing and returns `false`.
    fn keep_alive<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, bool> {
        let _ = (thread_id, run_id);
        Box::pin(std::future::ready(Ok(false)))
    }

    /// Asks whichever process runs the thread's live run to stop it (it sees the
    /// request at its next [`keep_alive`](Self::keep_alive)); the id of that run, or
    /// `None` when nothing runs. The default (a store in one process, where the run is
    /// stopped directly) returns `None`.
    fn request_stop<'a>(&'a self, thread_id: &'a str) -> StoreFuture<'a, Option<String>> {
        let _ = thread_id;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// How often a running run calls [`ThreadStore::keep_alive`]: also the longest a stop
/// requested on another process waits to be seen.
pub const KEEP_ALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Adds to `out` the ids of the messages `events` record (message events and
/// `RUN_STARTED` input): what [`RunBegun::known_message_ids`] holds for a history.
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
