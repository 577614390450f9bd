//! AG-UI runs in PostgreSQL: [`PostgresRunStore`], a whole run store
//! ([`RunStore`](agui_sdk_agent::runs::RunStore): its run log, leases and thread index)
//! in tables of a schema of its own, for several server replicas sharing one database.
//! It keeps the whole store contract (`agui_sdk_agent::runs::contract::check`, with
//! leases), as the Redis store does.
//!
//! ```no_run
//! # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
//! use agui_sdk_agent::runs::RunLimits;
//! use agui_sdk_postgres::PostgresRunStore;
//!
//! let store =
//!     PostgresRunStore::connect("postgres://agui@127.0.0.1/agui", "agui", RunLimits::shared())
//!         .await?;
//! # let _ = store; Ok(()) }
//! ```
//!
//! # Schema
//!
//! Every table is in the schema the store is given (`agui` above), created on connect
//! when it does not exist, and brought to this build's version by the migrations
//! embedded in the crate ([`MIGRATIONS`], [`SCHEMA_VERSION`]): each runs once, in order,
//! in one transaction under an advisory lock, so replicas starting together apply it
//! once. A schema a newer build migrated past [`SCHEMA_VERSION`] is refused
//! ([`ConnectError::NewerSchema`]) rather than written with an older layout.
//!
//! | table | holds |
//! |---|---|
//! | `schema_version` | each migration applied, by version |
//! | `runs` | one row per run: its record, fence, lease, head, oldest kept seq, kept bytes |
//! | `events` | one row per kept event, by run key and seq: the event's JSON, as the bytes it was sent as (`bytea`) |
//! | `threads` | one row per thread: its live and latest runs, its summary, its last write |
//! | `thread_history` | each ended run of a thread, compacted, in order |
//! | `thread_message_ids` | the ids of the messages a thread's history records |
//! | `thread_count` | how many threads the store holds (kept by triggers), for the cap |
//!
//! An append is one transaction that locks its run's row (`SELECT … FOR UPDATE`): it
//! checks the fence, that the run runs and that the batch starts right after the head,
//! adds the events, trims the oldest past [`RunLimits::max_events_per_run`] and
//! [`RunLimits::max_bytes_per_run`] (the last one always kept), and moves the head. A
//! read is one statement, so its events and its head come from one snapshot. A thread
//! run joins its thread in its create's transaction (locking the thread's row: one
//! running run per thread) and joins its thread's history in its end's (see
//! [`ThreadIndex`](agui_sdk_agent::runs::ThreadIndex); the owners' lists are keyset
//! pages over indexes in their order, described in the `threads` module). Leases are
//! timed by the database's clock, so replicas whose clocks differ agree. A
//! waiter is woken by `LISTEN`/`NOTIFY`: each append notifies the schema's channel with
//! its run's key in its transaction (delivered when it commits, to every replica), and
//! each store listens on a connection of its own; a waiter also checks its run every
//! [`FALLBACK`], so that a lost notification costs at most that.
//!
//! An ended run is gone [`RunLimits::retention`] after its end, and a thread that runs
//! nothing [`RunLimits::thread_idle_ttl`] after its last write: every read leaves them
//! out from then on, and each store deletes them in bounded batches every quarter of
//! the shorter time, at most every 30 seconds ([`PostgresRunStore::sweep`]).
//!
//! A connection lost mid-operation fails that operation with
//! [`RunStoreError::Unavailable`] saying what PostgreSQL or the network answered (the
//! server then ends the run with `RUN_ERROR` code `store_unavailable`); a transaction
//! not committed leaves nothing behind and one committed is kept. The pool makes new
//! connections on the next operations, and the wake-up connection reconnects with a
//! backoff of 100 ms doubling up to 5 s. A database that does not answer at start-up is
//! [`ConnectError::Unreachable`] within 5 seconds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::{
    Batch, CancelOutcome, Created, Fence, Heartbeat, Leases, NewRun, RunKey, RunLimits, RunLog,
    RunRecord, RunStatus, RunStoreError, RunStoreFuture, ThreadKey,
};
use bytes::Bytes;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::broadcast::error::RecvError;
use tokio_postgres::NoTls;

