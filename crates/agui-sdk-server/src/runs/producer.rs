//! The producer of a run kept in the run store (a resumable run, or a CopilotKit
//! thread's run): the agent's events, through the lifecycle guard, stamped with
//! sequence numbers and committed to the store in batches. It runs on a task of its own
//! (the run registry's), never inside an HTTP response.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agui_sdk_core::types::RunFinishedOutcome;
use agui_sdk_core::{Event, RunAgentInput};
use bytes::Bytes;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Fence, RunKey, RunStatus, RunStore, RunStoreError};
use crate::engine::{Progress, RunDriver};

/// Most events committed in one store call.
const MAX_BATCH: usize = 256;

/// What to do when the last viewer of a resumable run goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DetachPolicy {
    /// Keep running; cancel when no viewer has been attached for `max_unwatched`.
    Continue {
        /// How long a run may go unwatched (default 10 minutes).
        max_unwatched: Duration,
    },
    /// Cancel at once, as a non-resumable run is (ids and re-attach still work while a
    /// viewer is attached).
    Cancel,
}

impl Default for DetachPolicy {
    fn default() -> Self {
        DetachPolicy::Continue {
            max_unwatched: Duration::from_secs(600),
        }
    }
}

/// The local state of one producing run: how to cancel it, who watches it.
#[derive(Debug, Default)]
pub(crate) struct Local {
    pub cancel: CancellationToken,
    pub viewers: AtomicUsize,
    pub viewers_changed: Notify,
}

/// The runs this replica produces, by key.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    runs: Mutex<HashMap<RunKey, Arc<Local>>>,
}

impl Registry {
    pub(crate) fn insert(&self, key: &RunKey) -> Arc<Local> {
        let local = Arc::new(Local::default());
        self.lock().insert(key.clone(), local.clone());
        local
    }

    pub(crate) fn get(&self, key: &RunKey) -> Option<Arc<Local>> {
        self.lock().get(key).cloned()
    }

