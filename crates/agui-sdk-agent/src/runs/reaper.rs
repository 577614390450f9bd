//! Closing runs: the reaper that ends a run whose producer died, and the reading of a
//! run's log into its thread's history entry (which the reaper and a producer's last
//! step share).

use agui_sdk_core::event::RunError;
use agui_sdk_core::semantics::OpenConstructs;
use agui_sdk_core::Event;
use bytes::Bytes;

use super::{Fence, RunKey, RunStatus, RunStore, RunStoreError, ThreadEntry, ThreadEntryBuilder};

/// Events read per store call while compacting a log.
const PAGE: usize = 512;

/// Calls `each` with every kept event of run `key`, in order, up to the head at the
/// time of the last read. When the store trimmed the run's first events, from the
/// oldest kept one.
async fn read_log(
    store: &dyn RunStore,
    key: &RunKey,
    mut each: impl FnMut(&[u8]),
) -> Result<(), RunStoreError> {
    let mut after = 0u64;
    loop {
        let batch = match store.read(key, after, PAGE).await {
            Ok(b) => b,
            Err(RunStoreError::Gone { oldest, .. }) if oldest > after + 1 => {
                tracing::warn!(run_key = %key, oldest, "the run's first events are no longer kept: read from the oldest kept");
                after = oldest - 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        if batch.events.is_empty() {
            return Ok(());
        }
        after = batch.first + batch.events.len() as u64 - 1;
        for e in &batch.events {
            each(e);
        }
        if after >= batch.head {
            return Ok(());
        }
    }
}

/// The thread entry of run `key`: its log (see [`RunLog::read`](super::RunLog::read); from the oldest
/// kept event when the first were trimmed), then `tail` (the events about to end it),
/// compacted.
pub async fn thread_entry(
    store: &dyn RunStore,
    key: &RunKey,
    tail: &[Bytes],
) -> Result<ThreadEntry, RunStoreError> {
    let mut builder = ThreadEntryBuilder::new();
    read_log(store, key, |e| builder.push_json(e)).await?;
    for e in tail {
        builder.push_json(e);
    }
    Ok(builder.finish())
}

/// Ends every run whose producer's lease expired: what it left open is closed, then
/// `RUN_ERROR` code `run_lost`, so that its log is a stream a client accepts; a thread
/// run joins its thread's history as it ends. One pass, at most 64 runs.
pub async fn reap(store: &dyn RunStore, replica: &str) {
    let expired = match store.expired_leases(64).await {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!(error = %e, "reaper: cannot list expired leases");
            return;
        }
    };
    for key in expired {
        let (fence, head) = match store.take_over(&key, replica).await {
            Ok(Some(taken)) => taken,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(run_key = %key, error = %e, "reaper: take-over failed");
                continue;
            }
        };
        match close_lost(store, &key, fence, head).await {
            Ok(()) => {
                tracing::warn!(run_key = %key, head, "reaper: closed a run whose producer died (run_lost)")
            }
            Err(e) => {
                tracing::warn!(run_key = %key, error = %e, "reaper: could not close a lost run")
            }
        }
    }
}

/// Closes the lost run `key`, taken over with `fence` at `head`.
async fn close_lost(
    store: &dyn RunStore,
    key: &RunKey,
    fence: Fence,
    head: u64,
) -> Result<(), RunStoreError> {
    let in_thread = matches!(store.record(key).await?, Some(r) if r.thread.is_some());
    let mut open = OpenConstructs::new();
    let mut builder = in_thread.then(ThreadEntryBuilder::new);
    read_log(store, key, |json| match Event::from_json_slice(json) {
        Ok(e) => {
            open.observe(&e);
            if let Some(b) = &mut builder {
                b.push(e);
            }
        }
        Err(err) => tracing::warn!(run_key = %key, error = %err, "a stored event does not decode"),
    })
    .await?;
    let mut closing = Vec::new();
    open.close_all(&mut closing);
    let mut lost = RunError::new("the server running this run stopped");
    lost.code = Some(super::RUN_LOST.into());
    closing.push(lost.into());
    let last: Vec<Bytes> = closing
        .iter()
        .map(|e| {
            let mut json = Vec::new();
            e.write_json(&mut json);
            Bytes::from(json)
        })
        .collect();
    match builder {
        Some(mut b) => {
            for e in closing {
                b.push(e);
            }
            store
                .end_thread_run(key, fence, head + 1, last, RunStatus::Lost, b.finish())
                .await
        }
        None => {
            store
                .append(key, fence, head + 1, last, Some(RunStatus::Lost))
                .await
        }
    }
}
