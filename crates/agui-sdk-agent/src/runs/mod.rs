//! Durable, resumable runs: each run's events in an append-only log with sequence
//! numbers, behind [`RunStore`], so that a client whose connection drops re-attaches
//! and gets exactly the events it missed while the run goes on.
//!
//! * **Sequence numbers.** Every event of a resumable run gets a seq, 1-based and
//!   contiguous, assigned by the run's single writer (the producer task of the replica
//!   that owns the run, fenced by a token the store minted). A cursor is the last seq a
//!   client has; 0 means "before the first event".
//! * **Commit before send.** A viewer (the response of the request that started the
//!   run, or a re-attach) only ever reads events from the store: no one sees an event
//!   the store does not have.
//! * **Wake-ups carry no events**: a viewer waits for "the head moved", then reads the
//!   log by cursor; a lost wake-up delays delivery, never loses an event.
//! * **Every run ends with exactly one terminal event in its log.** A run whose owner
//!   died is closed by a reaper on another replica with `RUN_ERROR` code `run_lost` ([`RUN_LOST`]).
//!
//! * **Threads are an index over runs.** A run created with a [`ThreadKey`] belongs to
//!   that thread (a CopilotKit conversation): a thread has at most one running run (its
//!   live run), and each of its runs, once ended by [`ThreadIndex::end_thread_run`],
//!   joins the thread's history compacted ([`ThreadEntry`]). [`ThreadIndex::thread`]
//!   reads both.
//!   A thread run is a run like any other: the same log, viewers, fence and reaper.
//!
//! * **Stores by role.** A store implements four small traits: [`RunLog`] (the runs'
//!   records and events), [`Leases`] (heartbeats, cancel requests, take-over; provided
//!   for a single process), [`ThreadIndex`] (threads over the runs) and
//!   [`InterruptLedger`] (each thread's open interrupts, see [`Interrupts`]); any type
//!   with all four is a [`RunStore`]. One [`RunLimits`] bounds every store. The contract
//!   suite every store passes is `contract`, behind the `test-util` feature.
//!
//! [`InMemoryRunStore`] is the default (one process); the `agui-sdk-redis` crate holds a
//! Redis Streams store for several replicas. The HTTP surface (`agui_sdk_server::router`) and
//! the wire format (`id: {runId}:{seq}` on SSE frames, `AGUI-First-Seq` on protobuf
//! responses) are described there.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

#[cfg(any(test, feature = "test-util"))]
pub mod contract;
mod ledger;
mod limits;
mod memory;
mod reaper;
mod thread;

pub use ledger::{
    InMemoryLedger, InterruptKey, InterruptLedger, InterruptPolicy, Interrupts, LedgerEntry,
    Refusal, Session,
};
pub use limits::RunLimits;
pub use memory::{InMemoryRunStore, EVENT_OVERHEAD, RUN_OVERHEAD};
pub use reaper::{reap, thread_entry};
pub use thread::{
    owner_scope, recorded_message_ids, LiveRun, ThreadEntry, ThreadEntryBuilder, ThreadKey,
    ThreadQuery, ThreadRecord, ThreadSummary, ThreadUpdate,
};

/// The `code` of the `RUN_ERROR` that closes a run whose owner died: the reaper
/// ([`reap`]) on another replica appends it, after closing the run's open messages
/// and tool calls, and the run's status becomes [`RunStatus::Lost`]. A client seeing
/// it knows the run did not finish and will not go on.
pub const RUN_LOST: &str = "run_lost";

/// A boxed future returned by the store's methods ([`RunLog`], [`Leases`],
/// [`ThreadIndex`]).
pub type RunStoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, RunStoreError>> + Send + 'a>>;

/// The name of a run in a store: derived from its owner, agent and run id (see
/// [`RunKey::derive`]), so that the same run id under another owner or agent is another
/// run, and a key reveals none of the three.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunKey(Arc<str>);

