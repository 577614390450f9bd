//! Wire encodings of event streams: Server-Sent Events and length-prefixed protobuf,
//! and the choice between them from an HTTP `Accept` header.
//!
//! - [`sse`]: `data: <JSON>\n\n` frames (the reference encoder's bytes) and a WHATWG
//!   event-stream decoder;
//! - [`proto`]: `@ag-ui/proto` 1.0 messages behind a 4-byte big-endian length;
//! - [`negotiate`]: the reference's verdict for an `Accept` header (note: a wildcard
//!   selects protobuf, as in the reference);
//! - [`EventEncoder`] and [`EventDecoder`]: either encoding behind one type, for servers
//!   and clients that pick it at run time;
//! - [`Framing`]: either encoding or JSON Lines, for tools that read and write
//!   recordings.
//!
//! Decoders are sans-io and incremental: push bytes split anywhere, pull events; their
//! memory is bounded by [`DecoderLimits`]. Errors ([`DecodeError`]) give the index of
//! the offending event and the byte offset of its frame.
//!
//! ```
//! use agui_sdk_core::encoding::{negotiate, EventDecoder, EventEncoder};
//! use agui_sdk_core::Event;
//!
//! // Server side: pick the encoding from the request's Accept header.
//! let encoder = EventEncoder::new(negotiate(Some("application/vnd.ag-ui.event+proto")));
//! assert_eq!(encoder.content_type(), "application/vnd.ag-ui.event+proto");
//! let mut body = Vec::new();
//! encoder.encode(&Event::run_started("t1", "r1"), &mut body);
//! encoder.encode(&Event::run_finished("t1", "r1"), &mut body);
//!
//! // Client side: pick the decoder from the response's Content-Type.
//! let mut decoder = EventDecoder::for_content_type(Some(encoder.content_type()));
//! for chunk in body.chunks(3) {
//!     decoder.push(chunk);
//! }
//! decoder.finish();
//! let events: Vec<Event> = std::iter::from_fn(|| decoder.next()).collect::<Result<_, _>>().unwrap();
//! assert_eq!(events.len(), 2);
//! ```

mod error;
mod framing;
mod negotiate;
#[cfg(feature = "proto")]
pub mod proto;
pub mod sse;

pub use error::{DecodeError, DecodeErrorKind, DecoderLimits};
pub use framing::{Framing, UnknownFraming};
pub use negotiate::{negotiate, negotiate_explicit};
#[cfg(feature = "proto")]
pub use proto::ProtoDecoder;
pub use sse::SseDecoder;

use crate::event::Event;

/// A wire encoding of an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// Server-Sent Events (`text/event-stream`): one `data:` line of JSON per event.
    #[default]
    Sse,
    /// Length-prefixed protobuf (`application/vnd.ag-ui.event+proto`; cargo feature
    /// `proto`, on by default).
    #[cfg(feature = "proto")]
    Proto,
}

impl Encoding {
    /// The media type of a response in this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Sse => sse::CONTENT_TYPE,
            #[cfg(feature = "proto")]
            Encoding::Proto => proto::CONTENT_TYPE,
        }
    }

    /// The encoding a response's `Content-Type` announces, as the reference client reads
    /// it: protobuf only for exactly `application/vnd.ag-ui.event+proto` (no parameters,
    /// this spelling), SSE for anything else, a missing header included.
    pub fn from_content_type(content_type: Option<&str>) -> Encoding {
        match content_type {
            #[cfg(feature = "proto")]
            Some(proto::CONTENT_TYPE) => Encoding::Proto,
            _ => Encoding::Sse,
        }
    }
}

/// Writes events in one encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventEncoder {
    encoding: Encoding,
}

impl EventEncoder {
    /// An encoder for `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        EventEncoder { encoding }
    }

    /// An encoder for the encoding the reference server would answer an `Accept`
    /// header with (see [`negotiate`]).
    pub fn for_accept(accept: Option<&str>) -> Self {
        Self::new(negotiate(accept))
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The media type of the response (`Content-Type`).
    pub fn content_type(&self) -> &'static str {
        self.encoding.content_type()
    }

    /// Appends one event's frame to `out`.
    #[inline]
    pub fn encode(&self, event: &Event, out: &mut Vec<u8>) {
        match self.encoding {
            Encoding::Sse => sse::encode_event(event, out),
            #[cfg(feature = "proto")]
            Encoding::Proto => proto::encode_event(event, out),
        }
    }

    /// One event's frame.
    pub fn encode_to_vec(&self, event: &Event) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.encode(event, &mut out);
        out
    }
}

/// One event as the decoder framed it, before the inbound pipeline reads it.
#[derive(Debug)]
#[non_exhaustive]
pub struct EventFrame<'a> {
    /// Index of the event in the stream (0-based).
    pub index: u64,
    /// Byte offset where the event's frame starts.
    pub offset: u64,
    /// The event.
    pub body: RawBody<'a>,
    /// SSE: the last event id at this event (the most recent `id:` field, possibly
    /// from an earlier event; empty when none came). Protobuf: always empty.
    pub last_event_id: &'a str,
}

