//! What can go wrong while decoding a stream, and where.

use crate::wire::JsonError;

/// Limits a decoder enforces on its input.
///
/// Every decoder holds at most about one event (plus one pushed chunk) in memory, so the
/// event size limit bounds its memory, whatever a peer sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecoderLimits {
    /// The largest event accepted, in bytes: for SSE the event's data (and any single
    /// line), for protobuf a frame including its 4-byte length prefix. A larger event
    /// is a fatal [`DecodeErrorKind::TooLarge`] error, reported as soon as the size is
    /// known, without waiting for (or buffering) the rest.
    ///
    /// Default: [`DecoderLimits::DEFAULT_MAX_EVENT_SIZE`] (10 MiB), the limit the
    /// reference client applies to both encodings, so that whatever the reference
    /// accepts is accepted here.
    pub max_event_size: usize,
}

impl DecoderLimits {
    /// 10 MiB: the reference client's limit (`MAX_BUFFER_SIZE` in its SSE and protobuf
    /// readers).
    pub const DEFAULT_MAX_EVENT_SIZE: usize = 10 * 1024 * 1024;

    /// Limits with the given maximum event size.
    pub fn with_max_event_size(mut self, bytes: usize) -> Self {
        self.max_event_size = bytes;
        self
    }
}

impl Default for DecoderLimits {
    fn default() -> Self {
        DecoderLimits {
            max_event_size: Self::DEFAULT_MAX_EVENT_SIZE,
        }
    }
}

/// A stream that could not be decoded: which event, where in the stream, and why.
///
/// `index` counts the events (SSE frames with data, protobuf frames) before the
/// offending one, skipped ones included, from 0; `offset` is the byte offset in the
/// whole stream of the start of the offending event's frame.
///
/// Errors for which [`DecodeError::is_fatal`] is false concern one event only: the
/// framing is intact, the decoder has consumed the bad event and can go on with the
/// next one (the reference client ends the stream at any error; whether to go on is the
/// caller's choice). Fatal errors end the stream: the decoder returns nothing more.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("event {index} (byte offset {offset}): {kind}")]
#[non_exhaustive]
pub struct DecodeError {
    /// Index of the offending event in the stream (0-based, skipped events included).
    pub index: u64,
    /// Byte offset, in the whole stream, where the offending event's frame starts.
    pub offset: u64,
    /// What was wrong.
    pub kind: DecodeErrorKind,
}

/// Why a stream could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// An event (or an SSE line) is larger than [`DecoderLimits::max_event_size`]. Fatal.
    #[error("the event is larger than the {limit}-byte limit")]
    TooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// The stream ended inside an event (an SSE event without its closing blank line,
    /// or a protobuf frame shorter than its length prefix). Fatal.
    #[error("the stream ended inside an event ({pending} bytes of it were received)")]
    Truncated {
        /// How many bytes of the unfinished event were received.
        pending: usize,
    },
    /// The SSE event's data is not a valid AG-UI event (not JSON, or JSON of the wrong
    /// shape); the error names the field and the position within the data.
    #[error("{0}")]
    Json(JsonError),
    /// A protobuf frame that is not a valid `ag_ui.Event` message, or one whose content
    /// is not a valid AG-UI event.
    #[error("invalid protobuf event: {0}")]
    Proto(String),
    /// An event type this version of the protocol does not define (its name, when the
    /// encoding carries one). Returned only when the decoder is told not to skip such
    /// events; by default they are skipped with a warning, as the reference client
    /// drops them.
    #[error("unknown event type{}", .0.as_ref().map(|t| format!(" {t:?}")).unwrap_or_default())]
    UnknownEventType(Option<String>),
}

impl DecodeError {
    pub(crate) fn new(index: u64, offset: u64, kind: DecodeErrorKind) -> Self {
        DecodeError {
            index,
            offset,
            kind,
        }
    }

    /// Whether the error ends the stream (the framing is lost or a limit was hit).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self.kind,
            DecodeErrorKind::TooLarge { .. } | DecodeErrorKind::Truncated { .. }
        )
    }
}
