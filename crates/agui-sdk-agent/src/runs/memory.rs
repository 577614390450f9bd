//! [`InMemoryRunStore`]: run logs in this process's memory, bounded.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;

use super::{
    now_ms, Batch, CancelOutcome, Created, Fence, Heartbeat, LiveRun, NewRun, RunKey, RunRecord,
    RunStatus, RunStore, RunStoreError, RunStoreFuture, ThreadEntry, ThreadKey, ThreadQuery,
    ThreadRecord, ThreadSummary, ThreadUpdate,
};

/// Bounds of an [`InMemoryRunStore`]. Every field has a documented default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunLimits {
    /// How long a finished run stays readable (default 15 minutes).
    pub retention: Duration,
    /// Most events kept per run (default 200,000): beyond it the oldest are dropped, and
    /// a re-attach from before them gets `410`.
    pub max_events_per_run: usize,
    /// Most bytes kept per run (default 64 MiB), likewise. Bytes are counted at what an
    /// event costs in memory: its JSON and [`EVENT_OVERHEAD`] bytes of bookkeeping.
    pub max_bytes_per_run: usize,
    /// Most bytes in the whole store (default 512 MiB), counted as above: beyond it
    /// finished runs are evicted, oldest first; when only running runs remain, new runs
    /// are refused. Threads' histories count too; past the cap, after finished runs,
    /// the threads idle the longest go.
    pub max_total_bytes: usize,
    /// Most threads held (default 10,000). A new thread beyond it evicts the thread idle
    /// the longest; when every thread has a running run, the new run is refused.
    pub max_threads: usize,
    /// A thread with no run for this long is forgotten (default 1 hour).
    pub thread_idle_ttl: Duration,
    /// Most compacted events kept in one thread's history (default 10,000); beyond it
    /// the oldest runs are forgotten (the last one is always kept).
    pub max_history_events: usize,
}

/// What one kept event costs besides its JSON: its handle in the run's log and its
/// allocation's header and rounding. Measured as 41–53 bytes per event for events of 30
/// to 300 bytes (resident memory over 1,000,000 events, glibc); counted as 56.
pub const EVENT_OVERHEAD: usize = 56;

/// What `e` costs kept.
fn cost(e: &Bytes) -> usize {
    e.len() + EVENT_OVERHEAD
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            retention: Duration::from_secs(15 * 60),
            max_events_per_run: 200_000,
            max_bytes_per_run: 64 << 20,
            max_total_bytes: 512 << 20,
            max_threads: 10_000,
            thread_idle_ttl: Duration::from_secs(3600),
            max_history_events: 10_000,
        }
    }
}

impl RunLimits {
    /// Sets [`retention`](Self::retention).
    pub fn retention(mut self, d: Duration) -> Self {
        self.retention = d;
        self
    }

    /// Sets [`max_events_per_run`](Self::max_events_per_run).
    pub fn max_events_per_run(mut self, n: usize) -> Self {
        self.max_events_per_run = n.max(1);
        self
    }

    /// Sets [`max_bytes_per_run`](Self::max_bytes_per_run).
    pub fn max_bytes_per_run(mut self, n: usize) -> Self {
        self.max_bytes_per_run = n.max(1);
        self
    }

    /// Sets [`max_total_bytes`](Self::max_total_bytes).
    pub fn max_total_bytes(mut self, n: usize) -> Self {
        self.max_total_bytes = n;
        self
    }

    /// Sets [`max_threads`](Self::max_threads).
    pub fn max_threads(mut self, n: usize) -> Self {
        self.max_threads = n.max(1);
        self
    }

    /// Sets [`thread_idle_ttl`](Self::thread_idle_ttl).
    pub fn thread_idle_ttl(mut self, d: Duration) -> Self {
        self.thread_idle_ttl = d;
        self
    }

    /// Sets [`max_history_events`](Self::max_history_events).
    pub fn max_history_events(mut self, n: usize) -> Self {
        self.max_history_events = n.max(1);
        self
    }
}

/// The owners' thread lists: see [`Inner::lists`].
type Lists = HashMap<String, BTreeSet<(u64, ThreadKey)>>;

/// Takes a thread out of its owner's list, if it is listed.
fn unlist(lists: &mut Lists, key: &ThreadKey, t: &Thread) {
    if t.created_ms.is_none() {
        return;
    }
    if let Some(set) = lists.get_mut(key.scope()) {
        set.remove(&(t.last_run_ms, key.clone()));
        if set.is_empty() {
            lists.remove(key.scope());
        }
    }
}