mod migrate;
mod threads;
mod wake;

use threads::Joined;

pub use migrate::{MIGRATIONS, SCHEMA_VERSION};

pub use wake::FALLBACK;

/// Connections the store's pool holds at most.
const POOL_SIZE: usize = 16;

/// How long a connection stays silent before TCP keep-alives probe it.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// How long a connection or a free pooled one is waited for.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why [`PostgresRunStore::connect`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The schema's name is no plain identifier.
    #[error(
        "schema name {0:?}: expected 1 to 63 characters of a-z, 0-9 and _, not starting with a digit"
    )]
    SchemaName(String),
    /// The URL does not parse.
    #[error("PostgreSQL URL: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// The pool could not be built.
    #[error("PostgreSQL connection pool: {0}")]
    Pool(#[source] deadpool_postgres::BuildError),
    /// No connection could be made.
    #[error("PostgreSQL unreachable: {0}")]
    Unreachable(#[source] deadpool_postgres::PoolError),
    /// Reading or writing the schema's version failed.
    #[error("migrating schema {schema:?}: {source}")]
    Migrate {
        /// The schema.
        schema: String,
        /// What PostgreSQL answered.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A migration failed; the schema is left at its version before the connect.
    #[error("schema {schema:?}: migration {version} failed: {source}")]
    Migration {
        /// The schema.
        schema: String,
        /// The migration's version.
        version: i32,
        /// What PostgreSQL answered.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The schema is at a version a newer build wrote.
    #[error(
        "schema {schema:?} is at version {found}, newer than this build's {known}: upgrade agui-sdk-postgres, or give this build another schema"
    )]
    NewerSchema {
        /// The schema.
        schema: String,
        /// Its version.
        found: i32,
        /// This build's version ([`SCHEMA_VERSION`]).
        known: i32,
    },
}

/// The database's clock in milliseconds since the Unix epoch: what leases are timed by,
/// so that replicas whose clocks differ agree on when a lease ends.
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The start of the statement, in milliseconds since the Unix epoch by the database's
/// clock: one value for every row a statement compares.
pub(crate) const STATEMENT_MS: &str = "(extract(epoch from statement_timestamp()) * 1000)::bigint";

/// The SQL of each operation, written for the store's schema.
#[derive(Debug)]
struct Sql {
    create: String,
    record: String,
    lock: String,
    insert: String,
    drop_before: String,
    byte_cut: String,
    update: String,
    read: String,
    head: String,
    expired_run: String,
    exists: String,
    heartbeat: String,
    cancel: String,
    expired: String,
    take_over: String,
    notify: String,
    threads: threads::ThreadSql,
}

impl Sql {
    fn new(s: &str, limits: &RunLimits) -> Self {
        let retention = big(u64::try_from(limits.retention.as_millis()).unwrap_or(u64::MAX));
        // An ended run past its retention is gone, whether or not a sweep deleted it.
        let kept =
            format!("(finished_at_ms IS NULL OR finished_at_ms >= {STATEMENT_MS} - {retention})");
        let kept_r = kept.replace("finished_at_ms", "r.finished_at_ms");
        Sql {
            create: format!(
                "INSERT INTO {s}.runs (key, run_id, thread_id, agent, body_hash, owner_replica, \
                 fence, status, lease_ms, created_at_ms, thread, lease_until_ms) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $9, $10, {NOW_MS} + $8) \
                 ON CONFLICT (key) DO NOTHING"
            ),
            record: format!(
                "SELECT run_id, thread_id, agent, status, head, oldest, body_hash, owner_replica, \
                 cancel_requested, created_at_ms, finished_at_ms, thread \
                 FROM {s}.runs WHERE key = $1 AND {kept}"
            ),
            lock: format!(
                "SELECT fence, status, head, oldest, bytes, thread, thread_id, agent, {NOW_MS} \
                 FROM {s}.runs WHERE key = $1 FOR UPDATE"
            ),
            insert: format!(
                "INSERT INTO {s}.events (key, seq, event) \
                 SELECT $1, seq, event FROM unnest($2::bigint[], $3::bytea[]) AS e (seq, event)"
            ),
            drop_before: format!(
                "WITH d AS (DELETE FROM {s}.events WHERE key = $1 AND seq < $2 \
                 RETURNING octet_length(event) AS n) \
                 SELECT coalesce(sum(n), 0)::bigint FROM d"
            ),
            byte_cut: format!(
                "SELECT seq FROM (SELECT seq, sum(octet_length(event)) OVER (ORDER BY seq) AS upto \
                 FROM {s}.events WHERE key = $1) t \
                 WHERE upto >= $2 ORDER BY seq LIMIT 1"
            ),
            update: format!(
                "UPDATE {s}.runs SET head = $2, oldest = $3, bytes = $4, status = $5, \
                 finished_at_ms = $6 WHERE key = $1"
            ),
            read: format!(
                "SELECT r.head, r.oldest, r.status, e.event \
                 FROM {s}.runs r LEFT JOIN LATERAL \
                 (SELECT seq, event FROM {s}.events \
                  WHERE key = r.key AND seq > $2 ORDER BY seq LIMIT $3) e ON true \
                 WHERE r.key = $1 AND {kept_r} ORDER BY e.seq"
            ),
            head: format!("SELECT head, status FROM {s}.runs WHERE key = $1 AND {kept}"),
            expired_run: format!(
                "DELETE FROM {s}.runs WHERE key = $1 AND finished_at_ms < {NOW_MS} - {retention}"
            ),

            exists: format!("SELECT status FROM {s}.runs WHERE key = $1"),
            heartbeat: format!(
                "UPDATE {s}.runs SET lease_until_ms = CASE WHEN status = 'running' \
                 THEN {NOW_MS} + lease_ms ELSE lease_until_ms END \
                 WHERE key = $1 AND fence = $2 RETURNING cancel_requested"
            ),
            cancel: format!(
                "UPDATE {s}.runs SET cancel_requested = true \
                 WHERE key = $1 AND status = 'running' RETURNING key"
            ),
            expired: format!(
                "SELECT key FROM {s}.runs WHERE status = 'running' AND lease_until_ms < {NOW_MS} \
                 ORDER BY lease_until_ms LIMIT $1"
            ),
            take_over: format!(
                "UPDATE {s}.runs SET fence = $2, owner_replica = $3, \
                 lease_until_ms = {NOW_MS} + lease_ms \
                 WHERE key = $1 AND status = 'running' AND lease_until_ms < {NOW_MS} \
                 RETURNING head"
            ),
            notify: "SELECT pg_notify($1, $2)".to_owned(),
            threads: threads::ThreadSql::new(s),
        }
    }
}

/// What an append found in its run's row.
pub(crate) struct Appended {
    /// The run's thread, if any.
    pub(crate) thread: Option<String>,
    /// The client's thread id.
    pub(crate) thread_id: String,
    /// The run's agent.
    pub(crate) agent: String,
    /// The database's clock at the append, in milliseconds.
    pub(crate) now: i64,
}

/// A run log in PostgreSQL, shared by every replica. See the [crate docs](crate).
pub struct PostgresRunStore {
    pool: Pool,
    schema: String,
    limits: RunLimits,
    sql: Sql,
    wakeups: wake::Wakeups,
    sweep: Arc<Sweep>,
    sweeper: tokio::task::JoinHandle<()>,
}

impl Drop for PostgresRunStore {
    fn drop(&mut self) {
        self.sweeper.abort();
    }
}

/// Most rows one statement of a sweep deletes.
const SWEEP_BATCH: i64 = 500;

/// The longest time between two sweeps.
const SWEEP_AT_MOST_EVERY: Duration = Duration::from_secs(30);

/// The statements of a sweep: the ended runs past their retention, and the threads
/// idle past their time that run nothing, the oldest first, in bounded batches.
#[derive(Debug)]
struct Sweep {
    runs: String,
    threads: String,
}

impl Sweep {
    fn new(s: &str, limits: &RunLimits) -> Self {
        let retention = big(u64::try_from(limits.retention.as_millis()).unwrap_or(u64::MAX));
        let idle = big(u64::try_from(limits.thread_idle_ttl.as_millis()).unwrap_or(u64::MAX));
        Sweep {
            runs: format!(
                "DELETE FROM {s}.runs WHERE key IN (SELECT key FROM {s}.runs \
                 WHERE finished_at_ms < {STATEMENT_MS} - {retention} \
                 ORDER BY finished_at_ms LIMIT $1 FOR UPDATE SKIP LOCKED)"
            ),
            threads: format!(
                "DELETE FROM {s}.threads WHERE key IN (SELECT key FROM {s}.threads \
                 WHERE touched_at_ms < {STATEMENT_MS} - {idle} AND live IS NULL \
                 ORDER BY touched_at_ms LIMIT $1 FOR UPDATE SKIP LOCKED)"
            ),
        }
    }

    /// Deletes what expired; how many runs and threads.
    async fn run(&self, pool: &Pool) -> Result<Swept, RunStoreError> {
        let client = pool.get().await.map_err(unavailable)?;
        let mut swept = Swept::default();
        for (statement, count) in [
            (&self.runs, &mut swept.runs),
            (&self.threads, &mut swept.threads),
        ] {
            loop {
                let n = client
                    .execute(statement, &[&SWEEP_BATCH])
                    .await
                    .map_err(unavailable)?;
                *count += n;
                if n < SWEEP_BATCH as u64 {
                    break;
                }
            }
        }
        Ok(swept)
    }
}

/// What a sweep deleted: see [`PostgresRunStore::sweep`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Ended runs past [`RunLimits::retention`], with their events.
    pub runs: u64,
    /// Threads idle past [`RunLimits::thread_idle_ttl`], with their histories.
    pub threads: u64,
}

