//! The thread index of [`PostgresRunStore`]: threads as an index over its runs, in the
//! tables `threads`, `thread_history` and `thread_message_ids` (migration 3).
//!
//! # The owners' lists
//!
//! A list is ordered by the time each thread's last run ended, then by its key, both
//! descending, and filtered by agent and by the archived flag. Two indexes hold that
//! order, `(owner, archived, last_run_at_ms DESC, key DESC)` and `(owner, agent,
//! archived, last_run_at_ms DESC, key DESC)`, over the listed threads only. A page is
//! one statement: one index range per (agent, archived) pair the filters name (one
//! for no agent and no archived thread; four for two agents, archived ones too), each
//! read from the cursor on (keyset: `(last_run_at_ms, key) < cursor`) and stopped at
//! the limit, merged by one sort of at most four times the limit. A page costs what it
//! returns and the index descent, not the owner's set, however little the filters
//! match. Before it, one bounded statement forgets the owner's threads idle past
//! [`RunLimits::thread_idle_ttl`](agui_sdk_agent::runs::RunLimits::thread_idle_ttl)
//! (through the index `(owner, touched_at_ms)`); those not yet forgotten are left out
//! by every read.
//!
//! # The thread cap
//!
//! How many threads the store holds is kept by triggers on `threads` in the sixteen
//! rows of `thread_count` (migration 5): each connection adds and takes away in a
//! shard of its own (its backend's pid modulo the shards), and the count is their
//! sum. New threads made on different connections therefore do not wait for one
//! another (they did on the single row of migration 3, one at a time store-wide); two
//! connections whose pids share a shard do.
//!
//! A new thread's count (taken after its own shard's row was updated, so every
//! creation committed before is in it) may miss the creations in flight, uncommitted:
//! at most one per other shard, since each holds its shard's row until it commits. So
//! while the count plus the shards less one is within `max_threads`, no creation can
//! take the store past it. Past that, close to the cap, the create starts again in a
//! transaction that sets `agui.thread_count_exact`: there the trigger first locks every
//! shard, in order, so the creations in flight end before the count is read, and the
//! count is exact (those creations wait for it in turn, as on the single row). The
//! cap is kept exactly, with the eviction it always had; a store that last saw a count
//! close to its cap starts its creations exact, until one sees it far again. A run of
//! a thread the store holds already touches no shard.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use agui_sdk_agent::runs::{
    Fence, LiveRun, NewRun, RunKey, RunRecord, RunStatus, RunStoreError, RunStoreFuture,
    ThreadEntry, ThreadIndex, ThreadKey, ThreadQuery, ThreadRecord, ThreadSummary, ThreadUpdate,
};
use bytes::Bytes;
use deadpool_postgres::Transaction;

use crate::{big, prepared, unavailable, PostgresRunStore, NOW_MS, STATEMENT_MS};

/// Most idle threads of one owner a list forgets before it reads its page.
const SWEEP_PER_LIST: i64 = 256;

/// What a new thread run found in its thread, when it cannot simply join it.
pub(crate) enum Joined {
    /// Another run of the thread is running: its run id.
    Busy(String),
    /// The run itself is the thread's live run (a retried create): its record.
    Attached(RunRecord),
    /// The store holds its most threads and each runs a run: how many.
    Full(i64),
    /// The store is close to its thread cap and the count was not exact: the create
    /// starts again in a transaction that counts exactly.
    Recount,
}

/// The thread index's SQL, written for the store's schema.
#[derive(Debug)]
pub(crate) struct ThreadSql {
    schema: String,
    insert: String,
    lock: String,
    forget_row: String,
    count: String,
    pub(crate) exact: String,
    evict: String,
    drop_last: String,
    join: String,
    end: String,
    history: String,
    ids: String,
    trim: String,
    untrim: String,
    read: String,
    sweep: String,
    update: String,
    forget_lock: String,
    forget_history: String,
    forget_ids: String,
    unlist: String,
}