impl RunKey {
    /// The key of run `run_id` of `agent` owned by `owner`: the first 16 bytes of
    /// SHA-256 over the three (separated by the byte 0x1f), in hex.
    pub fn derive(owner: &str, agent: &str, run_id: &str) -> Self {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(owner.as_bytes());
        h.update([0x1f]);
        h.update(agent.as_bytes());
        h.update([0x1f]);
        h.update(run_id.as_bytes());
        let digest = h.finalize();
        RunKey(hex_key("", &digest[..16]))
    }

    /// A key from its text (as a store lists it).
    pub fn from_text(text: &str) -> Self {
        RunKey(text.into())
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunKey({})", self.0)
    }
}

impl fmt::Display for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `prefix` and the lower-case hex of `digest` (at most 32 bytes), as a key: written
/// in place, one allocation (keys are made for every run).
fn hex_key(prefix: &str, digest: &[u8]) -> Arc<str> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; 96];
    let n = prefix.len().min(32);
    text[..n].copy_from_slice(&prefix.as_bytes()[..n]);
    let mut at = n;
    for b in digest.iter().take(32) {
        text[at] = DIGITS[(b >> 4) as usize];
        text[at + 1] = DIGITS[(b & 15) as usize];
        at += 2;
    }
    Arc::from(std::str::from_utf8(&text[..at]).unwrap_or_default())
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

/// The token proving a producer still owns a run: minted by the store when the run is
/// created, and again when a reaper takes the run over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fence(pub u128);

impl Fence {
    /// A fresh random fence.
    pub fn random() -> Self {
        Fence(uuid::Uuid::new_v4().as_u128())
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunStatus {
    /// Producing events.
    Running,
    /// Ended with `RUN_FINISHED` (success or interrupt).
    Finished,
    /// Ended with `RUN_FINISHED` outcome `cancelled`.
    Cancelled,
    /// Ended with `RUN_ERROR`.
    Error,
    /// Its owner stopped; a reaper ended it with `RUN_ERROR` code `run_lost`.
    Lost,
}

impl RunStatus {
    /// The status's name: `running`, `finished`, `cancelled`, `error`, `lost`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Error => "error",
            RunStatus::Lost => "lost",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => RunStatus::Running,
            "finished" => RunStatus::Finished,
            "cancelled" => RunStatus::Cancelled,
            "error" => RunStatus::Error,
            "lost" => RunStatus::Lost,
            _ => return None,
        })
    }

    /// Whether the run has ended.
    pub fn is_terminal(&self) -> bool {
        *self != RunStatus::Running
    }
}

/// A run to create: see [`RunLog::create`].
#[derive(Debug, Clone)]
pub struct NewRun {
    /// Its key.
    pub key: RunKey,
    /// The client's run id.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The agent it runs.
    pub agent: String,
    /// SHA-256 (hex) of the request body: a retried start with the same body attaches,
    /// another body under the same run id is a conflict.
    pub body_hash: String,
    /// The replica creating it (its producer's home).
    pub replica: String,
    /// How long the producer's lease lasts without a heartbeat.
    pub lease: Duration,
    /// The thread the run belongs to, if any: it becomes the thread's live run, and
    /// [`RunLog::create`] fails with [`RunStoreError::Busy`] while another run of the
    /// thread is running.
    pub thread: Option<ThreadKey>,
}

/// What [`RunLog::create`] found.
#[derive(Debug, Clone)]
pub enum Created {
    /// A new run: the fence its producer writes with.
    New(Fence),
    /// The run exists already.
    Existing(RunRecord),
}

/// A run's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// The client's run id.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The agent it runs.
    pub agent: String,
    /// Where it stands.
    pub status: RunStatus,
    /// The highest committed seq.
    pub head: u64,
    /// The lowest seq still kept (1 until events are trimmed).
    pub oldest: u64,
    /// SHA-256 (hex) of the body that started it.
    pub body_hash: String,
    /// The replica whose producer writes it.
    pub owner_replica: String,
    /// Whether a cancel was requested.
    pub cancel_requested: bool,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// End time, milliseconds since the Unix epoch.
    pub finished_at_ms: Option<u64>,
    /// The thread it belongs to, if any.
    pub thread: Option<ThreadKey>,
}

