//! [`InMemoryThreadStore`]: threads in this process's memory, bounded.

use std::collections::{HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agui_core::semantics::Compactor;
use agui_core::Event;
use tokio::sync::watch;

use super::{
    recorded_message_ids, RunBegun, RunPage, StoreError, StoreFuture, ThreadSnapshot, ThreadStore,
};

/// Bounds of an [`InMemoryThreadStore`]. Every field has a documented default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ThreadLimits {
    /// Most threads held (default 10,000). A new thread beyond it evicts the thread
    /// idle the longest; when every thread is running, the new run is refused.
    pub max_threads: usize,
    /// A thread with no run for this long is evicted (default 1 hour).
    pub idle_ttl: Duration,
    /// Most compacted events kept in one thread's history (default 10,000); beyond
    /// it, the oldest runs are forgotten.
    pub max_history_events: usize,
    /// Most events of one live run (default 100,000); the run is ended when it reaches
    /// the limit (the batch that ends a run is always taken).
    pub max_run_events: usize,
    /// Most bytes all threads keep together (default 256 MiB): histories, the inputs
    /// their runs recorded, and live or last runs, each event counted at about what it
    /// costs kept. Past it the threads idle the longest are evicted; when none is idle, a
    /// live run's next batch is refused ([`StoreError::OverBudget`]: the run ends with
    /// `RUN_ERROR`) and so is a new thread (the batch that ends a run is always taken).
    pub max_total_bytes: usize,
}

impl Default for ThreadLimits {
    fn default() -> Self {
        ThreadLimits {
            max_threads: 10_000,
            idle_ttl: Duration::from_secs(3600),
            max_history_events: 10_000,
            max_run_events: 100_000,
            max_total_bytes: 256 << 20,
        }
    }
}

impl ThreadLimits {
    /// Sets [`max_threads`](Self::max_threads).
    pub fn max_threads(mut self, n: usize) -> Self {
        self.max_threads = n.max(1);
        self
    }

    /// Sets [`idle_ttl`](Self::idle_ttl).
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.idle_ttl = ttl;
        self
    }

    /// Sets [`max_history_events`](Self::max_history_events).
    pub fn max_history_events(mut self, n: usize) -> Self {
        self.max_history_events = n;
        self
    }

    /// Sets [`max_total_bytes`](Self::max_total_bytes).
    pub fn max_total_bytes(mut self, n: usize) -> Self {
        self.max_total_bytes = n;
        self
    }

    /// Sets [`max_run_events`](Self::max_run_events).
    pub fn max_run_events(mut self, n: usize) -> Self {
        self.max_run_events = n.max(1);
        self
    }
}

/// Threads kept in memory: the default [`ThreadStore`]. Bounded by [`ThreadLimits`];
/// nothing survives the process.
///
/// ```
/// # tokio_test_block_on(async {
/// use agui_agent::threads::{InMemoryThreadStore, ThreadLimits, ThreadStore};
/// use agui_agent::agui_core::Event;
///
/// let store = InMemoryThreadStore::new(ThreadLimits::default().max_threads(100));
/// store.begin_run("t1", "r1").await?;
/// store.append("t1", "r1", vec![Event::run_started("t1", "r1")]).await?;
/// store.append("t1", "r1", vec![Event::run_finished("t1", "r1")]).await?;
/// store.end_run("t1", "r1").await?;
/// let thread = store.snapshot("t1").await?.expect("held");
/// assert_eq!(thread.history.len(), 1);
/// assert!(thread.live.is_none());
/// # Ok::<(), agui_agent::threads::StoreError>(())
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug)]
pub struct InMemoryThreadStore {
    limits: ThreadLimits,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    threads: HashMap<String, Thread>,
    last_sweep: Option<Instant>,
    /// What all threads keep, counted by [`kept_size`].
    bytes: usize,
}

