//! [`InMemoryRunStore`]: run logs in this process's memory, bounded.
//!
//! Every choice among many entries reads an ordered index, never the whole map:
//!
//! * an owner's list: `(last_run_ms, key)` sets per owner, per owner and agent (the
//!   agent of the thread's latest run), each whole and without the archived threads; a
//!   page merges the heads of the sets its filters name from the cursor on and builds
//!   the summaries of the page alone, O(limit + log n);
//! * the threads no run of which is running, by last use: the longest idle is evicted
//!   at the thread cap or the byte cap, and those idle past their time expire (before
//!   each list, and in the sweep), each O(log n);
//! * ended runs, by end: retention and the byte cap drop the first ended.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;

use super::{
    now_ms, Batch, CancelOutcome, Created, Fence, Heartbeat, InMemoryLedger, InterruptKey,
    InterruptLedger, Leases, LedgerEntry, LiveRun, NewRun, RunKey, RunLimits, RunLog, RunRecord,
    RunStatus, RunStoreError, RunStoreFuture, ThreadEntry, ThreadIndex, ThreadKey, ThreadQuery,
    ThreadRecord, ThreadSummary, ThreadUpdate,
};

mod index;

use index::{enidle, list, page, summary, unidle, unlist, Idle, Lists};

/// What one kept event costs besides its JSON: its handle in the run's log and its
/// allocation's header and rounding. Measured as 41–53 bytes per event for events of 30
/// to 300 bytes (resident memory over 1,000,000 events, glibc); counted as 56.
pub const EVENT_OVERHEAD: usize = 56;

/// What one kept run costs besides its events and the text of its record (its ids,
/// agent, body hash, replica): its record and log in the store's map (at the map's load),
/// its key, its wake-up channel, its place in the index of ended runs, its log's spare
/// room and the allocations' headers and rounding. Measured as about 1,500 bytes per
/// run (resident memory over 40,000 finished runs of six events, glibc; the test
/// `run_store_memory` holds the count within 1.5x of it); counted as 1,536.
pub const RUN_OVERHEAD: usize = 1_536;

/// What a run's record costs kept, besides its events.
fn run_cost(r: &RunRecord) -> usize {
    RUN_OVERHEAD
        + r.run_id.len()
        + r.thread_id.len()
        + r.agent.len()
        + r.body_hash.len()
        + r.owner_replica.len()
}

/// What `e` costs kept.
fn cost(e: &Bytes) -> usize {
    e.len() + EVENT_OVERHEAD
}

/// The limits the store keeps, in its own units (a count beyond this process's address
/// space is no bound).
#[derive(Debug, Clone, Copy)]
struct Caps {
    max_events_per_run: usize,
    max_bytes_per_run: usize,
    max_total_bytes: usize,
    max_threads: usize,
    max_history_events: usize,
}

impl Caps {
    fn of(limits: &RunLimits) -> Self {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Caps {
            max_events_per_run: size(limits.max_events_per_run),
            max_bytes_per_run: size(limits.max_bytes_per_run),
            max_total_bytes: size(limits.max_total_bytes),
            max_threads: size(limits.max_threads),
            max_history_events: size(limits.max_history_events),
        }
    }
}

/// What a history entry costs kept: its text, its message ids and their bookkeeping.
fn entry_cost(e: &ThreadEntry) -> usize {
    e.events.len() + EVENT_OVERHEAD + e.message_ids.iter().map(|i| i.len() + 48).sum::<usize>()
}

/// Run logs kept in memory: the default [`RunStore`](super::RunStore), for one process. Bounded by
/// [`RunLimits`]; a restart loses every run. Leases never expire here (the producer
/// lives and dies with the store).
#[derive(Debug)]
pub struct InMemoryRunStore {
    limits: RunLimits,
    caps: Caps,
    inner: Mutex<Inner>,
    /// The interrupt ledger: as many entries as threads, an eighth of the bytes.
    ledger: InMemoryLedger,
}

#[derive(Debug, Default)]
struct Inner {
    runs: HashMap<RunKey, Log>,
    threads: HashMap<ThreadKey, Thread>,
    /// Each owner's listed threads (those with an ended run), by scope, in the list's
    /// order read backwards: `(last_run_ms, key)`, with an index per filter.
    lists: Lists,
    /// The threads no run of which is running, the longest idle first: what eviction
    /// and expiry take.
    idle: Idle,
    /// Ended runs, the first ended first: what retention and the byte cap take.
    ended: BTreeSet<(Instant, RunKey)>,
    total_bytes: usize,
    /// Index entries the thread lists and thread evictions have read (tests only).
    #[cfg(test)]
    touched: usize,
    /// When finished runs past their retention were last dropped.
    last_sweep: Option<Instant>,
}