/// Events read from a run's log: see [`RunLog::read`].
#[derive(Debug, Clone)]
pub struct Batch {
    /// The seq of `events[0]`.
    pub first: u64,
    /// Each event's canonical JSON (what follows `data: ` on SSE).
    pub events: Vec<Bytes>,
    /// The head at the time of the read.
    pub head: u64,
    /// The run's status at the time of the read.
    pub status: RunStatus,
}

/// What a producer learns from [`Leases::heartbeat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// Someone asked to cancel the run.
    pub cancel_requested: bool,
}

/// What [`Leases::request_cancel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The request is recorded; the producer will end the run.
    Requested,
    /// The run had already ended.
    AlreadyEnded,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunStoreError {
    /// The writer's fence is stale: another producer owns the run now.
    #[error("the run is fenced: another producer owns it")]
    Fenced,
    /// An append did not start right after the head.
    #[error("append out of order: the head is {head}")]
    Conflict {
        /// The head.
        head: u64,
    },
    /// The events after the cursor are no longer kept.
    #[error("events before seq {oldest} are no longer kept (head {head})")]
    Gone {
        /// The lowest seq kept.
        oldest: u64,
        /// The head.
        head: u64,
    },
    /// No such run.
    #[error("no such run")]
    NotFound,
    /// The run's thread has another run running.
    #[error("the thread is running run '{run_id}'")]
    Busy {
        /// The thread's live run.
        run_id: String,
    },
    /// The run has ended; nothing more may be appended.
    #[error("the run has ended")]
    Ended,
    /// The store is at capacity.
    #[error("the run store is full: {0}")]
    Full(String),
    /// The storage backend failed or is unreachable.
    #[error("run store unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// The run log: each run's record and its events by seq. One of the roles a
/// [`RunStore`] combines; see the [module docs](self).
///
/// Implementations must be safe to call from many tasks at once. Every operation names
/// the run by its [`RunKey`].
pub trait RunLog: Send + Sync + 'static {
    /// Creates the run, or returns the existing record when the key exists (an
    /// idempotent start).
    fn create(&self, run: NewRun) -> RunStoreFuture<'_, Created>;

    /// Appends `events` as seqs `first..first + len`, all or none. Fails with
    /// [`RunStoreError::Fenced`] when `fence` no longer owns the run, with
    /// [`RunStoreError::Conflict`] when `first` is not head + 1. With `terminal`, the
    /// run ends with that status (its retention starts); a thread run so ended frees
    /// its thread without joining its history (see
    /// [`ThreadIndex::end_thread_run`]).
    fn append<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
    ) -> RunStoreFuture<'a, ()>;

    /// At most `limit` events with seq greater than `after`. Fails with
    /// [`RunStoreError::Gone`] when some of them are no longer kept.
    fn read<'a>(&'a self, key: &'a RunKey, after: u64, limit: usize) -> RunStoreFuture<'a, Batch>;

    /// Resolves when the head may have moved past `after`, the run may have ended, or
    /// `timeout` passed: a wake-up only, which may come early.
    fn wait<'a>(
        &'a self,
        key: &'a RunKey,
        after: u64,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

    /// The run's record; `None` when there is no such run.
    fn record<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, Option<RunRecord>>;
}

