//! The append: one statement, prepared once per connection, that checks the run (its
//! fence, that it runs, that the batch starts right after its head), adds the batch's
//! events, trims the oldest past the per-run caps, moves the head (and ends the run),
//! frees the run's thread when a plain append ends it, and notifies the waiters. Sent
//! alone it is its own transaction: one round trip, where a `BEGIN`, a locking read, an
//! `INSERT`, an `UPDATE`, a `NOTIFY` and a `COMMIT` took six.
//!
//! Its data-modifying parts all see one snapshot, so the trimming is computed over the
//! kept events and the batch together: the events the caps drop are deleted when kept,
//! and not inserted when in the batch. What it keeps, and the run's head, oldest event
//! and bytes, are what the statements run one after the other kept before. It reads the
//! kept events only when a cap drops some (the count cap reads those it drops; the
//! byte cap, those from the count cap's oldest on), so an append within the caps reads
//! none.

use agui_sdk_agent::runs::{Fence, RunKey, RunLimits, RunStatus, RunStoreError};
use bytes::Bytes;

use crate::{big, corrupt, fence_text, prepared, status_of, unavailable, PostgresRunStore, NOW_MS};

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

/// The append's statement, written for schema `s` and the per-run caps of `limits`.
///
/// Parameters: `$1` the run's key, `$2` the fence (32 hex digits), `$3` the first
/// event's seq, `$4` the events (`bytea[]`), `$5` the terminal status or `NULL`, `$6`
/// whether the run must belong to a thread (a thread run's end, whose transaction then
/// updates the thread itself; otherwise an ending append frees the run's thread).
///
/// One row when the run exists (none otherwise): its fence, status and head as locked
/// (`FOR UPDATE`, before the append), its thread, thread id and agent, the database's
/// clock, and whether the append was made (every check passed).
pub(crate) fn sql(s: &str, limits: &RunLimits) -> String {
    let max_events = big(limits.max_events_per_run.max(1));
    let max_bytes = big(limits.max_bytes_per_run.max(1));
    format!(
        "WITH r AS (\
           SELECT fence, status, head, oldest, bytes, thread, thread_id, agent, {NOW_MS} AS now, \
           (fence = $2 AND status = 'running' AND head + 1 = $3 \
            AND (thread IS NOT NULL OR NOT $6::boolean)) AS ok \
           FROM {s}.runs WHERE key = $1 FOR UPDATE), \
         batch AS (\
           SELECT r.head + e.i AS seq, e.ev, octet_length(e.ev)::bigint AS len \
           FROM r, unnest($4::bytea[]) WITH ORDINALITY AS e (ev, i) WHERE r.ok), \
         c AS (\
           SELECT r.head + n.k AS head, r.oldest, r.bytes + n.b AS bytes, \
           CASE WHEN r.head + n.k - r.oldest + 1 > {max_events} \
             THEN r.head + n.k - {max_events} + 1 ELSE r.oldest END AS o1 \
           FROM r, (SELECT count(*) AS k, coalesce(sum(len), 0)::bigint AS b FROM batch) n \
           WHERE r.ok), \
         d1 AS (\
           SELECT coalesce(sum(len), 0)::bigint AS b FROM (\
             SELECT octet_length(event)::bigint AS len FROM {s}.events \
             WHERE key = $1 AND seq < (SELECT o1 FROM c) AND (SELECT o1 > oldest FROM c) \
             UNION ALL SELECT len FROM batch WHERE seq < (SELECT o1 FROM c)) x), \
         b AS (\
           SELECT c.head, c.o1, c.bytes - d1.b AS bytes, \
           (c.bytes - d1.b > {max_bytes} AND c.head > c.o1) AS cut \
           FROM c, d1), \
         u AS (\
           SELECT seq, octet_length(event)::bigint AS len FROM {s}.events \
           WHERE key = $1 AND seq >= (SELECT o1 FROM b) AND (SELECT cut FROM b) \
           UNION ALL SELECT seq, len FROM batch \
           WHERE seq >= (SELECT o1 FROM b) AND (SELECT cut FROM b)), \
         k AS (\
           SELECT b.head, b.bytes, CASE WHEN b.cut THEN least(coalesce(\
             (SELECT seq FROM (SELECT seq, sum(len) OVER (ORDER BY seq) AS upto FROM u) w \
              WHERE upto >= b.bytes - {max_bytes} ORDER BY seq LIMIT 1), b.head) + 1, b.head) \
             ELSE b.o1 END AS oldest \
           FROM b), \
         f AS (\
           SELECT k.head, k.oldest, \
           k.bytes - coalesce((SELECT sum(len) FROM u WHERE seq < k.oldest), 0)::bigint AS bytes \
           FROM k), \
         del AS (\
           DELETE FROM {s}.events WHERE key = $1 AND seq < (SELECT oldest FROM f) \
           AND (SELECT f.oldest > r.oldest FROM f, r)), \
         ins AS (\
           INSERT INTO {s}.events (key, seq, event) \
           SELECT $1, seq, ev FROM batch WHERE seq >= (SELECT oldest FROM f)), \
         up AS (\
           UPDATE {s}.runs x SET head = f.head, oldest = f.oldest, bytes = f.bytes, \
           status = coalesce($5::text, 'running'), \
           finished_at_ms = CASE WHEN $5::text IS NULL THEN NULL ELSE r.now END \
           FROM f, r WHERE x.key = $1 RETURNING x.key), \
         fr AS (\
           UPDATE {s}.threads t SET live = NULL, live_run = NULL, touched_at_ms = r.now \
           FROM r, up WHERE $5::text IS NOT NULL AND NOT $6::boolean \
           AND t.key = r.thread AND t.live = $1) \
         SELECT r.fence, r.status, r.head, r.thread, r.thread_id, r.agent, r.now, \
         (SELECT count(*) FROM (SELECT pg_notify('{s}', up.key) FROM up) n) = 1 \
         FROM r"
    )
}

