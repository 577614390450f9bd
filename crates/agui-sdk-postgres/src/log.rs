//! The run log role ([`RunLog`]): creating runs, appending, reading and waiting.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agui_sdk_agent::runs::{
    Batch, Created, Fence, NewRun, RunKey, RunLog, RunRecord, RunStatus, RunStoreError,
    RunStoreFuture, ThreadKey,
};
use bytes::Bytes;
use tokio::sync::broadcast::error::RecvError;

use crate::threads::Joined;
use crate::{
    big, corrupt, fence_text, now_ms, prepared, status_of, unavailable, wake, PostgresRunStore,
    FALLBACK,
};

impl PostgresRunStore {
    async fn do_create(&self, run: NewRun) -> Result<Created, RunStoreError> {
        // Counted exactly from the start when the store was last seen close to its
        // thread cap; otherwise once more, exactly, if it is found close to it.
        let mut exact = self.near_cap.load(Ordering::Relaxed);
        loop {
            match self.try_create(&run, exact).await? {
                Some(created) => return Ok(created),
                None if !exact => exact = true,
                None => {
                    return Err(corrupt(
                        "a thread count taken exactly asked to be taken again".into(),
                    ))
                }
            }
        }
    }

    /// One attempt of [`do_create`](Self::do_create): `None` when the run's new thread
    /// found the store close to its thread cap without `exact` (nothing is kept).
    async fn try_create(
        &self,
        run: &NewRun,
        exact: bool,
    ) -> Result<Option<Created>, RunStoreError> {
        let mut client = self.client().await?;
        let fence = Fence::random();
        let tx = client.transaction().await.map_err(unavailable)?;
        if exact && run.thread.is_some() {
            tx.execute(&self.sql.threads.exact, &[])
                .await
                .map_err(unavailable)?;
        }
        // An ended run of this key past its retention, not swept yet, is no more.
        tx.execute(&self.sql.expired_run, &[&run.key.as_str()])
            .await
            .map_err(unavailable)?;
        if let Some(thread) = &run.thread {
            if let Some(existing) = self.do_record(&tx, &run.key).await? {
                return Ok(Some(Created::Existing(existing)));
            }
            if let Some(busy) = self.join_thread(&tx, run, thread, exact).await? {
                return match busy {
                    Joined::Busy(run_id) => Err(RunStoreError::Busy { run_id }),
                    Joined::Attached(r) => Ok(Some(Created::Existing(r))),
                    Joined::Full(n) => Err(RunStoreError::Full(format!(
                        "{n} threads held (max_threads {}), each with a running run",
                        self.limits.max_threads
                    ))),
                    Joined::Recount => Ok(None),
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
            return Ok(Some(Created::New(fence)));
        }
        // Created by a retry meanwhile (its thread, if any, already names it).
        let existing = self.do_record(&tx, &run.key).await?;
        drop(tx);
        match existing {
            Some(r) => Ok(Some(Created::Existing(r))),
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
        let client = self.client().await?;
        // One statement, its own transaction: see the `append` module.
        self.append_in(&client, key, fence, first, &events, terminal, false)
            .await
            .map(|_| ())
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