/// Leases and cancel requests: how a run's producer proves it is alive and learns that
/// a client asked to stop, and how another replica takes over a run whose producer
/// died. One of the roles a [`RunStore`] combines.
///
/// A store for a single process needs no lease logic: the provided
/// [`expired_leases`](Self::expired_leases) and [`take_over`](Self::take_over) treat
/// every lease as held by this process (which holds them while it answers), so such a
/// store implements [`heartbeat`](Self::heartbeat) and
/// [`request_cancel`](Self::request_cancel) only. A store shared by several replicas
/// overrides all four, and runs the contract suite with `leases: true`.
pub trait Leases: Send + Sync + 'static {
    /// The producer renews its lease; it learns whether a cancel was requested. Fails
    /// with [`RunStoreError::Fenced`] when `fence` no longer owns the run, with
    /// [`RunStoreError::NotFound`] for no such run.
    fn heartbeat<'a>(&'a self, key: &'a RunKey, fence: Fence) -> RunStoreFuture<'a, Heartbeat>;

    /// Asks the run's producer, wherever it runs, to cancel it.
    fn request_cancel<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, CancelOutcome>;

    /// Running runs whose lease has expired (their producer is gone), at most `limit`.
    ///
    /// Provided: none, for a store whose runs' producers all run in this process.
    fn expired_leases(&self, limit: usize) -> RunStoreFuture<'_, Vec<RunKey>> {
        let _ = limit;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Takes over a run whose lease has expired: a new fence (the old producer's next
    /// append fails with [`RunStoreError::Fenced`]) and the head. `None` when the run
    /// is not running or its lease is still valid.
    ///
    /// Provided: `None`, for a store whose runs' producers all run in this process
    /// (no lease of it expires).
    fn take_over<'a>(
        &'a self,
        key: &'a RunKey,
        replica: &'a str,
    ) -> RunStoreFuture<'a, Option<(Fence, u64)>> {
        let _ = (key, replica);
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// The thread index: threads as an index over the runs of a [`RunLog`] (see the
/// [module docs](self)). One of the roles a [`RunStore`] combines.
///
/// A thread run's end belongs here: [`end_thread_run`](Self::end_thread_run) ends the
/// run in the log and adds its entry to its thread's history in one atomic step, which
/// is why this role extends the run log.
pub trait ThreadIndex: RunLog {
    /// Ends a thread run: appends its last `events` as [`RunLog::append`] does with
    /// `status` as the terminal status, and in the same step adds `entry` to the end of
    /// its thread's history and frees the thread for its next run. Fails as `append`
    /// does; a run that belongs to no thread fails with [`RunStoreError::NotFound`].
    fn end_thread_run<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        status: RunStatus,
        entry: ThreadEntry,
    ) -> RunStoreFuture<'a, ()>;

    /// The thread's history and live run; `None` for a thread the store does not hold.
    fn thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, Option<ThreadRecord>>;

    /// The threads of the owner whose scope is `scope` ([`owner_scope`]) that have at
    /// least one ended run and pass `query`, in its order (the one whose last run ended
    /// last first), from its place on, at most `query.limit`. A store answers from
    /// indexes ordered so, one per filter (the owner's threads, each agent's, each
    /// archived or not): a page costs what it returns, O(limit + log n), however
    /// little the filters match, and not the owner's (or the store's) whole set; the
    /// threads the store forgot for idleness and finds on the way leave its indexes.
    fn list_threads<'a>(
        &'a self,
        scope: &'a str,
        query: &'a ThreadQuery,
    ) -> RunStoreFuture<'a, Vec<ThreadSummary>>;

    /// Renames, archives or restores a thread that has an ended run; its summary after
    /// the change, or `None` for a thread the store does not list.
    fn update_thread<'a>(
        &'a self,
        key: &'a ThreadKey,
        update: ThreadUpdate,
    ) -> RunStoreFuture<'a, Option<ThreadSummary>>;

    /// Forgets the thread's history (and the thread, when no run of it is running):
    /// it leaves the owner's list. Whether the store held the thread.
    fn forget_thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, bool>;
}

/// A whole store: every role, as the server's routes hold it (`Arc<dyn RunStore>`).
/// See the [module docs](self).
///
/// It has no methods of its own: implement [`RunLog`], [`Leases`] and [`ThreadIndex`],
/// and the blanket implementation makes the type a `RunStore`. Every role's methods
/// are callable on a `dyn RunStore`. A role added later joins this list of supertraits
/// and the blanket implementation's bounds.
pub trait RunStore: RunLog + Leases + ThreadIndex + InterruptLedger {}

impl<T: RunLog + Leases + ThreadIndex + InterruptLedger> RunStore for T {}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