/// Sweeps every quarter of the shorter of the retention and the thread idle time (at
/// least every 100 ms, at most every 30 s), for as long as the store lives.
async fn sweep_every(pool: Pool, sweep: Arc<Sweep>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match sweep.run(&pool).await {
            Ok(s) if s != Swept::default() => {
                tracing::debug!(
                    runs = s.runs,
                    threads = s.threads,
                    "PostgreSQL run store: expired runs and threads deleted"
                )
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "PostgreSQL run store: the sweep failed; it runs again in {every:?}")
            }
        }
    }
}

impl std::fmt::Debug for PostgresRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRunStore")
            .field("schema", &self.schema)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> RunStoreError {
    RunStoreError::Unavailable(Box::new(e))
}

fn corrupt(what: String) -> RunStoreError {
    RunStoreError::Unavailable(what.into())
}

/// `sql` prepared on `client`'s connection, once per connection (the statements of the
/// hot paths: an append, a read, a waiter's check, a heartbeat), so that each later use
/// is one round trip instead of two.
async fn prepared(
    client: &impl deadpool_postgres::GenericClient,
    sql: &str,
) -> Result<tokio_postgres::Statement, RunStoreError> {
    client.prepare_cached(sql).await.map_err(unavailable)
}

/// A count or size as PostgreSQL's `bigint` holds it.
fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn status_of(text: &str) -> Result<RunStatus, RunStoreError> {
    RunStatus::parse(text).ok_or_else(|| corrupt(format!("a stored run status {text:?}")))
}