/// A thread's summary's columns, in [`summary`]'s order.
const SUMMARY: &str =
    "key, thread_id, agent, created_at_ms, updated_at_ms, last_run_at_ms, name, archived";

impl ThreadSql {
    pub(crate) fn new(s: &str) -> Self {
        let running = format!(
            "EXISTS (SELECT 1 FROM {s}.runs r WHERE r.key = t.live AND r.status = 'running')"
        );
        ThreadSql {
            schema: s.to_owned(),
            insert: format!(
                "INSERT INTO {s}.threads (key, owner, thread_id, agent, touched_at_ms) \
                 VALUES ($1, $2, $3, $4, {NOW_MS}) ON CONFLICT (key) DO NOTHING RETURNING key"
            ),
            lock: format!(
                "SELECT t.live, t.live_run, t.last_run, {running}, \
                 t.touched_at_ms < {NOW_MS} - $2 \
                 FROM {s}.threads t WHERE t.key = $1 FOR UPDATE"
            ),
            forget_row: format!("DELETE FROM {s}.threads WHERE key = $1"),
            count: format!("SELECT sum(n)::bigint, count(*) FROM {s}.thread_count"),
            exact: "SELECT set_config('agui.thread_count_exact', 'on', true)".to_owned(),
            evict: format!(
                "DELETE FROM {s}.threads WHERE key IN (SELECT t.key FROM {s}.threads t \
                 WHERE t.key <> $1 AND NOT {running} \
                 ORDER BY t.touched_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED)"
            ),
            drop_last: format!("DELETE FROM {s}.runs WHERE key = $1 AND status <> 'running'"),
            join: format!(
                "UPDATE {s}.threads SET live = $2, live_run = $3, last_run = $2, thread_id = $4, \
                 agent = $5, touched_at_ms = {NOW_MS} WHERE key = $1"
            ),
            end: format!(
                "UPDATE {s}.threads SET \
                 live = CASE WHEN live = $2 THEN NULL ELSE live END, \
                 live_run = CASE WHEN live = $2 THEN NULL ELSE live_run END, \
                 created_at_ms = coalesce(created_at_ms, $3), updated_at_ms = $3, \
                 last_run_at_ms = $3, touched_at_ms = $3, \
                 hist_events = hist_events + $4, hist_bytes = hist_bytes + $5 \
                 WHERE key = $1 RETURNING hist_events, hist_bytes"
            ),
            history: format!(
                "INSERT INTO {s}.thread_history (thread, events, count) VALUES ($1, $2, $3)"
            ),
            ids: format!(
                "INSERT INTO {s}.thread_message_ids (thread, id) SELECT $1, unnest($2::text[]) \
                 ON CONFLICT DO NOTHING"
            ),
            // The newest entries whose running totals fit the bounds stay (the newest
            // always): the oldest go.
            trim: format!(
                "WITH h AS (SELECT n, count, octet_length(events)::bigint AS b, \
                 (sum(count) OVER w)::bigint AS ce, (sum(octet_length(events)) OVER w)::bigint AS cb, \
                 row_number() OVER w AS rn FROM {s}.thread_history WHERE thread = $1 \
                 WINDOW w AS (ORDER BY n DESC)), \
                 d AS (DELETE FROM {s}.thread_history x USING h \
                 WHERE x.thread = $1 AND x.n = h.n AND h.rn > 1 AND (h.ce > $2 OR h.cb > $3) \
                 RETURNING h.count, h.b) \
                 SELECT coalesce(sum(count), 0)::bigint, coalesce(sum(b), 0)::bigint FROM d"
            ),
            untrim: format!(
                "UPDATE {s}.threads SET hist_events = hist_events - $2, \
                 hist_bytes = hist_bytes - $3 WHERE key = $1"
            ),
            read: format!(
                "SELECT t.live, t.live_run, {running}, \
                 ARRAY(SELECT h.events FROM {s}.thread_history h WHERE h.thread = t.key \
                 ORDER BY h.n), \
                 ARRAY(SELECT i.id FROM {s}.thread_message_ids i WHERE i.thread = t.key) \
                 FROM {s}.threads t WHERE t.key = $1 \
                 AND (t.touched_at_ms >= {STATEMENT_MS} - $2 OR t.live IS NOT NULL)"
            ),
            sweep: format!(
                "DELETE FROM {s}.threads WHERE key IN (SELECT key FROM {s}.threads \
                 WHERE owner = $1 AND touched_at_ms < {STATEMENT_MS} - $2 AND live IS NULL \
                 ORDER BY touched_at_ms LIMIT $3 FOR UPDATE SKIP LOCKED)"
            ),
            update: format!(
                "UPDATE {s}.threads SET name = coalesce($2, name), \
                 archived = coalesce($3, archived), \
                 updated_at_ms = greatest({STATEMENT_MS}, updated_at_ms), \
                 touched_at_ms = {STATEMENT_MS} \
                 WHERE key = $1 AND last_run_at_ms IS NOT NULL \
                 AND (touched_at_ms >= {STATEMENT_MS} - $4 OR live IS NOT NULL) \
                 RETURNING {SUMMARY}"
            ),
            forget_lock: format!(
                "SELECT live IS NOT NULL, touched_at_ms >= {STATEMENT_MS} - $2 \
                 FROM {s}.threads WHERE key = $1 FOR UPDATE"
            ),
            forget_history: format!("DELETE FROM {s}.thread_history WHERE thread = $1"),
            forget_ids: format!("DELETE FROM {s}.thread_message_ids WHERE thread = $1"),
            unlist: format!(
                "UPDATE {s}.threads SET created_at_ms = NULL, updated_at_ms = NULL, \
                 last_run_at_ms = NULL, name = NULL, archived = false, hist_events = 0, \
                 hist_bytes = 0, touched_at_ms = {NOW_MS} WHERE key = $1"
            ),
        }
    }