/// Puts a thread in its owner's list at its last run's time.
fn list(lists: &mut Lists, key: &ThreadKey, t: &Thread) {
    if t.created_ms.is_none() {
        return;
    }
    let entry = (t.last_run_ms, key.clone());
    match lists.get_mut(key.scope()) {
        Some(set) => {
            set.insert(entry);
        }
        None => {
            lists.insert(key.scope().to_owned(), BTreeSet::from([entry]));
        }
    }
}

/// A listed thread's summary; `None` before its first run ended.
fn summary(key: &ThreadKey, t: &Thread) -> Option<ThreadSummary> {
    Some(ThreadSummary {
        key: key.clone(),
        thread_id: t.thread_id.clone(),
        agent: t.agent.clone(),
        created_at_ms: t.created_ms?,
        updated_at_ms: t.updated_ms,
        last_run_at_ms: t.last_run_ms,
        name: t.name.clone(),
        archived: t.archived,
    })
}

/// What a history entry costs kept: its text, its message ids and their bookkeeping.
fn entry_cost(e: &ThreadEntry) -> usize {
    e.events.len() + EVENT_OVERHEAD + e.message_ids.iter().map(|i| i.len() + 48).sum::<usize>()
}

/// Run logs kept in memory: the default [`RunStore`], for one process. Bounded by
/// [`RunLimits`]; a restart loses every run. Leases never expire here (the producer
/// lives and dies with the store).
#[derive(Debug)]
pub struct InMemoryRunStore {
    limits: RunLimits,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    runs: HashMap<RunKey, Log>,
    threads: HashMap<ThreadKey, Thread>,
    /// Each owner's listed threads (those with an ended run), by scope, in the list's
    /// order read backwards: `(last_run_ms, key)`.
    lists: Lists,
    total_bytes: usize,
    /// When finished runs past their retention were last dropped.
    last_sweep: Option<Instant>,
}

#[derive(Debug)]
struct Log {
    record: RunRecord,
    fence: Fence,
    /// Events from seq `record.oldest` on.
    events: std::collections::VecDeque<Bytes>,
    bytes: usize,
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

    /// Drops finished runs past their retention; then, while over the byte cap,
    /// finished runs, oldest first.
    fn sweep(&self, inner: &mut Inner, incoming: usize) {
        let now = Instant::now();
        let retention = self.limits.retention;
        // The walk over every run happens at most once a second (or a tenth of the
        // retention), unless the byte cap needs room.
        let due = inner
            .last_sweep
            .is_none_or(|t| now.duration_since(t) >= (retention / 10).min(Duration::from_secs(1)));
        let over = inner.total_bytes + incoming > self.limits.max_total_bytes;
        if !due && !over {
            return;
        }
        inner.last_sweep = Some(now);
        let mut freed = 0;
        inner.runs.retain(|_, log| {
            let keep = log
                .ended_at
                .is_none_or(|t| now.duration_since(t) < retention);
            if !keep {
                freed += log.bytes;
            }
            keep
        });
        let idle_ttl = self.limits.thread_idle_ttl;
        let Inner { threads, lists, .. } = inner;
        threads.retain(|k, t| {
            let keep = !t.idle() || now.duration_since(t.used) < idle_ttl;
            if !keep {
                freed += t.bytes;
                unlist(lists, k, t);
            }
            keep
        });
        inner.total_bytes -= freed;
        while inner.total_bytes + incoming > self.limits.max_total_bytes {
            let oldest = inner
                .runs
                .iter()
                .filter_map(|(k, l)| l.ended_at.map(|t| (t, k.clone())))
                .min();
            let Some((_, key)) = oldest else { break };
            if let Some(log) = inner.runs.remove(&key) {
                inner.total_bytes -= log.bytes;
            }
        }
        while inner.total_bytes + incoming > self.limits.max_total_bytes {
            if !Self::evict_idle_thread(inner) {
                break;
            }
        }
    }