fn fence_text(fence: Fence) -> String {
    format!("{:032x}", fence.0)
}

impl PostgresRunStore {
    /// Connects to the PostgreSQL at `url` (`postgres://user:password@host:port/db` or
    /// `host=… user=… dbname=…`), keeps the store's tables in `schema` (created and
    /// migrated to [`SCHEMA_VERSION`] here), bounded by `limits`, whose defaults for a
    /// store shared by replicas are [`RunLimits::shared`]. The store ignores
    /// [`RunLimits::max_total_bytes`] (the database's disk bounds the whole) and
    /// [`RunLimits::safety_ttl`] (its sweep deletes what expired: a run whose producer
    /// died is ended by a reaper, then expires). Connections are made without TLS.
    pub async fn connect(url: &str, schema: &str, limits: RunLimits) -> Result<Self, ConnectError> {
        if !migrate::valid_schema(schema) {
            return Err(ConnectError::SchemaName(schema.to_owned()));
        }
        let mut config: tokio_postgres::Config = url.parse().map_err(ConnectError::Url)?;
        config.connect_timeout(CONNECT_TIMEOUT);
        // A connection whose peer vanished without a word is found out.
        config.keepalives_idle(KEEPALIVE_IDLE);
        if config.get_application_name().is_none() {
            config.application_name(format!("agui-sdk-postgres {schema}"));
        }
        let listener_config = config.clone();
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(ConnectError::Pool)?;
        let mut client = pool.get().await.map_err(ConnectError::Unreachable)?;
        migrate::migrate(&mut client, schema).await?;
        drop(client);
        let wakeups =
            wake::Wakeups::start(listener_config, schema.to_owned(), CONNECT_TIMEOUT).await;
        let sql = Sql::new(schema, &limits);
        let sweep = Arc::new(Sweep::new(schema, &limits));
        let every = (limits.retention.min(limits.thread_idle_ttl) / 4)
            .clamp(Duration::from_millis(100), SWEEP_AT_MOST_EVERY);
        let sweeper = tokio::spawn(sweep_every(pool.clone(), sweep.clone(), every));
        Ok(PostgresRunStore {
            pool,
            schema: schema.to_owned(),
            limits,
            sql,
            wakeups,
            sweep,
            sweeper,
        })
    }

