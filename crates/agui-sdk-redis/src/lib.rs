//! AG-UI runs across several server replicas: [`RedisRunStore`], a
//! [`RunStore`](agui_sdk_agent::runs::RunStore) (each of its roles: [`RunLog`],
//! [`Leases`], [`ThreadIndex`]) on
//! Redis Streams for `agui-sdk-server`, holding resumable runs and the CopilotKit
//! runtime's threads (an index over the same runs).
//!
//! ```no_run
//! # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use agui_sdk_agent::runs::RunStore;
//! use agui_sdk_agent::runs::RunLimits;
//! use agui_sdk_redis::RedisRunStore;
//!
//! let store: Arc<dyn RunStore> =
//!     Arc::new(RedisRunStore::connect("redis://127.0.0.1:6379", "agui", RunLimits::shared()).await?);
//! // agui-sdk-server takes it for resumable runs, `Resumable::new(store.clone())`, and for
//! // the CopilotKit runtime's threads, `CopilotRuntime::new().store(store)`.
//! # let _ = store; Ok(()) }
//! ```
//!
//! # Layout
//!
//! For a run key `K` (see [`RunKey`]) under the prefix `P`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:{K}:log` | stream | one entry per event, id `{seq}-0`, field `e` = the event's JSON |
//! | `P:{K}:meta` | hash | run id, thread, agent, body hash, status, head, oldest, fence, owner replica, lease, cancel flag, times |
//! | `P:leases` | sorted set | running runs by lease expiry (milliseconds, Redis's own clock) |
//! | `P:{K}:wake` | pub/sub channel | the new head after each append (a wake-up, never data) |
//!
//! For a thread key `T` (see [`ThreadKey`]):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:th:{T}:meta` | hash | thread id, agent, the live and the last run's keys, the history's event and byte counts, its name and archived flag, its times (created, updated, last run) |
//! | `P:th:{T}:hist` | list | each ended run compacted: `count\n` then its events' JSON, one per line, oldest first |
//! | `P:th:{T}:ids` | set | the ids of the messages the history records |
//! | `P:owner:{S}:open`, `P:owner:{S}:archived` | sorted sets | the listed threads of the owner whose scope is `S` ([`agui_sdk_agent::runs::owner_scope`]), not archived and archived, in the list's order: members `<last run, ms, 20 digits>:<thread id>\x1f<agent>`, all at score 0, so that a page is one `ZREVRANGEBYLEX` from the cursor's bound per set, O(log n + limit) |
//! | `P:owner:{S}:open:agent:A`, `P:owner:{S}:archived:agent:A` | sorted sets | likewise, those whose latest run ran agent `A` |
//! | `P:listed` | hash | each listed thread's member in those sets |
//! | `P:threads` | sorted set | every thread, by the time a run of it last started or ended: the longest idle is forgotten first when [`RunLimits::max_threads`] are held |
//!
//! For an interrupt ledger key `I` (see [`InterruptKey`](agui_sdk_agent::runs::InterruptKey)):
//! `P:ix:{I}`, a hash of the entry's version `v` and document `doc`, replaced by one
//! script that compares the version first; it expires after the policy's `keep_for`.
//!
//! Every write is one Lua script, so each operation is atomic: an append checks the
//! fence and that it starts right after the head, adds the events (trimming the log to
//! its cap), moves the head, ends the run when the batch is terminal (the keys then
//! expire after the retention time), and publishes the wake-up. A thread run's create
//! checks, in the same script, that its thread's live run is not running and takes its
//! place; its end frees the thread and adds its history entry (trimmed to
//! [`RunLimits::max_history_events`] and
//! [`RunLimits::max_history_bytes`]); a thread's keys expire
//! [`RunLimits::thread_idle_ttl`] after its last run ends. Lease times come from
//! Redis's `TIME`, never a replica's clock. Viewers read the log by cursor and wait on
//! the wake-ups, polling as well since pub/sub may lose a message; each replica
//! subscribes only to the channels of the runs its own viewers wait on, so a fleet's
//! wake-ups are not all sent to every replica. The `P:leases` key is shared by every run, so the
//! store does not run on Redis Cluster (one shard, or a primary with replicas).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use agui_sdk_agent::runs::{
    Batch, CancelOutcome, Created, Fence, Heartbeat, Leases, NewRun, RunKey, RunLog, RunRecord,
    RunStatus, RunStoreError, RunStoreFuture, ThreadEntry, ThreadIndex, ThreadKey, ThreadQuery,
    ThreadRecord, ThreadSummary, ThreadUpdate,
};
use bytes::Bytes;
use redis::aio::ConnectionManager;

