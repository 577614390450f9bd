//! `Stream` adapters (over `futures_core::Stream`, runtime-agnostic) for chunk
//! expansion, compaction and verification. Each wraps the same state machine as its
//! iterator counterpart.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::{ChunkError, ChunkExpander, Compactor, Verifier, VerifyError};
use crate::event::Event;

/// Expands chunk events of an event stream; yields an error (then ends) where the
/// reference errors the stream.
#[derive(Debug)]
pub struct ExpandChunksStream<S> {
    inner: S,
    expander: ChunkExpander,
    buffer: VecDeque<Event>,
    scratch: Vec<Event>,
    done: bool,
}

impl<S> ExpandChunksStream<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        ExpandChunksStream {
            inner,
            expander: ChunkExpander::new(),
            buffer: VecDeque::new(),
            scratch: Vec::new(),
            done: false,
        }
    }
}

impl<S: Stream<Item = Event> + Unpin> Stream for ExpandChunksStream<S> {
    type Item = Result<Event, ChunkError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(e) = this.buffer.pop_front() {
                return Poll::Ready(Some(Ok(e)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.done = true;
                }
                Poll::Ready(Some(e)) => {
                    if let Err(err) = this.expander.push(e, &mut this.scratch) {
                        this.done = true;
                        this.scratch.clear();
                        return Poll::Ready(Some(Err(err)));
                    }
                    this.buffer.extend(this.scratch.drain(..));
                }
            }
        }
    }
}

/// Compacts a recorded event stream, yielding events as soon as their place is known.
#[derive(Debug)]
pub struct CompactStream<S> {
    inner: S,
    compactor: Option<Compactor>,
    buffer: VecDeque<Event>,
    scratch: Vec<Event>,
}

impl<S> CompactStream<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        CompactStream {
            inner,
            compactor: Some(Compactor::new()),
            buffer: VecDeque::new(),
            scratch: Vec::new(),
        }
    }
}

impl<S: Stream<Item = Event> + Unpin> Stream for CompactStream<S> {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = &mut *self;
        loop {
            if let Some(e) = this.buffer.pop_front() {
                return Poll::Ready(Some(e));
            }
            let Some(c) = this.compactor.as_mut() else {
                return Poll::Ready(None);
            };
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(e)) => c.push(e, &mut this.scratch),
                Poll::Ready(None) => {
                    if let Some(c) = this.compactor.take() {
                        c.finish(&mut this.scratch);
                    }
                }
            }
            this.buffer.extend(this.scratch.drain(..));
        }
    }
}

/// Passes events through while verifying them; yields the first violation as an error
/// and then ends.
#[derive(Debug)]
pub struct VerifyStream<S> {
    inner: S,
    verifier: Verifier,
    failed: bool,
}

impl<S> VerifyStream<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        VerifyStream {
            inner,
            verifier: Verifier::new(),
            failed: false,
        }
    }
}

impl<S: Stream<Item = Event> + Unpin> Stream for VerifyStream<S> {
    type Item = Result<Event, VerifyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(e)) => match this.verifier.push(&e) {
                Ok(()) => Poll::Ready(Some(Ok(e))),
                Err(err) => {
                    this.failed = true;
                    Poll::Ready(Some(Err(err)))
                }
            },
        }
    }
}