/// About what an event costs kept: its structure and its text. The streamed pieces,
/// the most frequent events, are counted from their fields; the others (a run's input,
/// snapshots, tool results) from their JSON.
fn kept_size(e: &Event) -> usize {
    const BASE: usize = std::mem::size_of::<Event>() + 64;
    BASE + match e {
        Event::TextMessageContent(c) => c.delta.len() + c.message_id.len(),
        Event::ReasoningMessageContent(c) => c.delta.len() + c.message_id.len(),
        Event::ToolCallArgs(c) => c.delta.len() + c.tool_call_id.len(),
        Event::TextMessageStart(e) => e.message_id.len() + 16,
        Event::TextMessageEnd(e) => e.message_id.len(),
        Event::ToolCallStart(e) => {
            e.tool_call_id.len()
                + e.tool_call_name.len()
                + e.parent_message_id.as_ref().map_or(0, String::len)
        }
        Event::ToolCallEnd(e) => e.tool_call_id.len(),
        other => other.to_json_string().len(),
    }
}

fn size_of_events(events: &[Event]) -> usize {
    events.iter().map(kept_size).sum()
}

impl Inner {
    /// Removes a thread, and what it kept from the count.
    fn remove(&mut self, thread_id: &str) {
        if let Some(t) = self.threads.remove(thread_id) {
            self.bytes = self.bytes.saturating_sub(t.bytes());
        }
    }

    /// Evicts the threads idle the longest (never `keep`, never a running one) until
    /// `more` bytes fit in `limit`; whether they do.
    fn fit(&mut self, more: usize, limit: usize, keep: &str) -> bool {
        while self.bytes + more > limit {
            let oldest = self
                .threads
                .iter()
                .filter(|(id, t)| *id != keep && !t.running())
                .min_by_key(|(_, t)| t.last_active)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => {
                    tracing::debug!(thread_id = %id, "thread evicted: the store's bytes are full");
                    self.remove(&id);
                }
                None => return false,
            }
        }
        true
    }
}

#[derive(Debug)]
struct Thread {
    history: VecDeque<Arc<[Event]>>,
    /// What each run of `history` keeps, counted by [`kept_size`] once.
    history_sizes: VecDeque<usize>,
    history_events: usize,
    /// What the history keeps, counted by [`kept_size`].
    history_bytes: usize,
    known_ids: HashSet<String>,
    /// The live run, or the last one once ended (until the next begins).
    run: Option<RawRun>,
    last_active: Instant,
    changed: watch::Sender<u64>,
}

#[derive(Debug)]
struct RawRun {
    run_id: String,
    events: Vec<Event>,
    /// What `events` keep, counted by [`kept_size`].
    bytes: usize,
    ended: bool,
}

impl Thread {
    fn new(now: Instant) -> Self {
        Thread {
            history: VecDeque::new(),
            history_sizes: VecDeque::new(),
            history_events: 0,
            history_bytes: 0,
            known_ids: HashSet::new(),
            run: None,
            last_active: now,
            changed: watch::Sender::new(0),
        }
    }

    fn running(&self) -> bool {
        self.run.as_ref().is_some_and(|r| !r.ended)
    }