    fn remove(&self, key: &RunKey) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunKey, Arc<Local>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Counts a viewer of a run while alive.
#[derive(Debug)]
pub(crate) struct ViewerGuard(Option<Arc<Local>>);

impl ViewerGuard {
    pub(crate) fn new(local: Option<Arc<Local>>) -> Self {
        if let Some(l) = &local {
            l.viewers.fetch_add(1, Ordering::SeqCst);
            l.viewers_changed.notify_waiters();
        }
        ViewerGuard(local)
    }
}

impl Drop for ViewerGuard {
    fn drop(&mut self) {
        if let Some(l) = &self.0 {
            l.viewers.fetch_sub(1, Ordering::SeqCst);
            l.viewers_changed.notify_waiters();
        }
    }
}

/// Timing of a producer.
#[derive(Debug, Clone)]
pub(crate) struct ProducerSettings {
    pub detach: DetachPolicy,
    pub max_run_duration: Duration,
    pub heartbeat: Duration,
}

/// One resumable run to produce.
pub(crate) struct Production {
    pub store: Arc<dyn RunStore>,
    pub registry: Arc<Registry>,
    pub local: Arc<Local>,
    pub key: RunKey,
    pub fence: Fence,
    pub settings: ProducerSettings,
    pub permit: crate::budget::RunPermit,
    /// For a run of a thread: what its history needs.
    pub thread: Option<ThreadRun>,
}

/// What the producer of a thread's run knows of it.
pub(crate) struct ThreadRun {
    /// The request's input: the first input-less `RUN_STARTED` takes it (less the
    /// messages the thread already holds), so that the thread's history records the
    /// user's turn.
    pub input: Option<RunAgentInput>,
    /// The ids of the messages the thread already holds.
    pub known_message_ids: Arc<HashSet<String>>,
    /// The run so far, compacted as its thread's history will keep it (fed as events
    /// are committed, so that the end of the run reads nothing back).
    pub entry: agui_sdk_agent::runs::ThreadEntryBuilder,
}

/// The status a run ends with, from its terminal event.
pub(crate) fn terminal_status(e: &Event) -> Option<RunStatus> {
    match e {
        Event::RunFinished(f) => Some(match f.outcome {
            Some(RunFinishedOutcome::Cancelled(_)) => RunStatus::Cancelled,
            _ => RunStatus::Finished,
        }),
        Event::RunError(r) if r.code.as_deref() == Some(super::RUN_LOST) => Some(RunStatus::Lost),
        Event::RunError(_) => Some(RunStatus::Error),
        _ => None,
    }
}

/// The canonical JSON of an event (what follows `data: ` on SSE).
pub(crate) fn event_bytes(e: &Event) -> Bytes {
    let mut out = Vec::with_capacity(128);
    e.write_json(&mut out);
    // Kept for the run's retention: exactly its size, not the encoder's spare capacity.
    Bytes::copy_from_slice(&out)
}

/// Why the producer stopped reading the agent before its end.
enum Stop {
    Cancel,
    Timeout,
    Unwatched,
    Fenced,
}

/// Produces the run `run` drives to its end.
pub(crate) async fn produce(mut p: Production, mut run: RunDriver) {
    let mut out: Vec<Event> = Vec::new();
    let mut head = 0u64;
    let deadline = tokio::time::sleep(p.settings.max_run_duration);
    tokio::pin!(deadline);
    let mut beat = tokio::time::interval(p.settings.heartbeat);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut unwatched_since: Option<tokio::time::Instant> = None;
    tracing::info!("resumable run started");

    let stop: Option<Stop> = loop {
        let progress = tokio::select! {
            biased;
            () = p.local.cancel.cancelled() => break Some(Stop::Cancel),
            () = &mut deadline => break Some(Stop::Timeout),
            _ = beat.tick() => {
                match p.store.heartbeat(&p.key, p.fence).await {
                    Ok(hb) if hb.cancel_requested => break Some(Stop::Cancel),
                    Ok(_) => {}
                    Err(RunStoreError::Fenced) => break Some(Stop::Fenced),
                    Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
                }
                if let Some(stop) = check_viewers(&p, &mut unwatched_since) {
                    break Some(stop);
                }
                continue;
            }
            () = p.local.viewers_changed.notified() => {
                if let Some(stop) = check_viewers(&p, &mut unwatched_since) {
                    break Some(stop);
                }
                continue;
            }
            progress = run.step(&mut out) => progress,
        };
        // Everything else the agent has ready goes in the same batch, up to a bound (one
        // store call must not hold a shared store for long, nor delay the first event).
        let mut progress = progress;
        while progress == Progress::More && out.len() < MAX_BATCH {
            match run.try_step(&mut out) {
                Some(next) => progress = next,
                None => break,
            }
        }
        match commit(p.writer(), &mut out, &mut head).await {
            Ok(true) => break None,
            Ok(false) => {}
            Err(RunStoreError::Fenced) => break Some(Stop::Fenced),
            Err(e) => {
                tracing::error!(error = %e, "the run store refused the run's events: ending it");
                out.clear();
                run.fail_now(
                    crate::AgentError::public("the run could not be recorded")
                        .with_code("store_unavailable"),
                    &mut out,
                );
                if let Err(e) = commit(p.writer(), &mut out, &mut head).await {
                    tracing::error!(error = %e, "could not record the end of the run");
                }
                break None;
            }
        }
        if progress == Progress::Ended {
            break None;
        }
    };
    match stop {
        None => {}
        Some(Stop::Fenced) => {
            run.detach();
            tracing::warn!("another replica took the run over: the agent is stopped");
        }
        Some(stop) => {
            match stop {
                Stop::Timeout => run.fail_now(
                    crate::AgentError::public("the run exceeded its longest allowed duration")
                        .with_code("run_timeout"),
                    &mut out,
                ),
                Stop::Unwatched => {
                    tracing::info!("no viewer for too long: cancelling the run");
                    run.cancel(&mut out)
                }
                _ => {
                    tracing::info!("run cancelled on request");
                    run.cancel(&mut out)
                }
            }
            if let Err(e) = commit(p.writer(), &mut out, &mut head).await {
                tracing::error!(error = %e, "could not record the end of the run");
            }
        }
    }
    drop(run);
    p.registry.remove(&p.key);
    tracing::info!(events = head, "resumable run ended");
    drop(std::mem::take(&mut p.permit));
}

impl Production {
    fn writer(&mut self) -> Writer<'_> {
        Writer {
            store: &self.store,
            key: &self.key,
            fence: self.fence,
            thread: self.thread.as_mut(),
        }
    }
}

