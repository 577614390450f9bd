//! [`RunLimits`]: the bounds of every run store.

use std::time::Duration;

/// Bounds of a run store: one type for every store ([`InMemoryRunStore`](super::InMemoryRunStore),
/// the Redis store, any other). Every field has a documented default and says which
/// stores ignore it.
///
/// Two sets of defaults: [`RunLimits::default`] for a store in this process's memory,
/// and [`RunLimits::shared`] for a store shared by several replicas (longer retention,
/// more threads: it holds what every replica serves). The setters raise a count of 0 to
/// 1 where 0 would keep nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunLimits {
    /// How long a finished run stays readable (default 15 minutes; shared: 1 hour).
    pub retention: Duration,
    /// Most events kept per run (default 200,000): beyond it the oldest are dropped
    /// (the last one is always kept), and a re-attach from before them gets `410`.
    pub max_events_per_run: u64,
    /// Most bytes kept per run (default 64 MiB), likewise. The in-memory store counts
    /// an event at what it costs in memory, its JSON and
    /// [`EVENT_OVERHEAD`](super::EVENT_OVERHEAD) bytes of bookkeeping; the Redis store
    /// counts its JSON.
    pub max_bytes_per_run: u64,
    /// Most bytes in the whole store (default 512 MiB), counted as above, and each run
    /// at [`RUN_OVERHEAD`](super::RUN_OVERHEAD) bytes and its record's text besides its
    /// events: beyond it finished runs are evicted, oldest first; when only running
    /// runs remain, new runs are refused. Threads' histories count too; past the cap,
    /// after finished runs, the threads idle the longest go. Only the in-memory store
    /// keeps it; the Redis store ignores it (Redis's own `maxmemory` bounds the whole).
    pub max_total_bytes: u64,
    /// Most threads held, all owners together (default 10,000; shared: 100,000). A new
    /// thread beyond it evicts the thread idle the longest; when every thread held has
    /// a running run, the new run is refused ([`RunStoreError::Full`](super::RunStoreError::Full)).
    pub max_threads: u64,
    /// A thread with no run for this long is forgotten (default 1 hour).
    pub thread_idle_ttl: Duration,
    /// Most compacted events kept in one thread's history (default 10,000); beyond it
    /// the oldest runs are forgotten (the last one is always kept).
    pub max_history_events: u64,
    /// Most bytes of compacted events' JSON kept in one thread's history (default 16
    /// MiB), likewise. The in-memory store ignores it: it counts a history's bytes in
    /// [`max_total_bytes`](Self::max_total_bytes) instead.
    pub max_history_bytes: u64,
    /// A run's and a thread's keys expire this long after their last write even when
    /// nobody ends them (default 2 hours): nothing stays forever in a store no process
    /// sweeps. The in-memory store ignores it (it goes with its process).
    pub safety_ttl: Duration,
}

impl Default for RunLimits {
    /// The defaults of a store in this process's memory.
    fn default() -> Self {
        RunLimits {
            retention: Duration::from_secs(15 * 60),
            max_events_per_run: 200_000,
            max_bytes_per_run: 64 << 20,
            max_total_bytes: 512 << 20,
            max_threads: 10_000,
            thread_idle_ttl: Duration::from_secs(3600),
            max_history_events: 10_000,
            max_history_bytes: 16 << 20,
            safety_ttl: Duration::from_secs(7200),
        }
    }
}

impl RunLimits {
    /// The defaults of a store shared by several replicas (as Redis is): those of
    /// [`default`](Self::default) but a retention of 1 hour and 100,000 threads.
    pub fn shared() -> Self {
        RunLimits {
            retention: Duration::from_secs(3600),
            max_threads: 100_000,
            ..RunLimits::default()
        }
    }

    /// Sets [`retention`](Self::retention).
    pub fn retention(mut self, d: Duration) -> Self {
        self.retention = d;
        self
    }

    /// Sets [`max_events_per_run`](Self::max_events_per_run) (at least 1).
    pub fn max_events_per_run(mut self, n: u64) -> Self {
        self.max_events_per_run = n.max(1);
        self
    }

    /// Sets [`max_bytes_per_run`](Self::max_bytes_per_run) (at least 1).
    pub fn max_bytes_per_run(mut self, n: u64) -> Self {
        self.max_bytes_per_run = n.max(1);
        self
    }

    /// Sets [`max_total_bytes`](Self::max_total_bytes).
    pub fn max_total_bytes(mut self, n: u64) -> Self {
        self.max_total_bytes = n;
        self
    }

    /// Sets [`max_threads`](Self::max_threads) (at least 1).
    pub fn max_threads(mut self, n: u64) -> Self {
        self.max_threads = n.max(1);
        self
    }

    /// Sets [`thread_idle_ttl`](Self::thread_idle_ttl).
    pub fn thread_idle_ttl(mut self, d: Duration) -> Self {
        self.thread_idle_ttl = d;
        self
    }

    /// Sets [`max_history_events`](Self::max_history_events) (at least 1).
    pub fn max_history_events(mut self, n: u64) -> Self {
        self.max_history_events = n.max(1);
        self
    }

    /// Sets [`max_history_bytes`](Self::max_history_bytes) (at least 1).
    pub fn max_history_bytes(mut self, n: u64) -> Self {
        self.max_history_bytes = n.max(1);
        self
    }

    /// Sets [`safety_ttl`](Self::safety_ttl).
    pub fn safety_ttl(mut self, d: Duration) -> Self {
        self.safety_ttl = d;
        self
    }
}