    /// A page of an owner's list: `$1` the owner, `$2` the idle time in ms, `$3` the
    /// limit, `$4` and `$5` the cursor (with `cursor`), then the agents (`agents` of
    /// them). One index range per (agent, archived) pair, merged.
    pub(crate) fn list(&self, agents: usize, include_archived: bool, cursor: bool) -> String {
        let s = &self.schema;
        let first_agent = if cursor { 6 } else { 4 };
        let agent_filters: Vec<Option<usize>> = if agents == 0 {
            vec![None]
        } else {
            (0..agents).map(|i| Some(first_agent + i)).collect()
        };
        let archived: &[bool] = if include_archived {
            &[false, true]
        } else {
            &[false]
        };
        let mut ranges = Vec::new();
        for agent in &agent_filters {
            for a in archived {
                let agent = agent.map_or(String::new(), |p| format!(" AND agent = ${p}"));
                let after = if cursor {
                    " AND (last_run_at_ms, key) < ($4, $5)"
                } else {
                    ""
                };
                ranges.push(format!(
                    "(SELECT {SUMMARY} FROM {s}.threads WHERE owner = $1{agent} \
                     AND archived = {a} AND last_run_at_ms IS NOT NULL{after} \
                     AND touched_at_ms >= {STATEMENT_MS} - $2 \
                     ORDER BY last_run_at_ms DESC, key DESC LIMIT $3)"
                ));
            }
        }
        if ranges.len() == 1 {
            return ranges.pop().unwrap_or_default();
        }
        format!(
            "SELECT * FROM ({}) u ORDER BY last_run_at_ms DESC, key DESC LIMIT $3",
            ranges.join(" UNION ALL ")
        )
    }
}

fn ms(v: Option<i64>) -> u64 {
    v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0)
}