    /// Deletes now what expired: the ended runs past [`RunLimits::retention`] (with
    /// their events) and the threads idle past [`RunLimits::thread_idle_ttl`] that run
    /// nothing (with their histories). Every store does it on its own every quarter of
    /// the shorter of the two times (at most every 30 seconds); what expired and is not
    /// swept yet is already left out of every read.
    pub async fn sweep(&self) -> Result<Swept, RunStoreError> {
        self.sweep.run(&self.pool).await
    }

    /// The schema holding the store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The limits in force.
    pub fn limits(&self) -> &RunLimits {
        &self.limits
    }

    /// How many notifications (`NOTIFY`) this store's wake-up connection has received:
    /// each append of any replica's store on the same schema sends one.
    pub fn wakeups_received(&self) -> u64 {
        self.wakeups.received()
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, RunStoreError> {
        self.pool.get().await.map_err(unavailable)
    }

    async fn do_create(&self, run: NewRun) -> Result<Created, RunStoreError> {
        let mut client = self.client().await?;
        let fence = Fence::random();
        let tx = client.transaction().await.map_err(unavailable)?;
        // An ended run of this key past its retention, not swept yet, is no more.
        tx.execute(&self.sql.expired_run, &[&run.key.as_str()])
            .await
            .map_err(unavailable)?;
        if let Some(thread) = &run.thread {
            if let Some(existing) = self.do_record(&tx, &run.key).await? {
                return Ok(Created::Existing(existing));
            }
            if let Some(busy) = self.join_thread(&tx, &run, thread).await? {
                return match busy {
                    Joined::Busy(run_id) => Err(RunStoreError::Busy { run_id }),
                    Joined::Attached(r) => Ok(Created::Existing(r)),
                    Joined::Full(n) => Err(RunStoreError::Full(format!(
                        "{n} threads held (max_threads {}), each with a running run",
                        self.limits.max_threads
                    ))),
                };
            }
        }
        let created_at_ms = big(now_ms());
        let lease_ms = big(u64::try_from(run.lease.as_millis()).unwrap_or(u64::MAX));
        let thread = run.thread.as_ref().map(|t| t.as_str());
        let inserted = tx
            .execute(
                &self.sql.create,
                &[
                    &run.key.as_str(),
                    &run.run_id,
                    &run.thread_id,
                    &run.agent,
                    &run.body_hash,
                    &run.replica,
                    &fence_text(fence),
                    &lease_ms,
                    &created_at_ms,
                    &thread,
                ],
            )
            .await
            .map_err(unavailable)?;
        if inserted == 1 {
            tx.commit().await.map_err(unavailable)?;
            return Ok(Created::New(fence));
        }
        // Created by a retry meanwhile (its thread, if any, already names it).
        let existing = self.do_record(&tx, &run.key).await?;
        drop(tx);
        match existing {
            Some(r) => Ok(Created::Existing(r)),
            // Gone between the two statements (a retention sweep): none was created.
            None => Err(RunStoreError::NotFound),
        }
    }

    async fn do_record(
        &self,
        client: &impl deadpool_postgres::GenericClient,
        key: &RunKey,
    ) -> Result<Option<RunRecord>, RunStoreError> {
        let Some(row) = client
            .query_opt(&self.sql.record, &[&key.as_str()])
            .await
            .map_err(unavailable)?
        else {
            return Ok(None);
        };
        let seq = |i: usize| -> u64 { u64::try_from(row.get::<_, i64>(i)).unwrap_or(0) };
        Ok(Some(RunRecord {
            run_id: row.get(0),
            thread_id: row.get(1),
            agent: row.get(2),
            status: status_of(row.get(3))?,
            head: seq(4),
            oldest: seq(5),
            body_hash: row.get(6),
            owner_replica: row.get(7),
            cancel_requested: row.get(8),
            created_at_ms: seq(9),
            finished_at_ms: row
                .get::<_, Option<i64>>(10)
                .map(|t| u64::try_from(t).unwrap_or(0)),
            thread: row.get::<_, Option<&str>>(11).map(ThreadKey::from_text),
        }))
    }

    async fn do_append(
        &self,
        key: &RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
    ) -> Result<(), RunStoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let appended = self
            .append_in(&tx, key, fence, first, events, terminal, false)
            .await?;
        if let (Some(_), Some(thread)) = (terminal, &appended.thread) {
            // A thread run ended by a plain append frees its thread, no entry added.
            tx.execute(
                &self.sql.threads.free,
                &[&thread.as_str(), &key.as_str(), &appended.now],
            )
            .await
            .map_err(unavailable)?;
        }
        self.notify(&tx, key).await?;
        tx.commit().await.map_err(unavailable)
    }

