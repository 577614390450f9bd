//! The streaming response of a run: the agent's events, passed through the lifecycle
//! guard, encoded and handed to the socket one by one, with SSE keep-alive comments
//! and the shutdown grace period.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::semantics::{FrameError, FrameWriter, Written};
use agui_sdk_core::Event;
use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use std::future::Future;

use futures_util::Stream;
use tokio::time::{Instant, Sleep};

use crate::engine::{Progress, RunDriver};

/// Chunks up to this size are copied out of the output buffer, which keeps its
/// capacity; larger ones take the buffer with them.
const SMALL_CHUNK: usize = 4096;

/// What the output buffer starts with when a burst of events begins.
const FIRST_CHUNK: usize = 2048;

/// A chunk is handed to the body once this many bytes are encoded.
const BATCH_BYTES: usize = 16 * 1024;

/// Writes the events waiting in `scratch` into `out` with `writer`. An event over the
/// size limit ([`FrameWriter`]'s rule, the decoders') is replaced by `RUN_ERROR` (code
/// `event_too_large`), which ends the run: `true` then (the events after it are not
/// sent).
fn encode_scratch(
    writer: &FrameWriter,
    scratch: &mut Vec<Event>,
    out: &mut Vec<u8>,
    sent: &mut u64,
) -> bool {
    for e in scratch.drain(..) {
        match writer.write_event(e, None, out) {
            Ok(Written::Frame) => *sent += 1,
            Ok(Written::Dropped) => {}
            Err(FrameError::TooLarge {
                event_type, size, ..
            }) => {
                // The rest of the batch is dropped with the drain.
                let _ =
                    writer.write_event(crate::engine::event_too_large(event_type, size), None, out);
                *sent += 1;
                return true;
            }
            // A live event is never read back from text.
            Err(_) => {}
        }
    }
    false
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
    writer: FrameWriter,
    span: tracing::Span,
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
        RunStream {
            run,
            writer: FrameWriter::new(settings.encoding, settings.downgrade),
            span,
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
            &self.writer,
            &mut self.scratch,
            &mut self.out,
            &mut self.sent,
        ) {
            self.run.detach();
            self.done = true;
        }
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
                        &this.writer,
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
pub(crate) fn streaming_response(settings: &StreamSettings, stream: RunStream) -> Response<Body> {
    event_stream_response(settings.encoding, settings.keep_alive, stream)
}

/// Every event-stream response of the server (a run, a re-attach, a CopilotKit run or
/// connect): status 200, the encoding's content type, `Cache-Control: no-cache` (as the
/// reference servers send) and `X-Accel-Buffering: no` (so that a proxy in front passes
/// each event on at once); on SSE, a keep-alive comment once `keep_alive` passes
/// without a chunk ([`KeepAlive`]).
pub(crate) fn event_stream_response<S>(
    encoding: Encoding,
    keep_alive: Option<Duration>,
    body: S,
) -> Response<Body>
where
    S: Stream<Item = Result<Bytes, Infallible>> + Unpin + Send + 'static,
{
    // Keep-alive comments exist only in SSE.
    let keep_alive = keep_alive.filter(|d| encoding == Encoding::Sse && !d.is_zero());
    let mut res = Response::new(Body::from_stream(KeepAlive::new(body, keep_alive)));
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

/// An event-stream body with SSE keep-alive comments: one is sent when the interval
/// passes without a chunk of the body (as axum's `Sse` keeps a stream alive). The
/// timer is made only once the body has had to wait: a body that never waits (a run
/// that ends in one step) never sets one.
pub(crate) struct KeepAlive<S> {
    inner: S,
    /// The interval, and its timer once the body has had to wait.
    every: Option<(Duration, Option<Pin<Box<Sleep>>>)>,
    last_write: Instant,
}

impl<S> KeepAlive<S> {
    /// `inner` with a keep-alive comment every `every` of silence (none: no comments).
    pub(crate) fn new(inner: S, every: Option<Duration>) -> Self {
        KeepAlive {
            inner,
            every: every.map(|d| (d, None)),
            last_write: Instant::now(),
        }
    }
}

impl<S> Stream for KeepAlive<S>
where
    S: Stream<Item = Result<Bytes, Infallible>> + Unpin,
{
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(chunk)) => {
                if this.every.is_some() {
                    this.last_write = Instant::now();
                }
                return Poll::Ready(Some(chunk));
            }
            Poll::Ready(None) => {
                // Nothing more to keep alive: the timer goes.
                this.every = None;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        let Some((interval, timer)) = this.every.as_mut() else {
            return Poll::Pending;
        };
        let last_write = this.last_write;
        let timer =
            timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(last_write + *interval)));
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
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agui_sdk_core::encoding::sse;
    use futures_util::StreamExt;

    type Chunks = tokio::sync::mpsc::UnboundedSender<Result<Bytes, Infallible>>;

    /// A body whose chunks the test sends, wrapped in the keep-alive.
    fn body(every: Option<Duration>) -> (Chunks, impl Stream<Item = Result<Bytes, Infallible>>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let inner = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        (tx, KeepAlive::new(inner, every))
    }

    fn bytes(item: Option<Result<Bytes, Infallible>>) -> Bytes {
        match item {
            Some(Ok(b)) => b,
            None => panic!("the body ended"),
        }
    }

    // Tokio's paused clock: the runtime moves time to the next timer when idle.
    #[tokio::test(start_paused = true)]
    async fn a_silent_body_gets_a_keep_alive_each_interval_after_its_last_chunk() {
        let every = Duration::from_secs(10);
        let (tx, ka) = body(Some(every));
        let mut ka = std::pin::pin!(ka);
        let start = Instant::now();
        assert_eq!(bytes(ka.next().await), sse::KEEP_ALIVE);
        assert_eq!(Instant::now() - start, every);
        // A chunk five seconds later: the next keep-alive is due ten after it.
        tokio::time::advance(Duration::from_secs(5)).await;
        tx.send(Ok(Bytes::from_static(b"data: {}\n\n"))).unwrap();
        assert_eq!(bytes(ka.next().await), &b"data: {}\n\n"[..]);
        let chunk_at = Instant::now();
        assert_eq!(bytes(ka.next().await), sse::KEEP_ALIVE);
        assert_eq!(Instant::now() - chunk_at, every);
        drop(tx);
        assert!(ka.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn without_an_interval_a_silent_body_stays_silent() {
        let (tx, ka) = body(None);
        let mut ka = std::pin::pin!(ka);
        let hour = Duration::from_secs(3600);
        assert!(tokio::time::timeout(hour, ka.next()).await.is_err());
        tx.send(Ok(Bytes::from_static(b"x"))).unwrap();
        drop(tx);
        assert_eq!(bytes(ka.next().await), &b"x"[..]);
        assert!(ka.next().await.is_none());
    }
}