    /// What the thread keeps: its history and its live or last run.
    fn bytes(&self) -> usize {
        self.history_bytes + self.run.as_ref().map_or(0, |r| r.bytes)
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    fn live_mut(&mut self, thread_id: &str, run_id: &str) -> Result<&mut RawRun, StoreError> {
        match self.run.as_mut() {
            Some(r) if r.run_id == run_id && !r.ended => Ok(r),
            _ => Err(StoreError::NotLive {
                thread_id: thread_id.to_owned(),
                run_id: run_id.to_owned(),
            }),
        }
    }
}

impl InMemoryThreadStore {
    /// An empty store with these limits.
    pub fn new(limits: ThreadLimits) -> Self {
        InMemoryThreadStore {
            limits,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &ThreadLimits {
        &self.limits
    }

    /// How many threads are held.
    pub fn len(&self) -> usize {
        self.lock().threads.len()
    }

    /// Whether no thread is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every mutation is a
        // single step), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Evicts idle threads (at most once per a tenth of the idle time), then, when a
    /// new thread still does not fit, the one idle the longest.
    fn make_room(&self, inner: &mut Inner, now: Instant) -> Result<(), StoreError> {
        let ttl = self.limits.idle_ttl;
        let due = inner
            .last_sweep
            .is_none_or(|t| now.duration_since(t) >= ttl / 10);
        if due {
            inner.last_sweep = Some(now);
            let before = inner.threads.len();
            let mut freed = 0;
            inner.threads.retain(|_, t| {
                let keep = t.running() || now.duration_since(t.last_active) < ttl;
                if !keep {
                    freed += t.bytes();
                }
                keep
            });
            inner.bytes = inner.bytes.saturating_sub(freed);
            let evicted = before - inner.threads.len();
            if evicted > 0 {
                tracing::debug!(evicted, "idle threads evicted");
            }
        }
        if inner.threads.len() < self.limits.max_threads {
            return Ok(());
        }
        let oldest = inner
            .threads
            .iter()
            .filter(|(_, t)| !t.running())
            .min_by_key(|(_, t)| t.last_active)
            .map(|(id, _)| id.clone());
        match oldest {
            Some(id) => {
                tracing::debug!(thread_id = %id, "thread evicted to make room");
                inner.remove(&id);
                Ok(())
            }
            None => Err(StoreError::Full {
                limit: self.limits.max_threads,
            }),
        }
    }

    fn begin(&self, thread_id: &str, run_id: &str) -> Result<RunBegun, StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        if !inner.threads.contains_key(thread_id) {
            self.make_room(&mut inner, now)?;
            if !inner.fit(0, self.limits.max_total_bytes, thread_id) {
                return Err(StoreError::OverBudget {
                    limit: self.limits.max_total_bytes,
                });
            }
            inner.threads.insert(thread_id.to_owned(), Thread::new(now));
        }
        let Some(t) = inner.threads.get_mut(thread_id) else {
            unreachable!("inserted above")
        };
        if let Some(r) = t.run.as_ref().filter(|r| !r.ended) {
            return Err(StoreError::Busy {
                thread_id: thread_id.to_owned(),
                run_id: r.run_id.clone(),
            });
        }
        // The last run's events give way to the new run's.
        let freed = t.run.as_ref().map_or(0, |r| r.bytes);
        t.run = Some(RawRun {
            run_id: run_id.to_owned(),
            events: Vec::new(),
            bytes: 0,
            ended: false,
        });
        t.last_active = now;
        t.bump();
        let begun = RunBegun {
            known_message_ids: t.known_ids.clone(),
        };
        inner.bytes = inner.bytes.saturating_sub(freed);
        Ok(begun)
    }

    fn push(&self, thread_id: &str, run_id: &str, events: Vec<Event>) -> Result<(), StoreError> {
        let limit = self.limits.max_run_events;
        let added = size_of_events(&events);
        let terminal = matches!(
            events.last(),
            Some(Event::RunFinished(_) | Event::RunError(_))
        );
        let mut guard = self.lock();
        let inner = &mut *guard;
        if !inner.fit(added, self.limits.max_total_bytes, thread_id) && !terminal {
            return Err(StoreError::OverBudget {
                limit: self.limits.max_total_bytes,
            });
        }
        let t = inner
            .threads
            .get_mut(thread_id)
            .ok_or_else(|| StoreError::NotLive {
                thread_id: thread_id.to_owned(),
                run_id: run_id.to_owned(),
            })?;
        let run = t.live_mut(thread_id, run_id)?;
        if !terminal && run.events.len() + events.len() > limit {
            return Err(StoreError::RunTooLong {
                thread_id: thread_id.to_owned(),
                run_id: run_id.to_owned(),
                limit,
            });
        }
        run.events.extend(events);
        run.bytes += added;
        t.bump();
        inner.bytes += added;
        Ok(())
    }

    fn end(&self, thread_id: &str, run_id: &str) -> Result<(), StoreError> {
        let max_history = self.limits.max_history_events;
        let mut inner = self.lock();
        let t = inner
            .threads
            .get_mut(thread_id)
            .ok_or_else(|| StoreError::NotLive {
                thread_id: thread_id.to_owned(),
                run_id: run_id.to_owned(),
            })?;
        let run = t.live_mut(thread_id, run_id)?;
        run.ended = true;
        let compacted: Arc<[Event]> = Compactor::compact_all(run.events.iter().cloned()).into();
        recorded_message_ids(&compacted, &mut t.known_ids);
        let before = t.history_bytes;
        let size = size_of_events(&compacted);
        t.history_events += compacted.len();
        t.history_bytes += size;
        t.history.push_back(compacted);
        t.history_sizes.push_back(size);
        let mut forgot = false;
        while t.history_events > max_history && t.history.len() > 1 {
            if let (Some(old), Some(old_size)) =
                (t.history.pop_front(), t.history_sizes.pop_front())
            {
                t.history_events -= old.len();
                t.history_bytes -= old_size;
                forgot = true;
            }
        }
        let after = t.history_bytes;
        if forgot {
            t.known_ids.clear();
            for run in &t.history {
                recorded_message_ids(run, &mut t.known_ids);
            }
        }
        t.last_active = Instant::now();
        t.bump();
        inner.bytes = (inner.bytes + after).saturating_sub(before);
        Ok(())
    }

    /// What all threads keep, in bytes, as [`ThreadLimits::max_total_bytes`] counts.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn snap(&self, thread_id: &str) -> Option<ThreadSnapshot> {
        let inner = self.lock();
        let t = inner.threads.get(thread_id)?;
        Some(ThreadSnapshot {
            history: t.history.iter().cloned().collect(),
            live: t
                .run
                .as_ref()
                .filter(|r| !r.ended)
                .map(|r| r.run_id.clone()),
        })
    }