#[derive(Debug)]
struct Log {
    record: RunRecord,
    fence: Fence,
    /// Events from seq `record.oldest` on.
    events: std::collections::VecDeque<Bytes>,
    /// What its events cost kept.
    bytes: usize,
    /// What the run costs kept besides its events ([`run_cost`]).
    base: usize,
    ended_at: Option<Instant>,
    head: watch::Sender<u64>,
}

#[derive(Debug)]
struct Thread {
    thread_id: String,
    agent: String,
    /// When its first and last runs ended (ms since the epoch), once one has.
    created_ms: Option<u64>,
    updated_ms: u64,
    last_run_ms: u64,
    name: Option<String>,
    archived: bool,
    history: VecDeque<ThreadEntry>,
    history_events: usize,
    /// Shared with the records read while no run ends (copied on write).
    known_ids: std::sync::Arc<HashSet<String>>,
    live: Option<LiveRun>,
    /// Its latest run: its log goes when the next one joins.
    last: Option<RunKey>,
    bytes: usize,
    used: Instant,
}

impl Thread {
    fn idle(&self) -> bool {
        self.live.is_none()
    }
}

impl InMemoryRunStore {
    /// An empty store with these limits.
    pub fn new(limits: RunLimits) -> Self {
        InMemoryRunStore {
            caps: Caps::of(&limits),
            ledger: InMemoryLedger::new(
                usize::try_from(limits.max_threads).unwrap_or(usize::MAX),
                usize::try_from(limits.max_total_bytes / 8).unwrap_or(usize::MAX),
            ),
            limits,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &RunLimits {
        &self.limits
    }

    /// How many runs are held.
    pub fn len(&self) -> usize {
        self.lock().runs.len()
    }

    /// Whether no run is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held, counted as [`RunLimits::max_total_bytes`] counts them.
    pub fn bytes(&self) -> usize {
        self.lock().total_bytes
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops finished runs past their retention and threads past their idle time;
    /// then, while over the byte cap, finished runs, the first ended first, and then
    /// the threads idle the longest. Each from its ordered index: what it drops, not
    /// what it keeps.
    fn sweep(&self, inner: &mut Inner, incoming: usize) {
        let now = Instant::now();
        let retention = self.limits.retention;
        // Retention is applied at most once a second (or a tenth of the retention),
        // unless the byte cap needs room.
        let due = inner
            .last_sweep
            .is_none_or(|t| now.duration_since(t) >= (retention / 10).min(Duration::from_secs(1)));
        let over = inner.total_bytes + incoming > self.caps.max_total_bytes;
        if !due && !over {
            return;
        }
        inner.last_sweep = Some(now);
        while let Some((at, _)) = inner.ended.first() {
            if now.duration_since(*at) < retention {
                break;
            }
            Self::drop_oldest_ended(inner);
        }
        Self::expire_threads(inner, now, self.limits.thread_idle_ttl);
        while inner.total_bytes + incoming > self.caps.max_total_bytes {
            if !Self::drop_oldest_ended(inner) {
                break;
            }
        }
        while inner.total_bytes + incoming > self.caps.max_total_bytes {
            if !Self::evict_idle_thread(inner) {
                break;
            }
        }
    }

    /// Drops the finished run that ended first; `false` when none is held.
    fn drop_oldest_ended(inner: &mut Inner) -> bool {
        let Some((_, key)) = inner.ended.pop_first() else {
            return false;
        };
        if let Some(log) = inner.runs.remove(&key) {
            inner.total_bytes -= log.bytes + log.base;
        }
        true
    }

    /// Forgets the threads idle for `ttl` or longer.
    fn expire_threads(inner: &mut Inner, now: Instant, ttl: Duration) {
        while let Some((used, _)) = inner.idle.first() {
            if now.duration_since(*used) < ttl {
                break;
            }
            Self::evict_idle_thread(inner);
        }
    }

    /// Forgets the thread idle the longest; `false` when every thread is running.
    fn evict_idle_thread(inner: &mut Inner) -> bool {
        let Some((_, key)) = inner.idle.pop_first() else {
            return false;
        };
        #[cfg(test)]
        {
            inner.touched += 1;
        }
        if let Some(t) = inner.threads.remove(&key) {
            inner.total_bytes -= t.bytes;
            unlist(&mut inner.lists, &key, &t);
        }
        true
    }

    /// Makes `key` the live run of `thread`, or says which run is.
    fn join_thread(
        &self,
        inner: &mut Inner,
        thread: &ThreadKey,
        key: &RunKey,
        run: &NewRun,
    ) -> Result<(), RunStoreError> {
        let run_id = run.run_id.as_str();
        let now = Instant::now();
        if let Some(t) = inner.threads.get_mut(thread) {
            if let Some(live) = &t.live {
                return Err(RunStoreError::Busy {
                    run_id: live.run_id.clone(),
                });
            }
            unidle(&mut inner.idle, thread, t);
            // A listed thread is listed under the agent of its latest run.
            unlist(&mut inner.lists, thread, t);
            t.live = Some(LiveRun {
                key: key.clone(),
                run_id: run_id.to_owned(),
            });
            t.agent.clone_from(&run.agent);
            t.used = now;
            list(&mut inner.lists, thread, t);
            // The previous run is in the history: its log is no longer read.
            if let Some(prev) = t.last.replace(key.clone()) {
                if inner
                    .runs
                    .get(&prev)
                    .is_some_and(|l| l.record.status.is_terminal())
                {
                    if let Some(log) = inner.runs.remove(&prev) {
                        inner.total_bytes -= log.bytes + log.base;
                        if let Some(at) = log.ended_at {
                            inner.ended.remove(&(at, prev));
                        }
                    }
                }
            }
            return Ok(());
        }
        if inner.threads.len() >= self.caps.max_threads && !Self::evict_idle_thread(inner) {
            return Err(RunStoreError::Full(format!(
                "{} threads held, every one running (limit {})",
                inner.threads.len(),
                self.caps.max_threads
            )));
        }
        inner.threads.insert(
            thread.clone(),
            Thread {
                thread_id: run.thread_id.clone(),
                agent: run.agent.clone(),
                created_ms: None,
                updated_ms: 0,
                last_run_ms: 0,
                name: None,
                archived: false,
                history: VecDeque::new(),
                history_events: 0,
                known_ids: Default::default(),
                live: Some(LiveRun {
                    key: key.clone(),
                    run_id: run_id.to_owned(),
                }),
                last: Some(key.clone()),
                bytes: 0,
                used: now,
            },
        );
        Ok(())
    }

    /// Frees `thread` of its live run `key`, adding `entry` to its history.
    fn leave_thread(
        &self,
        inner: &mut Inner,
        thread: &ThreadKey,
        key: &RunKey,
        entry: Option<ThreadEntry>,
    ) {
        let Some(t) = inner.threads.get_mut(thread) else {
            return;
        };
        unidle(&mut inner.idle, thread, t);
        if t.live.as_ref().is_some_and(|l| &l.key == key) {
            t.live = None;
        }
        t.used = Instant::now();
        enidle(&mut inner.idle, thread, t);
        let Some(mut entry) = entry else { return };
        unlist(&mut inner.lists, thread, t);
        let now = now_ms();
        t.created_ms.get_or_insert(now);
        t.updated_ms = now;
        t.last_run_ms = now;
        let cost = entry_cost(&entry);
        // The ids live in the thread's set, not in each entry.
        std::sync::Arc::make_mut(&mut t.known_ids).extend(entry.message_ids.drain(..));
        t.history_events += entry.count;
        t.bytes += cost;
        inner.total_bytes += cost;
        t.history.push_back(entry);
        list(&mut inner.lists, thread, t);
        while t.history_events > self.caps.max_history_events && t.history.len() > 1 {
            if let Some(old) = t.history.pop_front() {
                t.history_events -= old.count;
                let c = entry_cost(&old);
                t.bytes -= c;
                inner.total_bytes -= c;
            }
        }
    }

    fn do_create(&self, run: NewRun) -> Result<Created, RunStoreError> {
        let mut inner = self.lock();
        if let Some(log) = inner.runs.get(&run.key) {
            return Ok(Created::Existing(log.record.clone()));
        }
        self.sweep(&mut inner, 0);
        if inner.total_bytes >= self.caps.max_total_bytes {
            return Err(RunStoreError::Full(format!(
                "{} bytes of running runs held (limit {})",
                inner.total_bytes, self.caps.max_total_bytes
            )));
        }
        if let Some(thread) = &run.thread {
            self.join_thread(&mut inner, thread, &run.key, &run)?;
        }
        let fence = Fence::random();
        let record = RunRecord {
            run_id: run.run_id,
            thread_id: run.thread_id,
            agent: run.agent,
            status: RunStatus::Running,
            head: 0,
            oldest: 1,
            body_hash: run.body_hash,
            owner_replica: run.replica,
            cancel_requested: false,
            created_at_ms: now_ms(),
            finished_at_ms: None,
            thread: run.thread,
        };
        let base = run_cost(&record);
        inner.total_bytes += base;
        inner.runs.insert(
            run.key,
            Log {
                record,
                fence,
                events: Default::default(),
                bytes: 0,
                base,
                ended_at: None,
                head: watch::Sender::new(0),
            },
        );
        Ok(Created::New(fence))
    }

    fn do_append(
        &self,
        key: &RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
        entry: Option<ThreadEntry>,
    ) -> Result<(), RunStoreError> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let log = inner.runs.get_mut(key).ok_or(RunStoreError::NotFound)?;
        if log.fence != fence {
            return Err(RunStoreError::Fenced);
        }
        if log.record.status.is_terminal() {
            return Err(RunStoreError::Ended);
        }
        if first != log.record.head + 1 {
            return Err(RunStoreError::Conflict {
                head: log.record.head,
            });
        }
        if entry.is_some() && log.record.thread.is_none() {
            return Err(RunStoreError::NotFound);
        }
        let added: usize = events.iter().map(cost).sum();
        log.record.head += events.len() as u64;
        log.events.extend(events);
        log.bytes += added;
        inner.total_bytes += added;
        // Per-run caps: the oldest events go (a re-attach from before them gets 410).
        while log.events.len() > self.caps.max_events_per_run
            || (log.bytes > self.caps.max_bytes_per_run && log.events.len() > 1)
        {
            if let Some(e) = log.events.pop_front() {
                log.bytes -= cost(&e);
                inner.total_bytes -= cost(&e);
                log.record.oldest += 1;
            }
        }
        if let Some(status) = terminal {
            let now = Instant::now();
            log.record.status = status;
            log.record.finished_at_ms = Some(now_ms());
            log.ended_at = Some(now);
            inner.ended.insert((now, key.clone()));
        }
        log.head.send_replace(log.record.head);
        if terminal.is_some() {
            if let Some(thread) = log.record.thread.clone() {
                self.leave_thread(inner, &thread, key, entry);
            }
        }
        Ok(())
    }

    fn do_read(&self, key: &RunKey, after: u64, limit: usize) -> Result<Batch, RunStoreError> {
        let inner = self.lock();
        let log = inner.runs.get(key).ok_or(RunStoreError::NotFound)?;
        let r = &log.record;
        if after + 1 < r.oldest && after < r.head {
            return Err(RunStoreError::Gone {
                oldest: r.oldest,
                head: r.head,
            });
        }
        let start = (after + 1).saturating_sub(r.oldest) as usize;
        let events: Vec<Bytes> = log.events.iter().skip(start).take(limit).cloned().collect();
        Ok(Batch {
            first: after + 1,
            events,
            head: r.head,
            status: r.status,
        })
    }

    fn watcher(&self, key: &RunKey, after: u64) -> Option<watch::Receiver<u64>> {
        let inner = self.lock();
        let log = inner.runs.get(key)?;
        if log.record.head > after || log.record.status.is_terminal() {
            return None;
        }
        Some(log.head.subscribe())
    }
}

impl RunLog for InMemoryRunStore {
    fn create(&self, run: NewRun) -> RunStoreFuture<'_, Created> {
        Box::pin(std::future::ready(self.do_create(run)))
    }

    fn append<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
    ) -> RunStoreFuture<'a, ()> {
        Box::pin(std::future::ready(
            self.do_append(key, fence, first, events, terminal, None),
        ))
    }

    fn read<'a>(&'a self, key: &'a RunKey, after: u64, limit: usize) -> RunStoreFuture<'a, Batch> {
        Box::pin(std::future::ready(self.do_read(key, after, limit)))
    }

    fn wait<'a>(
        &'a self,
        key: &'a RunKey,
        after: u64,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let rx = self.watcher(key, after);
        Box::pin(async move {
            if let Some(mut rx) = rx {
                let _ = tokio::time::timeout(timeout, rx.changed()).await;
            }
        })
    }

    fn record<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, Option<RunRecord>> {
        let r = self.lock().runs.get(key).map(|l| l.record.clone());
        Box::pin(std::future::ready(Ok(r)))
    }
}

