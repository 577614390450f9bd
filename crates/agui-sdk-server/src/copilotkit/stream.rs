//! The SSE bodies of the runtime routes: a run's events from its first (`/run`), or a
//! thread's history and then its live run (`/connect`). The live run is read by the
//! run store's viewer, as every run kept in the store is.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::event::RunFinished;
use agui_sdk_core::semantics::{FrameError, FrameWriter};
use agui_sdk_core::Event;
use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;

use crate::budget::RunPermit;
use crate::runs::producer::ViewerGuard;
use crate::runs::viewer::{self, ViewerSettings};
use crate::runs::{RunKey, RunStore, ThreadEntry, ThreadRecord};

/// How a stored `RUN_STARTED` begins.
const RUN_STARTED: &[u8] = b"{\"type\":\"RUN_STARTED\"";

/// How a stored `RUN_ERROR` begins.
const RUN_ERROR: &[u8] = b"{\"type\":\"RUN_ERROR\"";

/// A history chunk is cut at the first run boundary past this many bytes.
const HISTORY_CHUNK: usize = 256 * 1024;

/// The body of `/run`: the run's events from its first until its terminal event.
pub(crate) fn run_response(
    store: Arc<dyn RunStore>,
    key: RunKey,
    run_id: String,
    settings: ViewerSettings,
    guard: ViewerGuard,
) -> Response<Body> {
    viewer::response(store, key, run_id, 0, None, settings, guard)
}

/// The body of `/connect`: the history, then the live run from its start to its end.
/// Ends at once when the thread is unknown or nothing runs. With `last_seen`
/// (`{runId}:{seq}` of the live run, which this client has up to `seq`), only the
/// live run's events after it. `held` (the memory budget's part for a history the
/// store copied) is let go once the history is written.
pub(crate) fn connect_response(
    store: Arc<dyn RunStore>,
    thread: ThreadRecord,
    last_seen: Option<&str>,
    settings: ViewerSettings,
    guard: ViewerGuard,
    held: RunPermit,
) -> Response<Body> {
    let resume = match (&thread.live, last_seen.and_then(|l| l.rsplit_once(':'))) {
        (Some(live), Some((seen_run, seq))) if live.run_id == seen_run => seq.parse::<u64>().ok(),
        _ => None,
    };
    let history = match resume {
        Some(_) => VecDeque::new(),
        None => VecDeque::from(thread.history),
    };
    let live = thread.live.is_some();
    let writer = HistoryWriter {
        writer: FrameWriter::new(Encoding::Sse, settings.downgrade),
    };
    let keep_alive = settings.keep_alive;
    let state = (history, writer, held);
    let past = futures_util::stream::unfold(state, move |(mut runs, w, held)| async move {
        // Whole runs, up to a bound per chunk: a client that reads slowly holds the
        // server to one chunk's bytes, not the whole history's.
        let mut out = Vec::new();
        while out.len() < HISTORY_CHUNK {
            let Some(run) = runs.pop_front() else { break };
            let final_run = runs.is_empty() && !live;
            w.write_run(&run, final_run, &mut out);
        }
        (!out.is_empty()).then(|| (Ok::<_, Infallible>(Bytes::from(out)), (runs, w, held)))
    });
    let body = match thread.live {
        Some(l) => past
            .chain(viewer::stream(
                store,
                l.key,
                l.run_id,
                resume.unwrap_or(0),
                settings,
                guard,
            ))
            .boxed(),
        None => past.boxed(),
    };
    crate::response::event_stream_response(Encoding::Sse, keep_alive, body)
}

/// Writes a thread's past runs as SSE frames, each rewritten for the consumer.
struct HistoryWriter {
    writer: FrameWriter,
}

impl HistoryWriter {
    /// Writes one run of a thread's history (`final_run`: nothing follows it, neither
    /// another stored run nor a live one). For a pre-1.0 consumer, whose client accepts
    /// nothing after a `RUN_ERROR`, a past run's `RUN_ERROR` that other runs follow is
    /// written as that run's `RUN_FINISHED` with the error as its `result`.
    fn write_run(&self, run: &ThreadEntry, final_run: bool, out: &mut Vec<u8>) {
        let downgrade_active = self.writer.downgrade().is_active();
        // The run's `RUN_STARTED`, read only when a `RUN_ERROR` needs its ids.
        let mut started: Option<&[u8]> = None;
        let mut lines = run.lines().peekable();
        while let Some(line) = lines.next() {
            let last = final_run && lines.peek().is_none();
            if !downgrade_active {
                // Nothing to rewrite: the stored text, no decoding.
                self.write(self.writer.write_stored(line, None, out));
                continue;
            }
            if line.starts_with(RUN_STARTED) {
                started = Some(line);
            }
            // Most events pass as they are (a `RUN_ERROR` that other runs follow
            // becomes its run's `RUN_FINISHED`).
            if last || !line.starts_with(RUN_ERROR) {
                self.write(self.writer.write_stored(line, None, out));
                continue;
            }
            let ids = match started.map(Event::from_json_slice) {
                Some(Ok(Event::RunStarted(s))) => Some((s.thread_id, s.run_id)),
                _ => None,
            };
            let event = match (Event::from_json_slice(line), ids) {
                (Ok(Event::RunError(err)), Some((t, r))) => {
                    let mut fin = RunFinished::new(t, r);
                    fin.result = Some(json!({
                        "error": { "message": err.message, "code": err.code }
                    }));
                    Ok(fin.into())
                }
                (Ok(e), _) => Ok(e),
                (Err(e), _) => Err(FrameError::Undecodable(e.to_string())),
            };
            self.write(event.and_then(|e| self.writer.write_event(e, None, out)));
        }
    }

    /// What a history that cannot be written whole does with one event: it is skipped
    /// (the history goes on; a client would refuse it, and end the whole stream).
    fn write(&self, written: Result<agui_sdk_core::semantics::Written, FrameError>) {
        if let Err(err) = written {
            tracing::error!(error = %err, "a stored history event cannot be written: skipped");
        }
    }
}