/// The bounds of every run store, this one's included: see [`RunLimits::shared`].
pub use agui_sdk_agent::runs::RunLimits;

#[macro_use]
mod index;
mod ledger;
mod scripts;
mod wake;

use scripts::{APPEND, CANCEL, CREATE, EXPIRED, HEARTBEAT, READ, TAKE_OVER};

use redis::{Script, Value};
use wake::Wakeups;

struct Scripts {
    create: Script,
    append: Script,
    read: Script,
    heartbeat: Script,
    cancel: Script,
    expired: Script,
    take_over: Script,
    thread: Script,
    list_threads: Script,
    forget_thread: Script,
    update_thread: Script,
    ledger_swap: Script,
}

/// Run logs in Redis Streams, shared by every replica. See the [crate docs](crate).
pub struct RedisRunStore {
    con: ConnectionManager,
    prefix: String,
    limits: RunLimits,
    scripts: Scripts,
    wakeups: Wakeups,
    /// Index entries the thread lists have read: see [`RedisRunStore::thread_index_reads`].
    index_reads: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for RedisRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRunStore")
            .field("prefix", &self.prefix)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A client for `url` and a managed connection (reconnecting, with time bounds).
pub(crate) async fn open(url: &str) -> Result<(redis::Client, ConnectionManager), RunStoreError> {
    let client = redis::Client::open(url).map_err(unavailable)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_response_timeout(Some(Duration::from_secs(5)))
        .set_number_of_retries(2);
    let con = ConnectionManager::new_with_config(client.clone(), config)
        .await
        .map_err(unavailable)?;
    Ok((client, con))
}

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> RunStoreError {
    RunStoreError::Unavailable(Box::new(e))
}

fn protocol(what: &str) -> RunStoreError {
    RunStoreError::Unavailable(format!("unexpected reply from Redis: {what}").into())
}

pub(crate) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn record_from(fields: &[Value]) -> Result<RunRecord, RunStoreError> {
    let mut map = HashMap::new();
    for pair in fields.chunks(2) {
        if let [k, v] = pair {
            if let (Some(k), Some(v)) = (text(k), text(v)) {
                map.insert(k, v);
            }
        }
    }
    let get = |k: &str| map.get(k).cloned().unwrap_or_default();
    let num = |k: &str| map.get(k).and_then(|v| v.parse::<u64>().ok());
    Ok(RunRecord {
        run_id: get("run_id"),
        thread_id: get("thread_id"),
        agent: get("agent"),
        status: RunStatus::parse(&get("status")).ok_or_else(|| protocol("a run status"))?,
        head: num("head").unwrap_or(0),
        oldest: num("oldest").unwrap_or(1),
        body_hash: get("body_hash"),
        owner_replica: get("owner_replica"),
        cancel_requested: get("cancel") == "1",
        created_at_ms: num("created_at").unwrap_or(0),
        finished_at_ms: num("finished_at"),
        thread: map.get("thread").map(|t| ThreadKey::from_text(t)),
    })
}

impl RedisRunStore {
    /// Connects to the Redis at `url` (`redis://host:port[/db]`, or `rediss://` for
    /// TLS); every key starts with `prefix`. Bounded by `limits`, whose defaults for a
    /// store shared by replicas are [`RunLimits::shared`]; it ignores
    /// [`RunLimits::max_total_bytes`] (Redis's `maxmemory` bounds the whole).
    pub async fn connect(
        url: &str,
        prefix: &str,
        limits: RunLimits,
    ) -> Result<Self, RunStoreError> {
        let (client, con) = open(url).await?;
        let wakeups = Wakeups::start(client);
        Ok(RedisRunStore {
            con,
            prefix: prefix.to_owned(),
            limits,
            scripts: Scripts {
                create: Script::new(CREATE),
                append: Script::new(APPEND),
                read: Script::new(READ),
                heartbeat: Script::new(HEARTBEAT),
                cancel: Script::new(CANCEL),
                expired: Script::new(EXPIRED),
                take_over: Script::new(TAKE_OVER),
                thread: Script::new(index::THREAD),
                list_threads: Script::new(index::LIST_THREADS),
                forget_thread: Script::new(index::FORGET_THREAD),
                update_thread: Script::new(index::UPDATE_THREAD),
                ledger_swap: ledger::swap_script(),
            },
            wakeups,
            index_reads: Default::default(),
        })
    }

