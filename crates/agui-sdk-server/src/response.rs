//! The streaming response of a run: the agent's events, passed through the lifecycle
//! guard, encoded and handed to the socket one by one, with SSE keep-alive comments
//! and the shutdown grace period.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use agui_sdk_core::encoding::{Encoding, EventEncoder};
use agui_sdk_core::Event;
use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use std::future::Future;

use futures_util::Stream;
use tokio::time::{Instant, Sleep};

use crate::engine::{Progress, RunDriver};

/// Whether the protobuf encoding is served.
pub(crate) const PROTOBUF_AVAILABLE: bool = true;

/// Chunks up to this size are copied out of the output buffer, which keeps its
/// capacity; larger ones take the buffer with them.
const SMALL_CHUNK: usize = 4096;

/// What the output buffer starts with when a burst of events begins.
const FIRST_CHUNK: usize = 2048;

/// A chunk is handed to the body once this many bytes are encoded.
const BATCH_BYTES: usize = 16 * 1024;

pub(crate) use crate::engine::MAX_OUTPUT_EVENT;

/// Encodes the events waiting in `scratch` into `out`. An event larger than
/// [`MAX_OUTPUT_EVENT`] is not written: its type and size are returned (the caller ends
/// the run; the events after it are not sent).
fn encode_into(
    encoder: &EventEncoder,
    downgrade: agui_sdk_core::semantics::Downgrade,
    scratch: &mut Vec<Event>,
    out: &mut Vec<u8>,
    sent: &mut u64,
) -> Option<(agui_sdk_core::EventType, usize)> {
    for e in scratch.drain(..) {
        let before = out.len();
        let ty = e.event_type();
        if downgrade.is_active() {
            use agui_sdk_core::semantics::Outgoing;
            match downgrade.apply(e) {
                Some(Outgoing::Event(e)) => encoder.encode(&e, out),
                Some(Outgoing::Json(v)) if encoder.encoding() == Encoding::Sse => {
                    let mut text = Vec::new();
                    agui_sdk_core::wire::write_canonical(&v, &mut text);
                    agui_sdk_core::encoding::sse::encode_data(&text, out);
                }
                // No protobuf frame for a JSON-only rewrite; nothing for a dropped event.
                Some(Outgoing::Json(_)) | None => continue,
            }
            let size = out.len() - before;
            if size > MAX_OUTPUT_EVENT {
                out.truncate(before);
                return Some((ty, size));
            }
            *sent += 1;
            continue;
        }
        encoder.encode(&e, out);
        let size = out.len() - before;
        if size > MAX_OUTPUT_EVENT {
            out.truncate(before);
            return Some((e.event_type(), size));
        }
        *sent += 1;
    }
    None
}

/// Encodes what the guard produced. An event too large for a client is replaced by
/// `RUN_ERROR` (code `event_too_large`), which ends the run: `true` then.
fn encode_scratch(
    encoder: &EventEncoder,
    downgrade: agui_sdk_core::semantics::Downgrade,
    scratch: &mut Vec<Event>,
    out: &mut Vec<u8>,
    sent: &mut u64,
) -> bool {
    let Some((ty, size)) = encode_into(encoder, downgrade, scratch, out, sent) else {
        return false;
    };
    scratch.clear();
    encoder.encode(&crate::engine::event_too_large(ty, size), out);
    *sent += 1;
    true
}

/// Settings of one run's stream.
#[derive(Debug, Clone)]
pub(crate) struct StreamSettings {
    pub encoding: Encoding,
    pub keep_alive: Option<Duration>,
    /// How events are rewritten for the consumer's declared protocol version.
    pub downgrade: agui_sdk_core::semantics::Downgrade,
}

/// The body stream of one run.
pub(crate) struct RunStream {
    run: RunDriver,
    encoder: EventEncoder,
    downgrade: agui_sdk_core::semantics::Downgrade,
    span: tracing::Span,
    /// The keep-alive interval, and its timer once the stream has had to wait (a run
    /// that ends in one step never sets one).
    keep_alive: Option<(Duration, Option<Pin<Box<Sleep>>>)>,
    last_write: Instant,
    done: bool,
    scratch: Vec<Event>,
    /// Encoded bytes not yet handed to the body.
    out: Vec<u8>,
    sent: u64,
    /// Held while the run streams (the concurrent-run limit).
    _permit: crate::budget::RunPermit,
}

impl RunStream {
    pub(crate) fn new(
        run: RunDriver,
        settings: &StreamSettings,
        span: tracing::Span,
        permit: crate::budget::RunPermit,
    ) -> Self {
        // Keep-alive comments exist only in SSE.
        let keep_alive = match (settings.encoding, settings.keep_alive) {
            (Encoding::Sse, Some(d)) if !d.is_zero() => Some((d, None)),
            _ => None,
        };
        RunStream {
            run,
            encoder: EventEncoder::new(settings.encoding),
            downgrade: settings.downgrade,
            span,
            keep_alive,
            last_write: Instant::now(),
            done: false,
            scratch: Vec::new(),
            out: Vec::new(),
            sent: 0,
            _permit: permit,
        }
    }

