//! The sweep: deleting the ended runs past their retention, the idle threads and the
//! expired interrupt ledger entries.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::{RunLimits, RunStoreError};
use deadpool_postgres::Pool;

use crate::{big, unavailable, STATEMENT_MS};

/// Most rows one statement of a sweep deletes.
const SWEEP_BATCH: i64 = 500;

/// The longest time between two sweeps.
pub(crate) const SWEEP_AT_MOST_EVERY: Duration = Duration::from_secs(30);

/// The statements of a sweep: the ended runs past their retention, and the threads
/// idle past their time that run nothing, the oldest first, in bounded batches.
#[derive(Debug)]
pub(crate) struct Sweep {
    runs: String,
    threads: String,
    interrupts: String,
}

impl Sweep {
    pub(crate) fn new(s: &str, limits: &RunLimits) -> Self {
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
            interrupts: format!(
                "DELETE FROM {s}.interrupts WHERE key IN (SELECT key FROM {s}.interrupts \
                 WHERE expires_at_ms <= {STATEMENT_MS} \
                 ORDER BY expires_at_ms LIMIT $1 FOR UPDATE SKIP LOCKED)"
            ),
        }
    }

    /// Deletes what expired; how many runs and threads.
    pub(crate) async fn run(&self, pool: &Pool) -> Result<Swept, RunStoreError> {
        let client = pool.get().await.map_err(unavailable)?;
        let mut swept = Swept::default();
        for (statement, count) in [
            (&self.runs, &mut swept.runs),
            (&self.threads, &mut swept.threads),
            (&self.interrupts, &mut swept.interrupts),
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

/// What a sweep deleted: see [`PostgresRunStore::sweep`](crate::PostgresRunStore::sweep).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Ended runs past [`RunLimits::retention`], with their events.
    pub runs: u64,
    /// Threads idle past [`RunLimits::thread_idle_ttl`], with their histories.
    pub threads: u64,
    /// Interrupt ledger entries past their time.
    pub interrupts: u64,
}

/// Sweeps every quarter of the shorter of the retention and the thread idle time (at
/// least every 100 ms, at most every 30 s), for as long as the store lives.
pub(crate) async fn sweep_every(pool: Pool, sweep: Arc<Sweep>, every: Duration) {
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