    fn meta(&self, key: &RunKey) -> String {
        format!("{}:{{{}}}:meta", self.prefix, key)
    }

    fn log(&self, key: &RunKey) -> String {
        format!("{}:{{{}}}:log", self.prefix, key)
    }

    fn wake(&self, key: &RunKey) -> String {
        format!("{}:{{{}}}:wake", self.prefix, key)
    }

    fn leases(&self) -> String {
        format!("{}:leases", self.prefix)
    }

    /// The remaining time to live of a run's log, in seconds (`None` when the key has
    /// no expiry or does not exist): for checking retention.
    pub async fn log_ttl(&self, key: &RunKey) -> Result<Option<u64>, RunStoreError> {
        let mut con = self.con.clone();
        let ttl: i64 = redis::cmd("TTL")
            .arg(self.log(key))
            .query_async(&mut con)
            .await
            .map_err(unavailable)?;
        Ok((ttl >= 0).then_some(ttl as u64))
    }

    async fn do_create(&self, run: NewRun) -> Result<Created, RunStoreError> {
        let fence = Fence::random();
        let mut con = self.con.clone();
        let v: Value = self
            .scripts
            .create
            .key(self.meta(&run.key))
            .key(self.leases())
            .key(self.thread_keys(run.thread.as_ref()).0)
            .key(self.thread_keys(run.thread.as_ref()).1)
            .key(self.thread_keys(run.thread.as_ref()).2)
            .key(format!("{}:threads", self.prefix))
            .arg(run.key.as_str())
            .arg(&run.run_id)
            .arg(&run.thread_id)
            .arg(&run.agent)
            .arg(&run.body_hash)
            .arg(&run.replica)
            .arg(run.lease.as_millis() as u64)
            .arg(fence.0.to_string())
            .arg(self.limits.safety_ttl.as_secs().max(1))
            .arg(run.thread.as_ref().map(|t| t.as_str()).unwrap_or(""))
            .arg(&self.prefix)
            .arg(self.thread_ttl_running())
            .arg(self.limits.max_threads)
            .invoke_async(&mut con)
            .await
            .map_err(unavailable)?;
        match v {
            Value::Array(fields) if fields.first().and_then(text).as_deref() == Some("BUSY") => {
                Err(RunStoreError::Busy {
                    run_id: fields.get(1).and_then(text).unwrap_or_default(),
                })
            }
            Value::Array(fields) if fields.first().and_then(text).as_deref() == Some("FULL") => {
                Err(RunStoreError::Full(format!(
                    "{} threads held, every one running (limit {})",
                    fields.get(1).and_then(int).unwrap_or_default(),
                    self.limits.max_threads
                )))
            }
            Value::Array(fields) => Ok(Created::Existing(record_from(&fields)?)),
            _ => Ok(Created::New(fence)),
        }
    }