/// The content of an [`EventFrame`].
#[derive(Debug)]
// A frame is read and handed on at once, never stored: boxing the event would cost an
// allocation per protobuf event for nothing.
#[allow(clippy::large_enum_variant)]
pub enum RawBody<'a> {
    /// The JSON text of an SSE event's data.
    Json(&'a [u8]),
    /// An event decoded from protobuf.
    Event(Event),
}

/// Reads events in one encoding: an [`SseDecoder`] or a [`ProtoDecoder`].
#[derive(Debug)]
pub enum EventDecoder {
    /// Server-Sent Events.
    Sse(SseDecoder),
    /// Length-prefixed protobuf (cargo feature `proto`).
    #[cfg(feature = "proto")]
    Proto(ProtoDecoder),
}

impl EventDecoder {
    /// A decoder for `encoding` with default limits.
    pub fn new(encoding: Encoding) -> Self {
        Self::with_limits(encoding, DecoderLimits::default())
    }

    /// A decoder for `encoding` with the given limits.
    pub fn with_limits(encoding: Encoding, limits: DecoderLimits) -> Self {
        match encoding {
            Encoding::Sse => EventDecoder::Sse(SseDecoder::with_limits(limits)),
            #[cfg(feature = "proto")]
            Encoding::Proto => EventDecoder::Proto(ProtoDecoder::with_limits(limits)),
        }
    }

    /// A decoder for a response with this `Content-Type` (see
    /// [`Encoding::from_content_type`]).
    pub fn for_content_type(content_type: Option<&str>) -> Self {
        Self::new(Encoding::from_content_type(content_type))
    }

    /// Whether events of unknown types are skipped (the default) or reported as errors.
    pub fn skip_unknown_events(self, skip: bool) -> Self {
        match self {
            EventDecoder::Sse(d) => EventDecoder::Sse(d.skip_unknown_events(skip)),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => EventDecoder::Proto(d.skip_unknown_events(skip)),
        }
    }

    /// The encoding this decoder reads.
    pub fn encoding(&self) -> Encoding {
        match self {
            EventDecoder::Sse(_) => Encoding::Sse,
            #[cfg(feature = "proto")]
            EventDecoder::Proto(_) => Encoding::Proto,
        }
    }

    /// Feeds the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        match self {
            EventDecoder::Sse(d) => d.push(bytes),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => d.push(bytes),
        }
    }

    /// Marks the end of the stream.
    pub fn finish(&mut self) {
        match self {
            EventDecoder::Sse(d) => d.finish(),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => d.finish(),
        }
    }

    /// The next event, `None` when more input is needed (or the stream has ended).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<Event, DecodeError>> {
        match self {
            EventDecoder::Sse(d) => d.next(),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => d.next(),
        }
    }

    /// The next event before it is read as JSON: for SSE the data bytes (borrowed),
    /// for protobuf the typed event (the protobuf schema has no room for unknown
    /// material). The inbound pipeline takes either.
    #[inline]
    pub fn next_raw(&mut self) -> Option<Result<EventFrame<'_>, DecodeError>> {
        match self {
            EventDecoder::Sse(d) => Some(d.next_frame()?.map(|f| EventFrame {
                index: f.index,
                offset: f.offset,
                body: RawBody::Json(f.data),
                last_event_id: f.last_event_id,
            })),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => {
                let offset = d.offset();
                let event = d.next()?;
                let index = d.events_seen().saturating_sub(1);
                Some(event.map(|event| EventFrame {
                    index,
                    offset,
                    body: RawBody::Event(event),
                    last_event_id: "",
                }))
            }
        }
    }

    /// How many events have been read, skipped ones included.
    pub fn events_seen(&self) -> u64 {
        match self {
            EventDecoder::Sse(d) => d.events_seen(),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => d.events_seen(),
        }
    }

    /// How many events of unknown types were skipped.
    pub fn skipped(&self) -> u64 {
        match self {
            EventDecoder::Sse(d) => d.skipped(),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => d.skipped(),
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        match self {
            EventDecoder::Sse(d) => d.offset(),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(d) => d.offset(),
        }
    }

    /// The last SSE event id received (always empty for protobuf).
    pub fn last_event_id(&self) -> &str {
        match self {
            EventDecoder::Sse(d) => d.last_event_id(),
            #[cfg(feature = "proto")]
            EventDecoder::Proto(_) => "",
        }
    }
}

impl From<SseDecoder> for EventDecoder {
    fn from(d: SseDecoder) -> Self {
        EventDecoder::Sse(d)
    }
}

#[cfg(feature = "proto")]
impl From<ProtoDecoder> for EventDecoder {
    fn from(d: ProtoDecoder) -> Self {
        EventDecoder::Proto(d)
    }
}
