//! A viewer of a run in the run store: one HTTP response streaming the run's log from a
//! cursor, then its live tail, until the terminal event. The same code serves the
//! response of the request that started a resumable run, every re-attach, and the
//! CopilotKit runtime's `/run` and `/connect` (after a thread's history).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::encoding::sse;
use agui_sdk_core::encoding::{Encoding, EventEncoder};
use agui_sdk_core::semantics::{Downgrade, Outgoing};
use agui_sdk_core::Event;
use bytes::Bytes;
use tokio::time::Instant;

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
    settings: ViewerSettings,
    encoder: EventEncoder,
    first: bool,
    last_write: Instant,
    done: bool,
    _guard: ViewerGuard,
}

/// The streaming response of a viewer starting after `after` (`head` is the head when
/// it starts, for the `AGUI-Head-Seq` header): a resumable run's.
#[cfg(feature = "resumable")]
pub(crate) fn response(
    store: Arc<dyn RunStore>,
    key: RunKey,
    run_id: String,
    after: u64,
    head: u64,
    settings: ViewerSettings,
    guard: ViewerGuard,
) -> axum::http::Response<axum::body::Body> {
    use axum::http::HeaderValue;
    let encoding = settings.encoding;
    let stream = stream(store, key, run_id, after, settings, guard);
    let mut res =
        crate::response::event_stream_response(encoding, axum::body::Body::from_stream(stream));
    let h = res.headers_mut();
    h.insert("agui-first-seq", HeaderValue::from(after + 1));
    h.insert("agui-head-seq", HeaderValue::from(head));
    res
}

/// The body of a viewer starting after `after`: encoded chunks until the run's end.
pub(crate) fn stream(
    store: Arc<dyn RunStore>,
    key: RunKey,
    run_id: String,
    after: u64,
    settings: ViewerSettings,
    guard: ViewerGuard,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let encoding = settings.encoding;
    let state = State {
        store,
        key,
        run_id,
        cursor: after,
        encoder: EventEncoder::new(encoding),
        settings,
        first: true,
        last_write: Instant::now(),
        done: false,
        _guard: guard,
    };
    futures_util::stream::unfold(state, next_chunk)
}

impl State {
    fn write(&mut self, seq: u64, json: &[u8], out: &mut Vec<u8>) {
        use agui_sdk_core::semantics::JsonRewrite;
        let spliced;
        let json = match self.settings.downgrade.apply_json(json) {
            JsonRewrite::Unchanged(text) => text,
            JsonRewrite::Spliced(text) => {
                spliced = text;
                &spliced[..]
            }
            JsonRewrite::Decode => return self.write_downgraded(seq, json, out),
        };
        match self.settings.encoding {
            Encoding::Sse => {
                self.sse_head(seq, out);
                sse::encode_data(json, out);
            }
            Encoding::Proto => match Event::from_json_slice(json) {
                Ok(e) => self.encoder.encode(&e, out),
                // The store holds what this server wrote; a frame that does not decode
                // is a bug, and skipping it would break the frame count.
                Err(err) => {
                    tracing::error!(seq, error = %err, "a stored event does not decode: ending the viewer");
                    self.done = true;
                }
            },
        }
    }
}

impl State {
    /// The `retry:` field before the first event, and each event's `id:`.
    fn sse_head(&mut self, seq: u64, out: &mut Vec<u8>) {
        if self.first {
            if let Some(ms) = self.settings.retry_ms {
                sse::encode_retry(ms, out);
            }
            self.first = false;
        }
        sse::encode_id(format_args!("{}:{seq}", self.run_id), out);
    }

    /// Writes a stored event rewritten for a consumer of an older protocol version
    /// (dropped when it has no equivalent there).
    fn write_downgraded(&mut self, seq: u64, json: &[u8], out: &mut Vec<u8>) {
        let event = match Event::from_json_slice(json) {
            Ok(e) => e,
            Err(err) => {
                tracing::error!(seq, error = %err, "a stored event does not decode: ending the viewer");
                self.done = true;
                return;
            }
        };
        let Some(outgoing) = self.settings.downgrade.apply(event) else {
            return;
        };
        match (self.settings.encoding, outgoing) {
            (Encoding::Sse, Outgoing::Event(e)) => {
                self.sse_head(seq, out);
                self.encoder.encode(&e, out);
            }
            (Encoding::Sse, Outgoing::Json(v)) => {
                self.sse_head(seq, out);
                let mut text = Vec::new();
                agui_sdk_core::wire::write_canonical(&v, &mut text);
                sse::encode_data(&text, out);
            }
            (Encoding::Proto, Outgoing::Event(e)) => self.encoder.encode(&e, out),
            // A rewrite protobuf cannot carry: the JSON form has no frame.
            (Encoding::Proto, Outgoing::Json(_)) => {
                tracing::debug!(seq, "a downgraded event has no protobuf frame: skipped")
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
                let comment = matches!(s.settings.encoding, Encoding::Sse).then(|| {
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
            s.last_write = Instant::now();
            return Some((Ok(Bytes::from(out)), s));
        }
        if batch.status.is_terminal() && s.cursor >= batch.head {
            return None;
        }
        s.store.wait(&s.key, s.cursor, POLL).await;
        if let (Encoding::Sse, Some(k)) = (s.settings.encoding, s.settings.keep_alive) {
            if !k.is_zero() && s.last_write.elapsed() >= k {
                s.last_write = Instant::now();
                return Some((Ok(Bytes::from_static(sse::KEEP_ALIVE)), s));
            }
        }
    }
}