fn check_viewers(p: &Production, since: &mut Option<tokio::time::Instant>) -> Option<Stop> {
    let watched = p.local.viewers.load(Ordering::SeqCst) > 0;
    if watched {
        *since = None;
        return None;
    }
    let now = tokio::time::Instant::now();
    let start = *since.get_or_insert(now);
    match p.settings.detach {
        DetachPolicy::Cancel => Some(Stop::Unwatched),
        DetachPolicy::Continue { max_unwatched } if now.duration_since(start) >= max_unwatched => {
            Some(Stop::Unwatched)
        }
        DetachPolicy::Continue { .. } => None,
    }
}

/// What a commit needs of the production (which is not `Sync`: the agent's stream).
struct Writer<'a> {
    store: &'a Arc<dyn RunStore>,
    key: &'a RunKey,
    fence: Fence,
    thread: Option<&'a mut ThreadRun>,
}

/// Stamps and appends the guard's output (one store call). An event too large for a
/// client is replaced by `RUN_ERROR` (code `event_too_large`), which ends the run:
/// `Ok(true)` then.
async fn commit(
    p: Writer<'_>,
    out: &mut Vec<Event>,
    head: &mut u64,
) -> Result<bool, RunStoreError> {
    if out.is_empty() {
        return Ok(false);
    }
    let mut terminal = out.iter().rev().find_map(terminal_status);
    let mut batch: Vec<Bytes> = Vec::with_capacity(out.len());
    let mut too_large = false;
    let mut p = p;
    if let Some(thread) = p.thread.as_deref_mut() {
        give_input(out, thread);
    }
    for e in out.drain(..) {
        let bytes = event_bytes(&e);
        if bytes.len() > crate::engine::MAX_OUTPUT_EVENT {
            let err = crate::engine::event_too_large(e.event_type(), bytes.len());
            batch.push(event_bytes(&err));
            if let Some(thread) = p.thread.as_deref_mut() {
                thread.entry.push(err);
            }
            terminal = Some(RunStatus::Error);
            too_large = true;
            break;
        }
        batch.push(bytes);
        if let Some(thread) = p.thread.as_deref_mut() {
            thread.entry.push(e);
        }
    }
    out.clear();
    // An idle producer keeps no batch buffer (an event is 120 bytes).
    if out.capacity() > 16 {
        out.shrink_to(16);
    }
    let n = batch.len() as u64;
    match (terminal, p.thread) {
        (Some(status), Some(thread)) => {
            // The run's end and its place in the thread's history, in one step.
            let entry = std::mem::take(&mut thread.entry).finish();
            p.store
                .end_thread_run(p.key, p.fence, *head + 1, batch, status, entry)
                .await?
        }
        _ => {
            p.store
                .append(p.key, p.fence, *head + 1, batch, terminal)
                .await?
        }
    }
    *head += n;
    Ok(too_large)
}

/// Gives an input-less `RUN_STARTED` the request's input, less the messages the thread
/// already holds.
fn give_input(out: &mut [Event], thread: &mut ThreadRun) {
    for e in out.iter_mut() {
        if let Event::RunStarted(s) = e {
            if s.input.is_none() {
                // A run has one RUN_STARTED: the input moves into it, no copy.
                let Some(mut input) = thread.input.take() else {
                    return;
                };
                input
                    .messages
                    .retain(|m| !thread.known_message_ids.contains(m.id()));
                s.input = Some(Box::new(input));
            }
        }
    }
}