impl ThreadIndex for InMemoryRunStore {
    fn end_thread_run<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        status: RunStatus,
        entry: ThreadEntry,
    ) -> RunStoreFuture<'a, ()> {
        Box::pin(std::future::ready(self.do_append(
            key,
            fence,
            first,
            events,
            Some(status),
            Some(entry),
        )))
    }

    fn list_threads<'a>(
        &'a self,
        scope: &'a str,
        query: &'a ThreadQuery,
    ) -> RunStoreFuture<'a, Vec<ThreadSummary>> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        Self::expire_threads(inner, Instant::now(), self.limits.thread_idle_ttl);
        let (out, _touched) = page(inner, scope, query);
        #[cfg(test)]
        {
            inner.touched += _touched;
        }
        Box::pin(std::future::ready(Ok(out)))
    }

    fn update_thread<'a>(
        &'a self,
        key: &'a ThreadKey,
        update: ThreadUpdate,
    ) -> RunStoreFuture<'a, Option<ThreadSummary>> {
        let mut guard = self.lock();
        let Inner {
            threads,
            lists,
            idle,
            ..
        } = &mut *guard;
        let r = threads.get_mut(key).and_then(|t| {
            t.created_ms?;
            unidle(idle, key, t);
            unlist(lists, key, t);
            if let Some(name) = update.name {
                t.name = Some(name);
            }
            if let Some(archived) = update.archived {
                t.archived = archived;
            }
            t.updated_ms = now_ms();
            t.used = Instant::now();
            list(lists, key, t);
            enidle(idle, key, t);
            summary(key, t)
        });
        Box::pin(std::future::ready(Ok(r)))
    }

    fn forget_thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, bool> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let held = match inner.threads.get_mut(key) {
            None => false,
            Some(t) if t.live.is_some() => {
                // Its running run stays; its history and place in the list go.
                unlist(&mut inner.lists, key, t);
                inner.total_bytes -= t.bytes;
                t.bytes = 0;
                t.history.clear();
                t.history_events = 0;
                t.known_ids = Default::default();
                t.created_ms = None;
                true
            }
            Some(_) => {
                if let Some(t) = inner.threads.remove(key) {
                    inner.total_bytes -= t.bytes;
                    unlist(&mut inner.lists, key, &t);
                    unidle(&mut inner.idle, key, &t);
                }
                true
            }
        };
        Box::pin(std::future::ready(Ok(held)))
    }

    fn thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, Option<ThreadRecord>> {
        let mut guard = self.lock();
        let Inner { threads, idle, .. } = &mut *guard;
        let r = threads.get_mut(key).map(|t| {
            unidle(idle, key, t);
            t.used = Instant::now();
            enidle(idle, key, t);
            ThreadRecord {
                history: t.history.iter().cloned().collect(),
                live: t.live.clone(),
                known_message_ids: t.known_ids.clone(),
            }
        });
        Box::pin(std::future::ready(Ok(r)))
    }
}

