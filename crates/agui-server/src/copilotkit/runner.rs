//! Runs executed apart from the request that started them: the agent's events go
//! through the lifecycle guard into the thread store, where the run's response, and
//! anyone connecting to the thread, read them. A stop request ends the run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use agui_core::{Event, RunAgentInput};
use tokio_util::sync::CancellationToken;

use crate::engine::{Progress, RunDriver};
use crate::error::AgentError;
use crate::threads::{StoreError, ThreadStore};

pub(crate) use crate::engine::STOP_MESSAGE;

/// The runs executing in this process, by thread: how to stop each.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    runs: Mutex<HashMap<String, (String, CancellationToken)>>,
}

impl Registry {
    fn insert(&self, thread_id: &str, run_id: &str, stop: CancellationToken) {
        self.lock()
            .insert(thread_id.to_owned(), (run_id.to_owned(), stop));
    }

    fn remove(&self, thread_id: &str, run_id: &str) {
        let mut runs = self.lock();
        if runs.get(thread_id).is_some_and(|(r, _)| r == run_id) {
            runs.remove(thread_id);
        }
    }

    /// Stops the thread's run (only if it is `scope`, when given).
    pub(crate) fn stop(&self, thread_id: &str, scope: Option<&str>) -> Stop {
        let runs = self.lock();
        let Some((run_id, token)) = runs.get(thread_id) else {
            return Stop::NotHere;
        };
        if scope.is_some_and(|s| s != run_id) {
            return Stop::OtherRun;
        }
        if token.is_cancelled() {
            return Stop::NotHere;
        }
        token.cancel();
        Stop::Stopped(run_id.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, CancellationToken)>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What [`Registry::stop`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The run, now stopping.
    Stopped(String),
    /// The thread's active run here is another than the one asked for.
    OtherRun,
    /// No run of the thread runs here (or it is already stopping).
    NotHere,
}

/// Everything one detached run needs.
pub(crate) struct Job {
    pub store: Arc<dyn ThreadStore>,
    pub registry: Arc<Registry>,
    pub input: RunAgentInput,
    pub known_message_ids: HashSet<String>,
    pub permit: crate::cost::RunPermit,
    pub span: tracing::Span,
}

/// Registers the run and executes it on its own task.
pub(crate) fn spawn(job: Job, run: RunDriver) {
    let stop = CancellationToken::new();
    job.registry
        .insert(&job.input.thread_id, &job.input.run_id, stop.clone());
    let span = job.span.clone();
    tokio::spawn(tracing::Instrument::instrument(drive(job, run, stop), span));
}

/// Why the agent stopped being read.
enum Ending {
    /// The guard produced the terminal event.
    Done,
    /// A stop request.
    Stopped,
    /// The store refused the run's events.
    Store(StoreError),
}

async fn drive(mut job: Job, mut run: RunDriver, stop: CancellationToken) {
    let thread_id = job.input.thread_id.clone();
    let run_id = job.input.run_id.clone();
    let mut out: Vec<Event> = Vec::new();
    let mut sent = 0usize;
    tracing::info!("run started");
    let mut keep_alive = tokio::time::interval(crate::threads::KEEP_ALIVE_INTERVAL);
    keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    keep_alive.reset();

    let ending = loop {
        let progress = tokio::select! {
            biased;
            () = stop.cancelled() => break Ending::Stopped,
            _ = keep_alive.tick() => {
                // A shared store: the lease goes on, and a stop asked on another
                // process arrives here.
                match job.store.keep_alive(&thread_id, &run_id).await {
                    Ok(true) => break Ending::Stopped,
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not renew the run's lease");
                        continue;
                    }
                }
            }
            progress = run.step(&mut out) => progress,
        };
        if let Err(e) = commit(&mut job, &mut out, &mut sent).await {
            break Ending::Store(e);
        }
        if progress == Progress::Ended {
            break Ending::Done;
        }
    };

    match ending {
        Ending::Done => {}
        Ending::Stopped => {
            tracing::info!("run stopped on request");
            run.cancel(&mut out);
            if let Err(e) = commit(&mut job, &mut out, &mut sent).await {
                tracing::error!(error = %e, "could not record the end of a stopped run");
            }
        }
        Ending::Store(e) => {
            tracing::error!(error = %e, "the thread store refused the run's events: ending it");
            out.clear();
            let code = match e {
                StoreError::RunTooLong { .. } => "run_too_long",
                StoreError::OverBudget { .. } => "store_full",
                _ => "store_error",
            };
            run.fail(
                AgentError::public(format!("the run could not be recorded: {e}")).with_code(code),
                &mut out,
            );
            // The terminal batch is always accepted (see `ThreadStore::append`).
            if let Err(e) = commit(&mut job, &mut out, &mut sent).await {
                tracing::error!(error = %e, "could not record the end of the run");
            }
        }
    }
    drop(run);
    if let Err(e) = job.store.end_run(&thread_id, &run_id).await {
        tracing::error!(error = %e, "could not end the run in the thread store");
    }
    job.registry.remove(&thread_id, &run_id);
    tracing::info!(events = sent, "run ended");
    drop(std::mem::take(&mut job.permit));
}

/// Writes the guard's output to the store, first giving an input-less `RUN_STARTED`
/// the request's input (less the messages the thread already holds).
async fn commit(job: &mut Job, out: &mut Vec<Event>, sent: &mut usize) -> Result<(), StoreError> {
    if out.is_empty() {
        return Ok(());
    }
    for e in out.iter_mut() {
        if let Event::RunStarted(s) = e {
            if s.input.is_none() {
                let mut input = job.input.clone();
                input
                    .messages
                    .retain(|m| !job.known_message_ids.contains(m.id()));
                s.input = Some(Box::new(input));
            }
        }
    }
    let batch = std::mem::take(out);
    *sent += batch.len();
    job.store
        .append(&job.input.thread_id, &job.input.run_id, batch)
        .await
}