    fn read(&self, thread_id: &str, run_id: &str, from: usize) -> Result<RunPage, StoreError> {
        let inner = self.lock();
        let not_live = || StoreError::NotLive {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
        };
        let t = inner.threads.get(thread_id).ok_or_else(not_live)?;
        match t.run.as_ref() {
            Some(r) if r.run_id == run_id => Ok(RunPage {
                events: r.events.get(from..).unwrap_or_default().to_vec(),
                ended: r.ended,
            }),
            _ => Err(not_live()),
        }
    }

    /// A receiver that sees the thread's next change, when the run has nothing after
    /// `from` yet; `None` when there is something to read (or nothing to wait for).
    fn waiter(&self, thread_id: &str, run_id: &str, from: usize) -> Option<watch::Receiver<u64>> {
        let inner = self.lock();
        let t = inner.threads.get(thread_id)?;
        let r = t.run.as_ref().filter(|r| r.run_id == run_id)?;
        if r.ended || r.events.len() > from {
            return None;
        }
        Some(t.changed.subscribe())
    }
}

impl ThreadStore for InMemoryThreadStore {
    fn begin_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, RunBegun> {
        Box::pin(std::future::ready(self.begin(thread_id, run_id)))
    }

    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        events: Vec<Event>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(self.push(thread_id, run_id, events)))
    }

    fn end_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(self.end(thread_id, run_id)))
    }

    fn snapshot<'a>(&'a self, thread_id: &'a str) -> StoreFuture<'a, Option<ThreadSnapshot>> {
        Box::pin(std::future::ready(Ok(self.snap(thread_id))))
    }

    fn read_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        from: usize,
    ) -> StoreFuture<'a, RunPage> {
        Box::pin(std::future::ready(self.read(thread_id, run_id, from)))
    }

    fn wait<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        from: usize,
    ) -> Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        let rx = self.waiter(thread_id, run_id, from);
        Box::pin(async move {
            if let Some(mut rx) = rx {
                // An error means the thread was evicted: nothing more will come.
                let _ = rx.changed().await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    async fn whole_run(s: &InMemoryThreadStore, t: &str, r: &str) {
        s.begin_run(t, r).await.unwrap();
        s.append(
            t,
            r,
            vec![
                Event::run_started(t, r),
                Event::text_message_start(format!("{r}-m")),
                Event::text_message_content(format!("{r}-m"), "a"),
                Event::text_message_content(format!("{r}-m"), "b"),
                Event::text_message_end(format!("{r}-m")),
                Event::run_finished(t, r),
            ],
        )
        .await
        .unwrap();
        s.end_run(t, r).await.unwrap();
    }

    #[test]
    fn one_live_run_per_thread_and_history_is_compacted() {
        rt().block_on(async {
            let s = InMemoryThreadStore::new(ThreadLimits::default());
            s.begin_run("t", "r1").await.unwrap();
            match s.begin_run("t", "r2").await {
                Err(StoreError::Busy { run_id, .. }) => assert_eq!(run_id, "r1"),
                other => panic!("{other:?}"),
            }
            assert_eq!(
                s.snapshot("t").await.unwrap().unwrap().live.as_deref(),
                Some("r1")
            );
            s.append("t", "r1", vec![Event::run_started("t", "r1")])
                .await
                .unwrap();
            s.end_run("t", "r1").await.unwrap();
            // The ended run stays readable until the next begins.
            let page = s.read_run("t", "r1", 0).await.unwrap();
            assert!(page.ended);
            assert_eq!(page.events.len(), 1);
            whole_run(&s, "t", "r2").await;
            assert!(s.read_run("t", "r1", 0).await.is_err());
            let snap = s.snapshot("t").await.unwrap().unwrap();
            assert_eq!(snap.history.len(), 2);
            // Two content events became one.
            assert_eq!(snap.history[1].len(), 5);
            assert!(
                s.append("t", "r2", vec![]).await.is_err(),
                "ended runs take nothing"
            );
        });
    }

    #[test]
    fn known_message_ids_come_from_history() {
        rt().block_on(async {
            let s = InMemoryThreadStore::new(ThreadLimits::default());
            whole_run(&s, "t", "r1").await;
            let begun = s.begin_run("t", "r2").await.unwrap();
            assert!(begun.known_message_ids.contains("r1-m"));
        });
    }

    #[test]
    fn history_and_runs_are_bounded() {
        rt().block_on(async {
            let s = InMemoryThreadStore::new(
                ThreadLimits::default()
                    .max_history_events(10)
                    .max_run_events(3),
            );
            for i in 0..5 {
                whole_run_small(&s, "t", &format!("r{i}")).await;
            }
            let snap = s.snapshot("t").await.unwrap().unwrap();
            assert_eq!(
                snap.history.len(),
                3,
                "oldest runs forgotten (3 events each)"
            );
            s.begin_run("t", "long").await.unwrap();
            s.append("t", "long", vec![Event::run_started("t", "long")])
                .await
                .unwrap();
            match s
                .append("t", "long", vec![Event::step_started("a"); 3])
                .await
            {
                Err(StoreError::RunTooLong { limit: 3, .. }) => {}
                other => panic!("{other:?}"),
            }
        });
    }

    async fn whole_run_small(s: &InMemoryThreadStore, t: &str, r: &str) {
        s.begin_run(t, r).await.unwrap();
        s.append(
            t,
            r,
            vec![
                Event::run_started(t, r),
                Event::custom("x", serde_json::Value::Null),
                Event::run_finished(t, r),
            ],
        )
        .await
        .unwrap();
        s.end_run(t, r).await.unwrap();
    }

    #[test]
    fn eviction_takes_the_longest_idle_and_never_a_running_thread() {
        rt().block_on(async {
            let s = InMemoryThreadStore::new(ThreadLimits::default().max_threads(2));
            whole_run_small(&s, "a", "r").await;
            s.begin_run("b", "r").await.unwrap(); // running
            whole_run_small(&s, "c", "r").await; // evicts a
            assert!(s.snapshot("a").await.unwrap().is_none());
            assert!(s.snapshot("b").await.unwrap().is_some());
            s.begin_run("c", "r2").await.unwrap(); // c running too
            match s.begin_run("d", "r").await {
                Err(StoreError::Full { limit: 2 }) => {}
                other => panic!("{other:?}"),
            }

            let s = InMemoryThreadStore::new(ThreadLimits::default().idle_ttl(Duration::ZERO));
            whole_run_small(&s, "a", "r").await;
            whole_run_small(&s, "b", "r").await;
            assert!(
                s.snapshot("a").await.unwrap().is_none(),
                "idle past its time"
            );
            assert_eq!(s.len(), 1);
        });
    }

    #[test]
    fn wait_wakes_on_append_and_end() {
        rt().block_on(async {
            let s = Arc::new(InMemoryThreadStore::new(ThreadLimits::default()));
            s.begin_run("t", "r").await.unwrap();
            let reader = {
                let s = s.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    loop {
                        let page = s.read_run("t", "r", seen.len()).await.unwrap();
                        seen.extend(page.events);
                        if page.ended {
                            return seen;
                        }
                        s.wait("t", "r", seen.len()).await;
                    }
                })
            };
            for i in 0..5 {
                tokio::task::yield_now().await;
                s.append("t", "r", vec![Event::step_started(format!("{i}"))])
                    .await
                    .unwrap();
            }
            s.end_run("t", "r").await.unwrap();
            let seen = tokio::time::timeout(Duration::from_secs(5), reader)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(seen.len(), 5);
        });
    }

    #[test]
    fn the_bytes_of_all_threads_are_bounded_idle_threads_go_first() {
        rt().block_on(async {
            // A run whose input is some 20 KB (as RUN_STARTED records it).
            let big_run = |t: &str, r: &str| {
                let input: agui_core::RunAgentInput = serde_json::from_value(serde_json::json!({
                    "threadId": t, "runId": r,
                    "messages": [{ "id": format!("{r}-u"), "role": "user", "content": "x".repeat(20_000) }],
                }))
                .unwrap();
                let mut started = agui_core::event::RunStarted::new(t, r);
                started.input = Some(Box::new(input));
                vec![Event::from(started), Event::run_finished(t, r)]
            };
            let s = InMemoryThreadStore::new(ThreadLimits::default().max_total_bytes(100_000));
            for i in 0..10 {
                let (t, r) = (format!("t{i}"), format!("r{i}"));
                s.begin_run(&t, &r).await.unwrap();
                s.append(&t, &r, big_run(&t, &r)).await.unwrap();
                s.end_run(&t, &r).await.unwrap();
                assert!(s.bytes() <= 100_000, "{} bytes after thread {i}", s.bytes());
            }
            // The oldest idle threads were evicted to make room; the newest is held.
            assert!(s.len() < 10, "{} threads held", s.len());
            assert!(s.snapshot("t9").await.unwrap().is_some());
            assert!(s.snapshot("t0").await.unwrap().is_none());

            // A live run with nothing idle left to evict is refused its next batch (not
            // truncated silently), but its terminal batch is taken.
            let s = InMemoryThreadStore::new(ThreadLimits::default().max_total_bytes(30_000));
            s.begin_run("t", "r").await.unwrap();
            let mut events = big_run("t", "r");
            let end = events.pop().unwrap();
            s.append("t", "r", events.clone()).await.unwrap();
            match s.append("t", "r", events).await {
                Err(StoreError::OverBudget { limit }) => assert_eq!(limit, 30_000),
                other => panic!("{other:?}"),
            }
            s.append("t", "r", vec![end]).await.unwrap();
            s.end_run("t", "r").await.unwrap();
        });
    }
}