    async fn do_append(
        &self,
        key: &RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
        entry: Option<&ThreadEntry>,
    ) -> Result<(), RunStoreError> {
        let mut con = self.con.clone();
        let mut inv = self.scripts.append.prepare_invoke();
        inv.key(self.meta(key))
            .key(self.log(key))
            .key(self.leases())
            .arg(key.as_str())
            .arg(fence.0.to_string())
            .arg(first)
            .arg(format!(
                "{}:{}",
                self.limits.max_events_per_run, self.limits.max_bytes_per_run
            ))
            .arg(terminal.map(|s| s.as_str()).unwrap_or(""))
            .arg(self.limits.retention.as_secs().max(1))
            .arg(self.wake(key))
            .arg(self.limits.safety_ttl.as_secs().max(1))
            .arg(&self.prefix)
            .arg(entry.map(|e| e.events.as_ref()).unwrap_or(b""))
            .arg(entry.map(|e| e.count).unwrap_or(0))
            .arg(self.limits.thread_idle_ttl.as_secs().max(1))
            .arg(format!(
                "{}:{}",
                self.limits.max_history_events, self.limits.max_history_bytes
            ))
            .arg(entry.map(|e| e.message_ids.len()).unwrap_or(0));
        for id in entry.iter().flat_map(|e| e.message_ids.iter()) {
            inv.arg(id);
        }
        for e in &events {
            inv.arg(e.as_ref());
        }
        let v: Vec<i64> = inv.invoke_async(&mut con).await.map_err(unavailable)?;
        match v.as_slice() {
            [1, _] => Ok(()),
            [-1, _] => Err(RunStoreError::NotFound),
            [-2, _] => Err(RunStoreError::Fenced),
            [-3, _] => Err(RunStoreError::Ended),
            [-4, head] => Err(RunStoreError::Conflict { head: *head as u64 }),
            _ => Err(protocol("append")),
        }
    }

    async fn do_read(
        &self,
        key: &RunKey,
        after: u64,
        limit: usize,
    ) -> Result<Batch, RunStoreError> {
        let mut con = self.con.clone();
        let v: Vec<Value> = self
            .scripts
            .read
            .key(self.meta(key))
            .key(self.log(key))
            .arg(after)
            .arg(limit.max(1))
            .invoke_async(&mut con)
            .await
            .map_err(unavailable)?;
        match v.first().and_then(int) {
            Some(-1) => Err(RunStoreError::NotFound),
            Some(-5) => Err(RunStoreError::Gone {
                oldest: v.get(1).and_then(int).unwrap_or(0) as u64,
                head: v.get(2).and_then(int).unwrap_or(0) as u64,
            }),
            Some(1) => {
                let status = v
                    .get(1)
                    .and_then(text)
                    .and_then(|s| RunStatus::parse(&s))
                    .ok_or_else(|| protocol("read status"))?;
                let head = v.get(2).and_then(int).unwrap_or(0) as u64;
                let events = v[4.min(v.len())..]
                    .iter()
                    .map(|e| match e {
                        Value::BulkString(b) => Ok(Bytes::from(b.clone())),
                        _ => Err(protocol("an event")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Batch {
                    first: after + 1,
                    events,
                    head,
                    status,
                })
            }
            _ => Err(protocol("read")),
        }
    }

    async fn do_wait(&self, key: &RunKey, after: u64, timeout: Duration) {
        let ready = async {
            match self.do_read(key, after, 1).await {
                Ok(b) => !b.events.is_empty() || b.status.is_terminal(),
                Err(_) => true,
            }
        };
        self.wakeups.wait(&self.wake(key), timeout, ready).await;
    }

    /// Entries of the owners' list indexes that this store's thread lists have read
    /// (those returned, those filtered out, those found expired): what a list costs in
    /// Redis, which grows with the pages read, not with the owner's threads.
    pub fn thread_index_reads(&self) -> u64 {
        self.index_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Wake-ups this store's listener has received: only those of runs its viewers
    /// wait on (each replica subscribes to the channels it needs, not to every run's).
    pub fn wakeups_received(&self) -> u64 {
        self.wakeups.received()
    }
}

impl RunLog for RedisRunStore {
    fn create(&self, run: NewRun) -> RunStoreFuture<'_, Created> {
        Box::pin(self.do_create(run))
    }

    fn append<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
    ) -> RunStoreFuture<'a, ()> {
        Box::pin(self.do_append(key, fence, first, events, terminal, None))
    }

