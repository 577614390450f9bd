//! An adapter from a stream of byte chunks (an HTTP response body) to a stream of
//! events, for async runtimes. It needs only `futures-core` (cargo feature `stream`).
//!
//! ```
//! # async fn demo() {
//! use agui_sdk_core::encoding::{stream::DecodeStream, Encoding, EventDecoder};
//! use futures_util::StreamExt;
//!
//! let body = futures_util::stream::iter(vec![
//!     Ok::<_, std::io::Error>(b"data: {\"type\":\"RUN_ERROR\",".to_vec()),
//!     Ok(b"\"message\":\"x\"}\n\n".to_vec()),
//! ]);
//! let mut events = DecodeStream::new(body, EventDecoder::new(Encoding::Sse));
//! while let Some(event) = events.next().await {
//!     println!("{:?}", event.unwrap());
//! }
//! # }
//! ```

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::{DecodeError, EventDecoder};
use crate::event::Event;

/// A failure of a [`DecodeStream`]: the bytes could not be decoded, or the source
/// failed.
#[derive(Debug)]
pub enum StreamError<E> {
    /// The stream's bytes are not a valid event stream.
    Decode(DecodeError),
    /// The source of the bytes failed.
    Source(E),
}

impl<E: std::fmt::Display> std::fmt::Display for StreamError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Decode(e) => e.fmt(f),
            StreamError::Source(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for StreamError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Decode(e) => Some(e),
            StreamError::Source(e) => Some(e),
        }
    }
}

/// Decodes a stream of byte chunks into events. The stream ends after the source ends
/// (an unfinished event is reported first), after a fatal decode error, or after the
/// source fails; a non-fatal decode error concerns one event and the stream goes on.
///
/// The source must be `Unpin`; pin one that is not with `Box::pin`.
#[derive(Debug)]
pub struct DecodeStream<S> {
    source: S,
    decoder: EventDecoder,
    source_done: bool,
    ended: bool,
}

impl<S> DecodeStream<S> {
    /// Decodes `source` with `decoder`.
    pub fn new(source: S, decoder: EventDecoder) -> Self {
        DecodeStream {
            source,
            decoder,
            source_done: false,
            ended: false,
        }
    }

    /// The decoder (for its last event id, counters and offset).
    pub fn decoder(&self) -> &EventDecoder {
        &self.decoder
    }

    /// The source and the decoder.
    pub fn into_parts(self) -> (S, EventDecoder) {
        (self.source, self.decoder)
    }
}

impl<S, B, E> Stream for DecodeStream<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    type Item = Result<Event, StreamError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if let Some(r) = this.decoder.next() {
                if let Err(e) = &r {
                    if e.is_fatal() {
                        this.ended = true;
                    }
                }
                return Poll::Ready(Some(r.map_err(StreamError::Decode)));
            }
            if this.source_done {
                this.ended = true;
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.source).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.decoder.push(chunk.as_ref()),
                Poll::Ready(Some(Err(e))) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(StreamError::Source(e))));
                }
                Poll::Ready(None) => {
                    this.decoder.finish();
                    this.source_done = true;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