/// A summary from a row of [`SUMMARY`]'s columns.
fn summary(row: &tokio_postgres::Row) -> ThreadSummary {
    ThreadSummary {
        key: ThreadKey::from_text(row.get(0)),
        thread_id: row.get(1),
        agent: row.get(2),
        created_at_ms: ms(row.get(3)),
        updated_at_ms: ms(row.get(4)),
        last_run_at_ms: ms(row.get(5)),
        name: row.get(6),
        archived: row.get(7),
    }
}

impl PostgresRunStore {
    fn idle_ms(&self) -> i64 {
        big(u64::try_from(self.limits.thread_idle_ttl.as_millis()).unwrap_or(u64::MAX))
    }

    /// Makes `run` its thread's live run in `tx`: the thread is created when the store
    /// does not hold it (or forgot it for idleness), room made for it past the thread
    /// cap by forgetting the threads idle the longest that run nothing; the thread's
    /// previous run, in its history, loses its log. `None` when the run joined. With
    /// `exact`, `tx` counts threads exactly (it set `agui.thread_count_exact`);
    /// without, a new thread close to the cap is [`Joined::Recount`].
    pub(crate) async fn join_thread(
        &self,
        tx: &Transaction<'_>,
        run: &NewRun,
        thread: &ThreadKey,
        exact: bool,
    ) -> Result<Option<Joined>, RunStoreError> {
        let sql = &self.sql.threads;
        let key = thread.as_str();
        let row = loop {
            let inserted = tx
                .query_opt(
                    &sql.insert,
                    &[&key, &thread.scope(), &run.thread_id, &run.agent],
                )
                .await
                .map_err(unavailable)?
                .is_some();
            if inserted {
                let count = tx.query_one(&sql.count, &[]).await.map_err(unavailable)?;
                let (n, shards): (i64, i64) = (count.get(0), count.get(1));
                let max = big(self.limits.max_threads.max(1));
                // As many creations as shards, less this one, may be in flight unseen.
                let near = n + shards - 1 > max;
                if !exact {
                    if near {
                        return Ok(Some(Joined::Recount));
                    }
                    self.near_cap.store(false, Ordering::Relaxed);
                } else {
                    self.near_cap.store(near, Ordering::Relaxed);
                }
                if n > max {
                    let evicted = tx
                        .execute(&sql.evict, &[&key, &(n - max)])
                        .await
                        .map_err(unavailable)?;
                    if (evicted as i64) < n - max {
                        return Ok(Some(Joined::Full(n - 1 - evicted as i64)));
                    }
                }
            }
            let row = tx
                .query_one(&sql.lock, &[&key, &self.idle_ms()])
                .await
                .map_err(unavailable)?;
            let (running, idle): (bool, bool) = (row.get(3), row.get(4));
            if !inserted && idle && !running {
                // Forgotten for idleness: this run starts it anew.
                tx.execute(&sql.forget_row, &[&key])
                    .await
                    .map_err(unavailable)?;
                continue;
            }
            break row;
        };
        let live: Option<&str> = row.get(0);
        if row.get::<_, bool>(3) {
            if live == Some(run.key.as_str()) {
                return match self.do_record(tx, &run.key).await? {
                    Some(r) => Ok(Some(Joined::Attached(r))),
                    None => Err(RunStoreError::NotFound),
                };
            }
            return Ok(Some(Joined::Busy(
                row.get::<_, Option<String>>(1).unwrap_or_default(),
            )));
        }
        if let Some(last) = row.get::<_, Option<&str>>(2) {
            if last != run.key.as_str() {
                tx.execute(&sql.drop_last, &[&last])
                    .await
                    .map_err(unavailable)?;
            }
        }
        tx.execute(
            &sql.join,
            &[
                &key,
                &run.key.as_str(),
                &run.run_id,
                &run.thread_id,
                &run.agent,
            ],
        )
        .await
        .map_err(unavailable)?;
        Ok(None)
    }

