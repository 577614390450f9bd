//! The SSE bodies of the runtime routes, read from the thread store: a run's events
//! from its first (`/run`), or a thread's history and then its live run (`/connect`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agui_core::encoding::sse;
use agui_core::encoding::{Encoding, EventEncoder};
use agui_core::event::RunFinished;
use agui_core::semantics::{Downgrade, Outgoing};
use agui_core::Event;
use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use serde_json::json;

use crate::threads::ThreadStore;

/// Writes events as SSE frames, each rewritten for the consumer first.
#[derive(Debug)]
pub(crate) struct Writer {
    encoder: EventEncoder,
    downgrade: Downgrade,
}

impl Writer {
    pub(crate) fn new(downgrade: Downgrade) -> Self {
        Writer {
            encoder: EventEncoder::new(Encoding::Sse),
            downgrade,
        }
    }

    pub(crate) fn write(&self, event: Event, out: &mut Vec<u8>) {
        self.write_with_id(event, None, out)
    }

    /// Writes an event of a live run with its id `{runId}:{seq}` (seq 1-based in the
    /// run), the cursor a client may give back as `lastSeenEventId`.
    pub(crate) fn write_with_id(&self, event: Event, id: Option<(&str, usize)>, out: &mut Vec<u8>) {
        let Some(outgoing) = self.downgrade.apply(event) else {
            return;
        };
        if let Some((run, seq)) = id {
            sse::encode_id(format_args!("{run}:{seq}"), out);
        }
        match outgoing {
            Outgoing::Event(e) => self.encoder.encode(&e, out),
            Outgoing::Json(v) => {
                let mut json = Vec::new();
                agui_core::wire::write_canonical(&v, &mut json);
                sse::encode_data(&json, out);
            }
        }
    }

    /// Writes one run of a thread's history (`final_run`: nothing follows it, neither
    /// another stored run nor a live one). For a pre-1.0 consumer, whose client accepts
    /// nothing after a `RUN_ERROR`, a past run's `RUN_ERROR` that other runs follow is
    /// written as that run's `RUN_FINISHED` with the error as its `result`.
    pub(crate) fn write_history_run(&self, run: &[Event], final_run: bool, out: &mut Vec<u8>) {
        let mut ids: Option<(String, String)> = None;
        for (j, e) in run.iter().enumerate() {
            if let Event::RunStarted(s) = e {
                ids = Some((s.thread_id.clone(), s.run_id.clone()));
            }
            let last = final_run && j + 1 == run.len();
            match (e, &ids) {
                (Event::RunError(err), Some((t, r))) if self.downgrade.is_active() && !last => {
                    let mut fin = RunFinished::new(t, r);
                    fin.result = Some(json!({
                        "error": { "message": err.message, "code": err.code }
                    }));
                    self.write(fin.into(), out);
                }
                // Nothing to rewrite: encoded from the stored event, no copy.
                _ if !self.downgrade.is_active() => self.encoder.encode(e, out),
                _ => self.write(e.clone(), out),
            }
        }
    }
}

/// A history chunk is cut at the first run boundary past this many bytes.
const HISTORY_CHUNK: usize = 256 * 1024;

/// What a body reads next.
enum Phase {
    /// A thread's history, in chunks of whole runs of about [`HISTORY_CHUNK`] bytes,
    /// then its live run if any.
    History {
        runs: std::collections::VecDeque<Arc<[Event]>>,
        live: Option<String>,
    },
    /// A run's events from `cursor` on.
    Live {
        run_id: String,
        cursor: usize,
    },
    Done,
}

struct State {
    store: Arc<dyn ThreadStore>,
    thread_id: String,
    writer: Writer,
    keep_alive: Option<Duration>,
    phase: Phase,
}

/// The body of `/run`: the run's events from its first until its terminal event.
pub(crate) fn run_response(
    store: Arc<dyn ThreadStore>,
    thread_id: String,
    run_id: String,
    writer: Writer,
    keep_alive: Option<Duration>,
) -> Response<Body> {
    respond(State {
        store,
        thread_id,
        writer,
        keep_alive,
        phase: Phase::Live { run_id, cursor: 0 },
    })
}