    /// The append in transaction `tx`: locks the run's row, checks the fence, that the
    /// run runs, that `first` follows the head (and with `need_thread`, that the run
    /// belongs to a thread), adds the events, trims to the per-run bounds, and moves
    /// the head (and with `terminal`, ends the run).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn append_in(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        key: &RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
        need_thread: bool,
    ) -> Result<Appended, RunStoreError> {
        let key_text = key.as_str();
        let row = tx
            .query_opt(&prepared(tx, &self.sql.lock).await?, &[&key_text])
            .await
            .map_err(unavailable)?
            .ok_or(RunStoreError::NotFound)?;
        if row.get::<_, &str>(0) != fence_text(fence) {
            return Err(RunStoreError::Fenced);
        }
        if status_of(row.get(1))?.is_terminal() {
            return Err(RunStoreError::Ended);
        }
        let mut head: i64 = row.get(2);
        let mut oldest: i64 = row.get(3);
        let mut bytes: i64 = row.get(4);
        let appended = Appended {
            thread: row.get::<_, Option<String>>(5),
            thread_id: row.get(6),
            agent: row.get(7),
            now: row.get(8),
        };
        if big(first) != head + 1 {
            return Err(RunStoreError::Conflict {
                head: u64::try_from(head).unwrap_or(0),
            });
        }
        if need_thread && appended.thread.is_none() {
            return Err(RunStoreError::NotFound);
        }
        if !events.is_empty() {
            let seqs: Vec<i64> = (0..events.len() as i64).map(|i| head + 1 + i).collect();
            let json: Vec<&[u8]> = events.iter().map(|e| e.as_ref()).collect();
            tx.execute(
                &prepared(tx, &self.sql.insert).await?,
                &[&key_text, &seqs, &json],
            )
            .await
            .map_err(unavailable)?;
            head += events.len() as i64;
            bytes += events.iter().map(|e| e.len() as i64).sum::<i64>();
        }
        // Per-run caps: the oldest events go (a re-attach from before them gets 410);
        // the last one stays.
        let max_events = big(self.limits.max_events_per_run.max(1));
        if head - oldest + 1 > max_events {
            oldest = head - max_events + 1;
            let dropped: i64 = tx
                .query_one(&self.sql.drop_before, &[&key_text, &oldest])
                .await
                .map_err(unavailable)?
                .get(0);
            bytes -= dropped;
        }
        let max_bytes = big(self.limits.max_bytes_per_run.max(1));
        if bytes > max_bytes && head > oldest {
            let cut: i64 = tx
                .query_opt(&self.sql.byte_cut, &[&key_text, &(bytes - max_bytes)])
                .await
                .map_err(unavailable)?
                .map_or(head, |r| r.get(0));
            oldest = (cut + 1).min(head);
            let dropped: i64 = tx
                .query_one(&self.sql.drop_before, &[&key_text, &oldest])
                .await
                .map_err(unavailable)?
                .get(0);
            bytes -= dropped;
        }
        let status = terminal.unwrap_or(RunStatus::Running);
        let finished = terminal.map(|_| appended.now);
        tx.execute(
            &prepared(tx, &self.sql.update).await?,
            &[
                &key_text,
                &head,
                &oldest,
                &bytes,
                &status.as_str(),
                &finished,
            ],
        )
        .await
        .map_err(unavailable)?;
        Ok(appended)
    }

    async fn do_read(
        &self,
        key: &RunKey,
        after: u64,
        limit: usize,
    ) -> Result<Batch, RunStoreError> {
        let client = self.client().await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &prepared(&client, &self.sql.read).await?,
                &[&key.as_str(), &big(after), &limit],
            )
            .await
            .map_err(unavailable)?;
        let first = rows.first().ok_or(RunStoreError::NotFound)?;
        let head = u64::try_from(first.get::<_, i64>(0)).unwrap_or(0);
        let oldest = u64::try_from(first.get::<_, i64>(1)).unwrap_or(1);
        let status = status_of(first.get(2))?;
        if after + 1 < oldest && after < head {
            return Err(RunStoreError::Gone { oldest, head });
        }
        let events = rows
            .iter()
            .filter_map(|r| r.get::<_, Option<Vec<u8>>>(3))
            .map(Bytes::from)
            .collect();
        Ok(Batch {
            first: after + 1,
            events,
            head,
            status,
        })
    }

    /// Whether run `key` has moved past `after` or ended (or is gone): a waiter's check.
    async fn moved(&self, key: &RunKey, after: u64) -> Result<bool, RunStoreError> {
        let client = self.client().await?;
        let Some(row) = client
            .query_opt(&prepared(&client, &self.sql.head).await?, &[&key.as_str()])
            .await
            .map_err(unavailable)?
        else {
            return Ok(true);
        };
        Ok(row.get::<_, i64>(0) > big(after) || status_of(row.get(1))?.is_terminal())
    }
}

