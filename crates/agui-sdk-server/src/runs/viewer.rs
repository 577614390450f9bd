//! A viewer of a run in the run store: one HTTP response streaming the run's log from a
//! cursor, then its live tail, until the terminal event. The same code serves the
//! response of the request that started a resumable run, every re-attach, and the
//! CopilotKit runtime's `/run` and `/connect` (after a thread's history).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::encoding::sse;
use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::semantics::Downgrade;
use agui_sdk_core::semantics::{FrameError, FrameWriter};
use bytes::Bytes;

use super::producer::ViewerGuard;
use super::{RunKey, RunStore, RunStoreError};

/// Events read per store call.
const PAGE: usize = 512;
/// Longest wait for a wake-up before reading the log again (wake-ups may be lost).
const POLL: Duration = Duration::from_secs(1);

/// How a viewer writes.
#[derive(Debug, Clone)]
pub(crate) struct ViewerSettings {
    pub encoding: Encoding,
    pub keep_alive: Option<Duration>,
    /// The `retry:` field written before the first event (SSE), if any.
    pub retry_ms: Option<u64>,
    /// How events are rewritten for the consumer's declared protocol version.
    pub downgrade: Downgrade,
}

struct State {
    store: Arc<dyn RunStore>,
    key: RunKey,
    run_id: String,
    cursor: u64,
    writer: FrameWriter,
    /// The `retry:` field still to write before the first event.
    retry_ms: Option<u64>,
    done: bool,
    _guard: ViewerGuard,
}

/// The streaming response of a viewer starting after `after`. With `head` (the head
/// when it starts), the response says where it starts and the head then
/// (`AGUI-First-Seq`, `AGUI-Head-Seq`: a resumable run's).
pub(crate) fn response(
    store: Arc<dyn RunStore>,
    key: RunKey,
    run_id: String,
    after: u64,
    head: Option<u64>,
    settings: ViewerSettings,
    guard: ViewerGuard,
) -> axum::http::Response<axum::body::Body> {
    use axum::http::HeaderValue;
    let (encoding, keep_alive) = (settings.encoding, settings.keep_alive);
    let stream = Box::pin(stream(store, key, run_id, after, settings, guard));
    let mut res = crate::response::event_stream_response(encoding, keep_alive, stream);
    if let Some(head) = head {
        let h = res.headers_mut();
        h.insert("agui-first-seq", HeaderValue::from(after + 1));
        h.insert("agui-head-seq", HeaderValue::from(head));
    }
    res
}

/// The body of a viewer starting after `after`: encoded chunks until the run's end
/// (the keep-alive is the response's: [`crate::response::event_stream_response`]).
pub(crate) fn stream(
    store: Arc<dyn RunStore>,
    key: RunKey,
    run_id: String,
    after: u64,
    settings: ViewerSettings,
    guard: ViewerGuard,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let state = State {
        store,
        key,
        run_id,
        cursor: after,
        writer: FrameWriter::new(settings.encoding, settings.downgrade),
        retry_ms: settings
            .retry_ms
            .filter(|_| settings.encoding == Encoding::Sse),
        done: false,
        _guard: guard,
    };
    futures_util::stream::unfold(state, next_chunk)
}

impl State {
    /// Writes the stored event `seq` (its canonical JSON), with its SSE `id:`
    /// (`{runId}:{seq}`); the `retry:` field goes before the first. A stored event that
    /// does not decode where it must (the store holds what this server wrote: a bug)
    /// ends the viewer, since skipping it would break the frame count; one over the size
    /// limit (a protobuf frame can be larger than the JSON the producer measured) is
    /// replaced by `RUN_ERROR` (code `event_too_large`), which ends it too.
    fn write(&mut self, seq: u64, json: &[u8], out: &mut Vec<u8>) {
        // Before the first event (only the resumable routes set it, and they rewrite
        // nothing: every event is written).
        if let Some(ms) = self.retry_ms.take() {
            sse::encode_retry(ms, out);
        }
        let written =
            self.writer
                .write_stored(json, Some(format_args!("{}:{seq}", self.run_id)), out);
        match written {
            Ok(_) => {}
            Err(FrameError::TooLarge {
                event_type, size, ..
            }) => {
                let err = crate::engine::event_too_large(event_type, size);
                let _ =
                    self.writer
                        .write_event(err, Some(format_args!("{}:{seq}", self.run_id)), out);
                self.done = true;
            }
            Err(err) => {
                tracing::error!(seq, error = %err, "a stored event does not decode: ending the viewer");
                self.done = true;
            }
        }
    }
}

async fn next_chunk(mut s: State) -> Option<(Result<Bytes, Infallible>, State)> {
    loop {
        if s.done {
            return None;
        }
        let batch = match s.store.read(&s.key, s.cursor, PAGE).await {
            Ok(b) => b,
            Err(RunStoreError::Gone { oldest, .. }) => {
                tracing::info!(
                    cursor = s.cursor,
                    oldest,
                    "viewer fell behind the retained log"
                );
                s.done = true;
                let comment = matches!(s.writer.encoding(), Encoding::Sse).then(|| {
                    let mut out = Vec::new();
                    sse::encode_comment("cursor_expired", &mut out);
                    Bytes::from(out)
                });
                return comment.map(|c| (Ok(c), s));
            }
            Err(e) => {
                tracing::info!(error = %e, "run no longer readable: ending the viewer");
                return None;
            }
        };
        if !batch.events.is_empty() {
            let mut out = Vec::new();
            for (i, json) in batch.events.iter().enumerate() {
                s.write(batch.first + i as u64, json, &mut out);
                if s.done {
                    break;
                }
            }
            s.cursor = batch.first + batch.events.len() as u64 - 1;
            if batch.status.is_terminal() && s.cursor >= batch.head {
                s.done = true;
            }
            return Some((Ok(Bytes::from(out)), s));
        }
        if batch.status.is_terminal() && s.cursor >= batch.head {
            return None;
        }
        s.store.wait(&s.key, s.cursor, POLL).await;
    }
}
