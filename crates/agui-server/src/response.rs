//! The streaming response of a run: the agent's events, passed through the lifecycle
//! guard, encoded and handed to the socket one by one, with SSE keep-alive comments
//! and the shutdown grace period.

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use agui_core::encoding::{Encoding, EventEncoder};
use agui_core::Event;
use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::agent::AgentStream;
use crate::context::RunContext;
use crate::lifecycle::{GuardFlow, LifecycleGuard};

/// Whether the protobuf encoding is served.
pub(crate) const PROTOBUF_AVAILABLE: bool = true;

/// Chunks up to this size are copied out of the output buffer, which keeps its
/// capacity; larger ones take the buffer with them.
const SMALL_CHUNK: usize = 4096;

/// What the output buffer starts with when a burst of events begins.
const FIRST_CHUNK: usize = 2048;

/// A chunk is handed to the body once this many bytes are encoded.
const BATCH_BYTES: usize = 16 * 1024;

/// The largest encoded event sent: what the decoders accept on input (10 MiB), so that
/// no client of this crate (or the reference, whose limit is the same) is sent an event
/// it refuses.
pub(crate) const MAX_OUTPUT_EVENT: usize =
    agui_core::encoding::DecoderLimits::DEFAULT_MAX_EVENT_SIZE;

/// Encodes the events waiting in `scratch` into `out`. An event larger than
/// [`MAX_OUTPUT_EVENT`] is not written: its type and size are returned (the caller ends
/// the run; the events after it are not sent).
fn encode_into(
    encoder: &EventEncoder,
    scratch: &mut Vec<Event>,
    out: &mut Vec<u8>,
    sent: &mut u64,
) -> Option<(agui_core::EventType, usize)> {
    for e in scratch.drain(..) {
        let before = out.len();
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
    scratch: &mut Vec<Event>,
    out: &mut Vec<u8>,
    sent: &mut u64,
) -> bool {
    let Some((ty, size)) = encode_into(encoder, scratch, out, sent) else {
        return false;
    };
    scratch.clear();
    let message = format!(
        "the agent emitted a {ty} event of {size} bytes, over the {MAX_OUTPUT_EVENT} a client accepts"
    );
    tracing::warn!(%message, "event too large: ending the run");
    let mut e = agui_core::event::RunError::new(message);
    e.code = Some("event_too_large".into());
    encoder.encode(&Event::from(e), out);
    *sent += 1;
    true
}

const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// Settings of one run's stream.
#[derive(Debug, Clone)]
pub(crate) struct StreamSettings {
    pub encoding: Encoding,
    pub keep_alive: Option<Duration>,
    pub shutdown_grace: Duration,
}

/// The body stream of one run.
pub(crate) struct RunStream {
    agent: Option<AgentStream>,
    guard: LifecycleGuard,
    encoder: EventEncoder,
    ctx: RunContext,
    span: tracing::Span,
    keep_alive: Option<(Duration, Pin<Box<Sleep>>)>,
    last_write: Instant,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    shutdown_grace: Duration,
    grace_timer: Option<Pin<Box<Sleep>>>,
    done: bool,
    scratch: Vec<Event>,
    /// Encoded bytes not yet handed to the body.
    out: Vec<u8>,
    sent: u64,
    /// Held while the run streams (the concurrent-run limit).
    _permit: crate::cost::RunPermit,
}

impl RunStream {
    pub(crate) fn new(
        agent: AgentStream,
        guard: LifecycleGuard,
        ctx: RunContext,
        shutdown: &tokio_util::sync::CancellationToken,
        settings: &StreamSettings,
        span: tracing::Span,
        permit: crate::cost::RunPermit,
    ) -> Self {
        // Keep-alive comments exist only in SSE.
        let keep_alive = match (settings.encoding, settings.keep_alive) {
            (Encoding::Sse, Some(d)) if !d.is_zero() => Some((d, Box::pin(tokio::time::sleep(d)))),
            _ => None,
        };
        RunStream {
            agent: Some(agent),
            guard,
            encoder: EventEncoder::new(settings.encoding),
            ctx,
            span,
            keep_alive,
            last_write: Instant::now(),
            shutdown: Box::pin(shutdown.clone().cancelled_owned()),
            shutdown_grace: settings.shutdown_grace,
            grace_timer: None,
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
            &mut self.scratch,
            &mut self.out,
            &mut self.sent,
        ) {
            self.stop_agent();
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

    /// Stops reading the agent: drops it and cancels its context.
    fn stop_agent(&mut self) {
        self.agent = None;
        self.ctx.cancel();
    }

    /// Ends the run after the guard has produced the terminal event.
    fn finish(&mut self) -> Poll<Option<Result<Bytes, Infallible>>> {
        self.stop_agent();
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

        // Shutdown: start the grace period (the agent's context is cancelled by the
        // shutdown token itself, being its child), then end the run when it is over.
        if this.grace_timer.is_none() && this.shutdown.as_mut().poll(cx).is_ready() {
            tracing::info!(grace = ?this.shutdown_grace, "shutdown: waiting for the run to finish");
            this.grace_timer = Some(Box::pin(tokio::time::sleep(this.shutdown_grace)));
        }
        if let Some(t) = this.grace_timer.as_mut() {
            if t.as_mut().poll(cx).is_ready() {
                tracing::warn!("shutdown: grace period over, ending the run");
                this.guard.on_shutdown(&mut this.scratch);
                return this.finish();
            }
        }

        if let Some(agent) = this.agent.as_mut() {
            // Everything the agent has ready goes out in one chunk (up to a bound):
            // no added delay, fewer frames and writes under load.
            loop {
                let polled =
                    std::panic::catch_unwind(AssertUnwindSafe(|| agent.poll_next_unpin(cx)));
                match polled {
                    Err(panic) => {
                        this.guard.on_panic(&*panic, &mut this.scratch);
                        return this.finish();
                    }
                    Ok(Poll::Ready(Some(Ok(event)))) => {
                        if this.out.capacity() == 0 {
                            // A burst starts: room for a few events at once, rather than
                            // growing from nothing through every small size.
                            this.out.reserve(FIRST_CHUNK);
                        }
                        if this.guard.on_event(event, &mut this.scratch) == GuardFlow::End {
                            return this.finish();
                        }
                        if encode_scratch(
                            &this.encoder,
                            &mut this.scratch,
                            &mut this.out,
                            &mut this.sent,
                        ) {
                            return this.finish();
                        }
                        if this.out.len() >= BATCH_BYTES {
                            break;
                        }
                    }
                    Ok(Poll::Ready(Some(Err(err)))) => {
                        this.guard.on_error(err, &mut this.scratch);
                        return this.finish();
                    }
                    Ok(Poll::Ready(None)) => {
                        this.guard.on_end(&mut this.scratch);
                        return this.finish();
                    }
                    Ok(Poll::Pending) => break,
                }
            }
            if !this.out.is_empty() {
                return Poll::Ready(Some(Ok(this.take_chunk())));
            }
        }

        if let Some((interval, timer)) = this.keep_alive.as_mut() {
            if timer.as_mut().poll(cx).is_ready() {
                let now = Instant::now();
                let due = this.last_write + *interval;
                if now >= due {
                    timer.as_mut().reset(now + *interval);
                    // Register the timer again before returning.
                    let _ = timer.as_mut().poll(cx);
                    this.last_write = now;
                    return Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE_COMMENT))));
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
            self.ctx.mark_disconnected();
        }
        self.ctx.cancel();
    }
}

/// The HTTP response streaming `stream`.
pub(crate) fn streaming_response(encoding: Encoding, stream: RunStream) -> Response<Body> {
    let mut res = Response::new(Body::from_stream(stream));
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