    /// Forgets the thread idle the longest; `false` when every thread is running.
    fn evict_idle_thread(inner: &mut Inner) -> bool {
        let oldest = inner
            .threads
            .iter()
            .filter(|(_, t)| t.idle())
            .map(|(k, t)| (t.used, k.clone()))
            .min();
        let Some((_, key)) = oldest else {
            return false;
        };
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
            t.live = Some(LiveRun {
                key: key.clone(),
                run_id: run_id.to_owned(),
            });
            t.agent.clone_from(&run.agent);
            t.used = now;
            // The previous run is in the history: its log is no longer read.
            if let Some(prev) = t.last.replace(key.clone()) {
                if inner
                    .runs
                    .get(&prev)
                    .is_some_and(|l| l.record.status.is_terminal())
                {
                    if let Some(log) = inner.runs.remove(&prev) {
                        inner.total_bytes -= log.bytes;
                    }
                }
            }
            return Ok(());
        }
        if inner.threads.len() >= self.limits.max_threads && !Self::evict_idle_thread(inner) {
            return Err(RunStoreError::Full(format!(
                "{} threads held, every one running (limit {})",
                inner.threads.len(),
                self.limits.max_threads
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
        if t.live.as_ref().is_some_and(|l| &l.key == key) {
            t.live = None;
        }
        t.used = Instant::now();
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
        while t.history_events > self.limits.max_history_events && t.history.len() > 1 {
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
        if inner.total_bytes >= self.limits.max_total_bytes {
            return Err(RunStoreError::Full(format!(
                "{} bytes of running runs held (limit {})",
                inner.total_bytes, self.limits.max_total_bytes
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
        inner.runs.insert(
            run.key,
            Log {
                record,
                fence,
                events: Default::default(),
                bytes: 0,
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
        while log.events.len() > self.limits.max_events_per_run
            || (log.bytes > self.limits.max_bytes_per_run && log.events.len() > 1)
        {
            if let Some(e) = log.events.pop_front() {
                log.bytes -= cost(&e);
                inner.total_bytes -= cost(&e);
                log.record.oldest += 1;
            }
        }
        if let Some(status) = terminal {
            log.record.status = status;
            log.record.finished_at_ms = Some(now_ms());
            log.ended_at = Some(Instant::now());
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

impl RunStore for InMemoryRunStore {
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
        let inner = self.lock();
        let mut out = Vec::new();
        if let Some(set) = inner.lists.get(scope) {
            // The set in its order is the list read backwards: the newest last.
            let from: Box<dyn Iterator<Item = &(u64, ThreadKey)>> = match &query.after {
                Some((ms, key)) => Box::new(set.range(..(*ms, key.clone())).rev()),
                None => Box::new(set.iter().rev()),
            };
            out = from
                .filter_map(|(_, k)| summary(k, inner.threads.get(k)?))
                .filter(|t| query.admits(t))
                .take(query.limit)
                .collect();
        }
        Box::pin(std::future::ready(Ok(out)))
    }

    fn update_thread<'a>(
        &'a self,
        key: &'a ThreadKey,
        update: ThreadUpdate,
    ) -> RunStoreFuture<'a, Option<ThreadSummary>> {
        let mut inner = self.lock();
        let r = inner.threads.get_mut(key).and_then(|t| {
            t.created_ms?;
            if let Some(name) = update.name {
                t.name = Some(name);
            }
            if let Some(archived) = update.archived {
                t.archived = archived;
            }
            t.updated_ms = now_ms();
            t.used = Instant::now();
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
                }
                true
            }
        };
        Box::pin(std::future::ready(Ok(held)))
    }

    fn thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, Option<ThreadRecord>> {
        let mut inner = self.lock();
        let r = inner.threads.get_mut(key).map(|t| {
            t.used = Instant::now();
            ThreadRecord {
                history: t.history.iter().cloned().collect(),
                live: t.live.clone(),
                known_message_ids: t.known_ids.clone(),
            }
        });
        Box::pin(std::future::ready(Ok(r)))
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

    fn expired_leases(&self, _limit: usize) -> RunStoreFuture<'_, Vec<RunKey>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn take_over<'a>(
        &'a self,
        _key: &'a RunKey,
        _replica: &'a str,
    ) -> RunStoreFuture<'a, Option<(Fence, u64)>> {
        Box::pin(std::future::ready(Ok(None)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::{Created, NewRun, RunStore};

    fn new_run(key: &RunKey, id: &str) -> NewRun {
        NewRun {
            key: key.clone(),
            run_id: id.into(),
            thread_id: "t".into(),
            agent: "a".into(),
            body_hash: String::new(),
            replica: "r".into(),
            lease: Duration::from_secs(60),
            thread: None,
        }
    }

    #[tokio::test]
    async fn events_are_counted_at_what_they_cost_kept() {
        // Room for ten 100-byte events counted with their bookkeeping, not for the 15
        // that their JSON alone would let in.
        let per_event = 100 + EVENT_OVERHEAD;
        let store = InMemoryRunStore::new(RunLimits::default().max_bytes_per_run(10 * per_event));
        let key = RunKey::derive("o", "a", "r1");
        let Created::New(fence) = store.create(new_run(&key, "r1")).await.unwrap() else {
            panic!("a new run")
        };
        let events: Vec<Bytes> = (0..15).map(|_| Bytes::from(vec![b'x'; 100])).collect();
        store.append(&key, fence, 1, events, None).await.unwrap();
        assert_eq!(store.bytes(), 10 * per_event);
        let record = store.record(&key).await.unwrap().unwrap();
        assert_eq!(
            (record.oldest, record.head),
            (6, 15),
            "the five oldest were dropped"
        );
    }
}