    async fn do_end_thread_run(
        &self,
        key: &RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        status: RunStatus,
        entry: ThreadEntry,
    ) -> Result<(), RunStoreError> {
        let sql = &self.sql.threads;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let appended = self
            .append_in(&tx, key, fence, first, &events, Some(status), true)
            .await?;
        let thread = appended.thread.as_deref().ok_or(RunStoreError::NotFound)?;
        let scope = ThreadKey::from_text(thread);
        // A thread forgotten meanwhile is held again: its run ended.
        tx.execute(
            &sql.insert,
            &[
                &thread,
                &scope.scope(),
                &appended.thread_id,
                &appended.agent,
            ],
        )
        .await
        .map_err(unavailable)?;
        let count = big(entry.count as u64);
        let bytes = big(entry.events.len() as u64);
        let row = tx
            .query_one(
                &sql.end,
                &[&thread, &key.as_str(), &appended.now, &count, &bytes],
            )
            .await
            .map_err(unavailable)?;
        tx.execute(&sql.history, &[&thread, &entry.events.as_ref(), &count])
            .await
            .map_err(unavailable)?;
        if !entry.message_ids.is_empty() {
            tx.execute(&sql.ids, &[&thread, &entry.message_ids])
                .await
                .map_err(unavailable)?;
        }
        let (total, size): (i64, i64) = (row.get(0), row.get(1));
        let max_events = big(self.limits.max_history_events.max(1));
        let max_bytes = big(self.limits.max_history_bytes.max(1));
        if total > max_events || size > max_bytes {
            let cut = tx
                .query_one(&sql.trim, &[&thread, &max_events, &max_bytes])
                .await
                .map_err(unavailable)?;
            let (events, bytes): (i64, i64) = (cut.get(0), cut.get(1));
            tx.execute(&sql.untrim, &[&thread, &events, &bytes])
                .await
                .map_err(unavailable)?;
        }
        tx.commit().await.map_err(unavailable)
    }

    async fn do_thread(&self, key: &ThreadKey) -> Result<Option<ThreadRecord>, RunStoreError> {
        let client = self.client().await?;
        let Some(row) = client
            .query_opt(
                &prepared(&client, &self.sql.threads.read).await?,
                &[&key.as_str(), &self.idle_ms()],
            )
            .await
            .map_err(unavailable)?
        else {
            return Ok(None);
        };
        let live = match (row.get::<_, Option<&str>>(0), row.get::<_, bool>(2)) {
            (Some(live), true) => Some(LiveRun {
                key: RunKey::from_text(live),
                run_id: row.get::<_, Option<String>>(1).unwrap_or_default(),
            }),
            _ => None,
        };
        let history = row
            .get::<_, Vec<Vec<u8>>>(3)
            .into_iter()
            .map(|events| ThreadEntry::from_parts(Bytes::from(events), Vec::new()))
            .collect();
        let ids: HashSet<String> = row.get::<_, Vec<String>>(4).into_iter().collect();
        Ok(Some(ThreadRecord {
            history,
            live,
            known_message_ids: Arc::new(ids),
        }))
    }