    fn read<'a>(&'a self, key: &'a RunKey, after: u64, limit: usize) -> RunStoreFuture<'a, Batch> {
        Box::pin(self.do_read(key, after, limit))
    }

    fn wait<'a>(
        &'a self,
        key: &'a RunKey,
        after: u64,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(self.do_wait(key, after, timeout))
    }

    fn record<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, Option<RunRecord>> {
        Box::pin(async move {
            let mut con = self.con.clone();
            let fields: Vec<Value> = redis::cmd("HGETALL")
                .arg(self.meta(key))
                .query_async(&mut con)
                .await
                .map_err(unavailable)?;
            if fields.is_empty() {
                return Ok(None);
            }
            record_from(&fields).map(Some)
        })
    }
}

impl Leases for RedisRunStore {
    fn heartbeat<'a>(&'a self, key: &'a RunKey, fence: Fence) -> RunStoreFuture<'a, Heartbeat> {
        Box::pin(async move {
            let mut con = self.con.clone();
            let v: i64 = self
                .scripts
                .heartbeat
                .key(self.meta(key))
                .key(self.leases())
                .arg(key.as_str())
                .arg(fence.0.to_string())
                .invoke_async(&mut con)
                .await
                .map_err(unavailable)?;
            match v {
                -1 => Err(RunStoreError::NotFound),
                -2 => Err(RunStoreError::Fenced),
                c => Ok(Heartbeat {
                    cancel_requested: c == 1,
                }),
            }
        })
    }

    fn request_cancel<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, CancelOutcome> {
        Box::pin(async move {
            let mut con = self.con.clone();
            let v: i64 = self
                .scripts
                .cancel
                .key(self.meta(key))
                .arg(self.wake(key))
                .invoke_async(&mut con)
                .await
                .map_err(unavailable)?;
            match v {
                -1 => Err(RunStoreError::NotFound),
                0 => Ok(CancelOutcome::AlreadyEnded),
                _ => Ok(CancelOutcome::Requested),
            }
        })
    }

    fn expired_leases(&self, limit: usize) -> RunStoreFuture<'_, Vec<RunKey>> {
        Box::pin(async move {
            let mut con = self.con.clone();
            let keys: Vec<String> = self
                .scripts
                .expired
                .key(self.leases())
                .arg(limit.max(1))
                .invoke_async(&mut con)
                .await
                .map_err(unavailable)?;
            Ok(keys.iter().map(|k| RunKey::from_text(k)).collect())
        })
    }

    fn take_over<'a>(
        &'a self,
        key: &'a RunKey,
        replica: &'a str,
    ) -> RunStoreFuture<'a, Option<(Fence, u64)>> {
        Box::pin(async move {
            let fence = Fence::random();
            let mut con = self.con.clone();
            let head: Option<i64> = self
                .scripts
                .take_over
                .key(self.meta(key))
                .key(self.leases())
                .arg(key.as_str())
                .arg(replica)
                .arg(fence.0.to_string())
                .invoke_async(&mut con)
                .await
                .map_err(unavailable)?;
            Ok(head.map(|h| (fence, h as u64)))
        })
    }
}

impl ThreadIndex for RedisRunStore {
    fn end_thread_run<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        status: RunStatus,
        entry: ThreadEntry,
    ) -> RunStoreFuture<'a, ()> {
        Box::pin(async move {
            self.do_append(key, fence, first, events, Some(status), Some(&entry))
                .await
        })
    }

    fn thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, Option<ThreadRecord>> {
        Box::pin(self.do_thread(key))
    }

    fn list_threads<'a>(
        &'a self,
        scope: &'a str,
        query: &'a ThreadQuery,
    ) -> RunStoreFuture<'a, Vec<ThreadSummary>> {
        Box::pin(self.do_list_threads(scope, query))
    }

    fn forget_thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, bool> {
        Box::pin(self.do_forget_thread(key))
    }

    fn update_thread<'a>(
        &'a self,
        key: &'a ThreadKey,
        update: ThreadUpdate,
    ) -> RunStoreFuture<'a, Option<ThreadSummary>> {
        Box::pin(self.do_update_thread(key, update))
    }
}