    /// The bytes encoded so far, as one chunk.
    fn take_chunk(&mut self) -> Bytes {
        if encode_scratch(
            &self.encoder,
            self.downgrade,
            &mut self.scratch,
            &mut self.out,
            &mut self.sent,
        ) {
            self.run.detach();
            self.done = true;
        }
        self.last_write = Instant::now();
        // A small chunk is copied out so that the buffer keeps its capacity (handing the
        // buffer itself over would make the next chunk regrow it from nothing); a large
        // one, or the last, is handed over as it is.
        if self.out.len() <= SMALL_CHUNK && !self.done {
            let chunk = Bytes::copy_from_slice(&self.out);
            self.out.clear();
            chunk
        } else {
            Bytes::from(std::mem::take(&mut self.out))
        }
    }

    /// Ends the run after the driver has produced the terminal event.
    fn finish(&mut self) -> Poll<Option<Result<Bytes, Infallible>>> {
        self.done = true;
        let bytes = self.take_chunk();
        tracing::info!(events = self.sent, "run ended");
        Poll::Ready(Some(Ok(bytes)))
    }
}

impl Stream for RunStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        let span = this.span.clone();
        let _entered = span.enter();

        // Everything the agent has ready goes out in one chunk (up to a bound): no added
        // delay, fewer frames and writes under load.
        loop {
            match this.run.poll_agent(cx, &mut this.scratch) {
                Poll::Ready(Progress::Ended) => return this.finish(),
                Poll::Ready(Progress::More) => {
                    if this.out.capacity() == 0 {
                        // A burst starts: room for a few events at once, rather than
                        // growing from nothing through every small size.
                        this.out.reserve(FIRST_CHUNK);
                    }
                    if encode_scratch(
                        &this.encoder,
                        this.downgrade,
                        &mut this.scratch,
                        &mut this.out,
                        &mut this.sent,
                    ) {
                        this.run.detach();
                        return this.finish();
                    }
                    if this.out.len() >= BATCH_BYTES {
                        break;
                    }
                }
                Poll::Pending => break,
            }
        }
        // The grace period of a shutdown, watched once the agent has nothing more ready
        // (or the batch is full), so that a run that ends in one step never waits on
        // it; the agent's context, a child of the shutdown signal, is cancelled by the
        // signal itself.
        if this.run.poll_shutdown(cx, &mut this.scratch).is_ready() {
            return this.finish();
        }
        if !this.out.is_empty() {
            return Poll::Ready(Some(Ok(this.take_chunk())));
        }

        if let Some((interval, timer)) = this.keep_alive.as_mut() {
            let last_write = this.last_write;
            let timer = timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(last_write + *interval)));
            if timer.as_mut().poll(cx).is_ready() {
                let now = Instant::now();
                let due = this.last_write + *interval;
                if now >= due {
                    timer.as_mut().reset(now + *interval);
                    // Register the timer again before returning.
                    let _ = timer.as_mut().poll(cx);
                    this.last_write = now;
                    return Poll::Ready(Some(Ok(Bytes::from_static(
                        agui_sdk_core::encoding::sse::KEEP_ALIVE,
                    ))));
                }
                timer.as_mut().reset(due);
                let _ = timer.as_mut().poll(cx);
            }
        }
        // An idle stream (waiting for its agent, perhaps for minutes) keeps no buffers:
        // the next burst allocates them again, once.
        if this.scratch.is_empty() && this.scratch.capacity() > 0 {
            this.scratch = Vec::new();
        }
        if this.out.is_empty() && this.out.capacity() > 0 {
            this.out = Vec::new();
        }
        Poll::Pending
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        if !self.done {
            let _entered = self.span.enter();
            tracing::info!(events = self.sent, "client went away: cancelling the run");
            self.run.abandon();
        }
    }
}

/// The HTTP response streaming `stream`.
pub(crate) fn streaming_response(encoding: Encoding, stream: RunStream) -> Response<Body> {
    event_stream_response(encoding, Body::from_stream(stream))
}

/// Every event-stream response of the server (a run, a re-attach, a CopilotKit run or
/// connect): status 200, the encoding's content type, `Cache-Control: no-cache` (as the
/// reference servers send) and `X-Accel-Buffering: no` (so that a proxy in front passes
/// each event on at once).
pub(crate) fn event_stream_response(encoding: Encoding, body: Body) -> Response<Body> {
    let mut res = Response::new(body);
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(encoding.content_type()),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    res
}