impl RunLog for PostgresRunStore {
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
        Box::pin(self.do_append(key, fence, first, events, terminal))
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
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            // Subscribed before the check: an append committed after it is heard.
            let mut wakeups = self.wakeups.subscribe();
            loop {
                match self.moved(key, after).await {
                    Ok(false) => {}
                    Ok(true) => return,
                    Err(e) => {
                        // A wake-up may come early: the waiter reads and sees the error.
                        tracing::debug!(run_key = %key, error = %e, "wait: cannot read the head");
                        return;
                    }
                }
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return;
                }
                let until = (now + FALLBACK).min(deadline);
                loop {
                    match tokio::time::timeout_at(until, wakeups.recv()).await {
                        Ok(Ok(wake::Wake::Run(k))) if &*k == key.as_str() => return,
                        Ok(Ok(wake::Wake::Run(_))) => {}
                        // Notifications may have been lost: check the run.
                        Ok(Ok(wake::Wake::All)) | Ok(Err(RecvError::Lagged(_))) => break,
                        Ok(Err(RecvError::Closed)) => {
                            tokio::time::sleep_until(until).await;
                            break;
                        }
                        // The fallback's time (or the deadline): check the run.
                        Err(_) => break,
                    }
                }
            }
        })
    }

    fn record<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, Option<RunRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            self.do_record(&client, key).await
        })
    }
}