/// The body of `/connect`: the history, then the live run from its start to its end.
/// Ends at once when the thread is unknown or nothing runs. With `last_seen`
/// (`{runId}:{seq}` of the live run, which this client has up to `seq`), only the
/// live run's events after it.
pub(crate) fn connect_response(
    store: Arc<dyn ThreadStore>,
    thread_id: String,
    history: Vec<Arc<[Event]>>,
    live: Option<String>,
    last_seen: Option<&str>,
    writer: Writer,
    keep_alive: Option<Duration>,
) -> Response<Body> {
    let resume = match (&live, last_seen.and_then(|l| l.rsplit_once(':'))) {
        (Some(run), Some((seen_run, seq))) if run == seen_run => seq.parse::<usize>().ok(),
        _ => None,
    };
    let phase = match (resume, live) {
        (Some(cursor), Some(run_id)) => Phase::Live { run_id, cursor },
        (_, live) => Phase::History {
            runs: history.into(),
            live,
        },
    };
    respond(State {
        store,
        thread_id,
        writer,
        keep_alive,
        phase,
    })
}

fn respond(state: State) -> Response<Body> {
    let stream = futures_util::stream::unfold(state, next_chunk);
    crate::response::event_stream_response(Encoding::Sse, Body::from_stream(stream))
}

async fn next_chunk(mut s: State) -> Option<(Result<Bytes, Infallible>, State)> {
    loop {
        match std::mem::replace(&mut s.phase, Phase::Done) {
            Phase::Done => return None,
            Phase::History { mut runs, live } => {
                // Whole runs, up to a bound per chunk: a client that reads slowly holds
                // the server to one chunk's bytes, not the whole history's, and a
                // history of small runs still goes out in few writes.
                let mut out = Vec::new();
                while out.len() < HISTORY_CHUNK {
                    let Some(run) = runs.pop_front() else {
                        break;
                    };
                    let final_run = runs.is_empty() && live.is_none();
                    s.writer.write_history_run(&run, final_run, &mut out);
                }
                s.phase = if runs.is_empty() {
                    match live {
                        Some(run_id) => Phase::Live { run_id, cursor: 0 },
                        None => Phase::Done,
                    }
                } else {
                    Phase::History { runs, live }
                };
                if !out.is_empty() {
                    return Some((Ok(Bytes::from(out)), s));
                }
            }
            Phase::Live { run_id, cursor } => {
                let page = match s.store.read_run(&s.thread_id, &run_id, cursor).await {
                    Ok(p) => p,
                    Err(e) => {
                        // The run is gone (a next run began, or the thread was
                        // evicted): the stream ends; the client reconnects.
                        tracing::debug!(error = %e, "run no longer readable: ending the stream");
                        return None;
                    }
                };
                if !page.events.is_empty() {
                    let next = cursor + page.events.len();
                    let mut out = Vec::new();
                    for (i, e) in page.events.into_iter().enumerate() {
                        s.writer
                            .write_with_id(e, Some((&run_id, cursor + i + 1)), &mut out);
                    }
                    s.phase = if page.ended {
                        Phase::Done
                    } else {
                        Phase::Live {
                            run_id,
                            cursor: next,
                        }
                    };
                    if out.is_empty() {
                        continue;
                    }
                    return Some((Ok(Bytes::from(out)), s));
                }
                if page.ended {
                    return None;
                }
                let waited = {
                    let wait = s.store.wait(&s.thread_id, &run_id, cursor);
                    match s.keep_alive {
                        Some(d) if !d.is_zero() => tokio::time::timeout(d, wait).await.is_ok(),
                        _ => {
                            wait.await;
                            true
                        }
                    }
                };
                s.phase = Phase::Live { run_id, cursor };
                if !waited {
                    return Some((Ok(Bytes::from_static(sse::KEEP_ALIVE)), s));
                }
            }
        }
    }
}
