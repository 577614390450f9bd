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
//! | `events` | one row per kept event, by run key and seq: the event's JSON, as the bytes it was sent as (`bytea`); deleted with its run (a trigger on `runs`) |
//! | `threads` | one row per thread: its live and latest runs, its summary, its last write |
//! | `thread_history` | each ended run of a thread, compacted, in order |
//! | `thread_message_ids` | the ids of the messages a thread's history records |
//! | `thread_count` | how many threads the store holds, in shards (kept by triggers), for the cap |
//! | `interrupts` | one row per thread with interrupts kept: the ledger's document and its version, replaced by compare-and-swap, and when it expires |
//!
//! An append is one statement, prepared once per connection and sent alone (its own
//! transaction, one round trip): it locks its run's row (`FOR UPDATE`), checks the
//! fence, that the run runs and that the batch starts right after the head, adds the
//! events, trims the oldest past [`RunLimits::max_events_per_run`] and
//! [`RunLimits::max_bytes_per_run`] (the last one always kept), moves the head and
//! notifies the run's waiters, with data-modifying `WITH` queries. A
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

use std::sync::Arc;

use agui_sdk_agent::runs::{Fence, RunLimits, RunStatus, RunStoreError};
use deadpool_postgres::Pool;

mod append;
mod connect;
mod leases;
mod ledger;
mod log;
mod migrate;
mod sweep;
mod threads;
mod wake;

use sweep::Sweep;

pub use connect::ConnectError;
pub use migrate::{MIGRATIONS, SCHEMA_VERSION};
pub use sweep::Swept;

pub use wake::FALLBACK;

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
    append: String,
    record: String,
    read: String,
    head: String,
    expired_run: String,
    exists: String,
    heartbeat: String,
    cancel: String,
    expired: String,
    take_over: String,
    threads: threads::ThreadSql,
    ledger: ledger::LedgerSql,
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
            append: append::sql(s, limits),
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
            threads: threads::ThreadSql::new(s),
            ledger: ledger::LedgerSql::new(s),
        }
    }
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
    /// Whether the last thread count seen was close to the thread cap: new threads are
    /// then counted exactly from the start (see the `threads` module).
    near_cap: std::sync::atomic::AtomicBool,
}

impl Drop for PostgresRunStore {
    fn drop(&mut self) {
        self.sweeper.abort();
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

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