impl PostgresRunStore {
    /// Wakes the waiters on run `key`, in every replica, when `tx` commits.
    async fn notify(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        key: &RunKey,
    ) -> Result<(), RunStoreError> {
        tx.execute(
            &prepared(tx, &self.sql.notify).await?,
            &[&self.schema, &key.as_str()],
        )
        .await
        .map_err(unavailable)?;
        Ok(())
    }

    /// Whether run `key` exists: what tells a stale fence from no run, and an ended
    /// run from no run.
    async fn exists(
        &self,
        client: &impl deadpool_postgres::GenericClient,
        key: &RunKey,
    ) -> Result<bool, RunStoreError> {
        Ok(client
            .query_opt(&self.sql.exists, &[&key.as_str()])
            .await
            .map_err(unavailable)?
            .is_some())
    }

    async fn do_heartbeat(&self, key: &RunKey, fence: Fence) -> Result<Heartbeat, RunStoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &prepared(&client, &self.sql.heartbeat).await?,
                &[&key.as_str(), &fence_text(fence)],
            )
            .await
            .map_err(unavailable)?;
        match row {
            Some(row) => Ok(Heartbeat {
                cancel_requested: row.get(0),
            }),
            None if self.exists(&client, key).await? => Err(RunStoreError::Fenced),
            None => Err(RunStoreError::NotFound),
        }
    }

    async fn do_request_cancel(&self, key: &RunKey) -> Result<CancelOutcome, RunStoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(&self.sql.cancel, &[&key.as_str()])
            .await
            .map_err(unavailable)?;
        match row {
            Some(_) => Ok(CancelOutcome::Requested),
            None if self.exists(&client, key).await? => Ok(CancelOutcome::AlreadyEnded),
            None => Err(RunStoreError::NotFound),
        }
    }

    async fn do_expired_leases(&self, limit: usize) -> Result<Vec<RunKey>, RunStoreError> {
        let client = self.client().await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(&self.sql.expired, &[&limit])
            .await
            .map_err(unavailable)?;
        Ok(rows
            .iter()
            .map(|r| RunKey::from_text(r.get::<_, &str>(0)))
            .collect())
    }

    async fn do_take_over(
        &self,
        key: &RunKey,
        replica: &str,
    ) -> Result<Option<(Fence, u64)>, RunStoreError> {
        let client = self.client().await?;
        let fence = Fence::random();
        let row = client
            .query_opt(
                &self.sql.take_over,
                &[&key.as_str(), &fence_text(fence), &replica],
            )
            .await
            .map_err(unavailable)?;
        Ok(row.map(|r| (fence, u64::try_from(r.get::<_, i64>(0)).unwrap_or(0))))
    }
}

/// Leases in the runs' rows, timed by the database's clock: a heartbeat moves the
/// run's `lease_until_ms`; the expired leases are found by a partial index over the
/// running runs; a take-over is one conditional `UPDATE` that mints a new fence, so
/// two reapers cannot both take a run over and the old producer's next append or
/// heartbeat is [`RunStoreError::Fenced`].
impl Leases for PostgresRunStore {
    fn heartbeat<'a>(&'a self, key: &'a RunKey, fence: Fence) -> RunStoreFuture<'a, Heartbeat> {
        Box::pin(self.do_heartbeat(key, fence))
    }

    fn request_cancel<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, CancelOutcome> {
        Box::pin(self.do_request_cancel(key))
    }

    fn expired_leases(&self, limit: usize) -> RunStoreFuture<'_, Vec<RunKey>> {
        Box::pin(self.do_expired_leases(limit))
    }

    fn take_over<'a>(
        &'a self,
        key: &'a RunKey,
        replica: &'a str,
    ) -> RunStoreFuture<'a, Option<(Fence, u64)>> {
        Box::pin(self.do_take_over(key, replica))
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