    async fn do_list_threads(
        &self,
        scope: &str,
        query: &ThreadQuery,
    ) -> Result<Vec<ThreadSummary>, RunStoreError> {
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        let idle = self.idle_ms();
        let sweep = prepared(&client, &self.sql.threads.sweep).await?;
        let (sql, params) = self.list_statement(scope, query, &idle);
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p.as_ref() as _).collect();
        // The sweep and the page are pipelined, the server running them in order: the
        // sweep goes with the page's planning, a round trip saved. The page is planned
        // for its owner each time, not prepared: a generic plan would not know whether
        // the owner has ten threads or ten thousand.
        let swept: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
            [&scope, &idle, &SWEEP_PER_LIST];
        let (_, rows) = tokio::try_join!(client.execute(&sweep, &swept), client.query(&sql, &refs))
            .map_err(unavailable)?;
        Ok(rows.iter().map(summary).collect())
    }

    /// The statement of a list page and its parameters.
    fn list_statement(
        &self,
        scope: &str,
        query: &ThreadQuery,
        idle: &i64,
    ) -> (
        String,
        Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>>,
    ) {
        let mut agents: Vec<&String> = Vec::new();
        for a in &query.agents {
            if !agents.contains(&a) {
                agents.push(a);
            }
        }
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let mut params: Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>> =
            vec![Box::new(scope.to_owned()), Box::new(*idle), Box::new(limit)];
        if let Some((ms, key)) = &query.after {
            params.push(Box::new(big(*ms)));
            params.push(Box::new(key.as_str().to_owned()));
        }
        for a in &agents {
            params.push(Box::new((*a).clone()));
        }
        let sql =
            self.sql
                .threads
                .list(agents.len(), query.include_archived, query.after.is_some());
        (sql, params)
    }

    /// The plan PostgreSQL chooses for the statement that reads a page of
    /// [`list_threads`](ThreadIndex::list_threads) (`EXPLAIN`, as text): how to check
    /// that a list reads the indexes from its cursor on and not an owner's whole set.
    pub async fn explain_list_threads(
        &self,
        scope: &str,
        query: &ThreadQuery,
    ) -> Result<String, RunStoreError> {
        let client = self.client().await?;
        let (sql, params) = self.list_statement(scope, query, &self.idle_ms());
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p.as_ref() as _).collect();
        let rows = client
            .query(&format!("EXPLAIN {sql}"), &refs)
            .await
            .map_err(unavailable)?;
        Ok(rows
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    async fn do_update_thread(
        &self,
        key: &ThreadKey,
        update: ThreadUpdate,
    ) -> Result<Option<ThreadSummary>, RunStoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &self.sql.threads.update,
                &[
                    &key.as_str(),
                    &update.name,
                    &update.archived,
                    &self.idle_ms(),
                ],
            )
            .await
            .map_err(unavailable)?;
        Ok(row.as_ref().map(summary))
    }

    async fn do_forget_thread(&self, key: &ThreadKey) -> Result<bool, RunStoreError> {
        let sql = &self.sql.threads;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let Some(row) = tx
            .query_opt(&sql.forget_lock, &[&key.as_str(), &self.idle_ms()])
            .await
            .map_err(unavailable)?
        else {
            return Ok(false);
        };
        let (live, alive): (bool, bool) = (row.get(0), row.get(1));
        if live {
            // Its running run stays, and with it the thread; the history goes.
            for statement in [&sql.forget_history, &sql.forget_ids, &sql.unlist] {
                tx.execute(statement, &[&key.as_str()])
                    .await
                    .map_err(unavailable)?;
            }
        } else {
            tx.execute(&sql.forget_row, &[&key.as_str()])
                .await
                .map_err(unavailable)?;
        }
        tx.commit().await.map_err(unavailable)?;
        Ok(live || alive)
    }
}

/// Threads in the tables of migration 3. A thread run's create joins its thread in the
/// create's transaction; its end, in the append's. A list page is one statement over
/// the indexes in the list's order, `(owner, archived, last_run_at_ms DESC, key DESC)`
/// and `(owner, agent, archived, …)`, read from the cursor on (keyset pages).
impl ThreadIndex for PostgresRunStore {
    fn end_thread_run<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        status: RunStatus,
        entry: ThreadEntry,
    ) -> RunStoreFuture<'a, ()> {
        Box::pin(self.do_end_thread_run(key, fence, first, events, status, entry))
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

    fn update_thread<'a>(
        &'a self,
        key: &'a ThreadKey,
        update: ThreadUpdate,
    ) -> RunStoreFuture<'a, Option<ThreadSummary>> {
        Box::pin(self.do_update_thread(key, update))
    }

    fn forget_thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, bool> {
        Box::pin(self.do_forget_thread(key))
    }
}
