//! The run log role ([`RunLog`]): creating runs, appending, reading and waiting.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use agui_sdk_agent::runs::{
    Batch, Created, Fence, NewRun, RunKey, RunLog, RunRecord, RunStatus, RunStoreError,
    RunStoreFuture, ThreadKey,
};
use bytes::Bytes;
use tokio::sync::broadcast::error::RecvError;

use crate::threads::Joined;
use crate::{
    big, fence_text, now_ms, prepared, status_of, unavailable, wake, Appended, PostgresRunStore,
    FALLBACK,
};

impl PostgresRunStore {
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

    pub(crate) async fn do_record(
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
    pub(crate) async fn notify(
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
}