impl PostgresRunStore {
    /// The append on `client` (a connection: its own transaction; or a transaction,
    /// whose commit then makes it and delivers its notification): checks the fence,
    /// that the run runs, that `first` follows the head (and with `need_thread`, that
    /// the run belongs to a thread), adds the events, trims to the per-run bounds,
    /// moves the head (and with `terminal`, ends the run; without `need_thread`, frees
    /// its thread), and notifies the run's waiters. Each check failed is the error the
    /// locking read and the checks one after the other gave, in the same order.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn append_in(
        &self,
        client: &impl deadpool_postgres::GenericClient,
        key: &RunKey,
        fence: Fence,
        first: u64,
        events: &[Bytes],
        terminal: Option<RunStatus>,
        need_thread: bool,
    ) -> Result<Appended, RunStoreError> {
        let json: Vec<&[u8]> = events.iter().map(|e| e.as_ref()).collect();
        let terminal = terminal.map(|t| t.as_str());
        let fence = fence_text(fence);
        let row = client
            .query_opt(
                &prepared(client, &self.sql.append).await?,
                &[
                    &key.as_str(),
                    &fence,
                    &big(first),
                    &json,
                    &terminal,
                    &need_thread,
                ],
            )
            .await
            .map_err(unavailable)?
            .ok_or(RunStoreError::NotFound)?;
        if row.get::<_, &str>(0) != fence {
            return Err(RunStoreError::Fenced);
        }
        if status_of(row.get(1))?.is_terminal() {
            return Err(RunStoreError::Ended);
        }
        let head: i64 = row.get(2);
        if big(first) != head + 1 {
            return Err(RunStoreError::Conflict {
                head: u64::try_from(head).unwrap_or(0),
            });
        }
        let appended = Appended {
            thread: row.get::<_, Option<String>>(3),
            thread_id: row.get(4),
            agent: row.get(5),
            now: row.get(6),
        };
        if need_thread && appended.thread.is_none() {
            return Err(RunStoreError::NotFound);
        }
        if !row.get::<_, bool>(7) {
            return Err(corrupt(format!(
                "run {key}: every check of an append passed but it was not made"
            )));
        }
        Ok(appended)
    }
}