/// A single process: every lease is held by this process (the provided
/// [`Leases::expired_leases`] and [`Leases::take_over`]).
impl Leases for InMemoryRunStore {
    fn heartbeat<'a>(&'a self, key: &'a RunKey, fence: Fence) -> RunStoreFuture<'a, Heartbeat> {
        let r = match self.lock().runs.get(key) {
            None => Err(RunStoreError::NotFound),
            Some(l) if l.fence != fence => Err(RunStoreError::Fenced),
            Some(l) => Ok(Heartbeat {
                cancel_requested: l.record.cancel_requested,
            }),
        };
        Box::pin(std::future::ready(r))
    }

    fn request_cancel<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, CancelOutcome> {
        let r = match self.lock().runs.get_mut(key) {
            None => Err(RunStoreError::NotFound),
            Some(l) if l.record.status.is_terminal() => Ok(CancelOutcome::AlreadyEnded),
            Some(l) => {
                l.record.cancel_requested = true;
                // Wake whoever waits on the run (its producer watches for the flag).
                l.head.send_modify(|_| {});
                Ok(CancelOutcome::Requested)
            }
        };
        Box::pin(std::future::ready(r))
    }
}

impl InterruptLedger for InMemoryRunStore {
    fn load<'a>(&'a self, key: &'a InterruptKey) -> RunStoreFuture<'a, Option<LedgerEntry>> {
        self.ledger.load(key)
    }

    fn swap<'a>(
        &'a self,
        key: &'a InterruptKey,
        expected: Option<u64>,
        new: LedgerEntry,
        ttl: Duration,
    ) -> RunStoreFuture<'a, bool> {
        self.ledger.swap(key, expected, new, ttl)
    }
}

#[cfg(test)]
impl InMemoryRunStore {
    /// Index entries the thread lists and evictions have read so far.
    fn touched(&self) -> usize {
        self.lock().touched
    }
}

#[cfg(test)]
mod tests;
