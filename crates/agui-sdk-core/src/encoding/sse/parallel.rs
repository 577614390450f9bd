//! **Unstable** (cargo feature `unstable-parallel`, off by default): what `agui-sdk-cli`
//! reads one SSE stream on several threads with. Not covered by semantic versioning:
//! any release may change or remove it. The stable way to read a stream is
//! [`SseDecoder`] (or [`EventDecoder`](crate::encoding::EventDecoder)).
//!
//! The stream is cut just after blank lines ([`last_boundary`]); each piece is read by
//! a decoder restarted at the piece's offset ([`restart_with`]), which gives exactly
//! the events and errors one decoder reading the whole stream gives, but for event
//! indexes, which count from the piece's first event; the frames' data is read as
//! events with [`decode_data`], or ahead of the inbound pipeline with a [`Recycler`].

use super::SseDecoder;
use crate::encoding::DecodeError;
use crate::event::Event;

pub use crate::event::plain::Recycler;

/// Where `bytes`, a piece of an SSE stream that starts at a line start, can be cut last
/// so that a decoder restarted there ([`restart_with`]) reads the rest exactly as one
/// decoder would: just past the last blank line that ends with a line feed (no frame is
/// open there, and no carriage return waits for its line feed). `None` when there is
/// none.
///
/// ```
/// use agui_sdk_core::encoding::sse::parallel::last_boundary;
/// assert_eq!(last_boundary(b"data: x\n\ndata: y\n"), Some(9));
/// assert_eq!(last_boundary(b"data: x\r\n"), None);
/// ```
#[inline]
pub fn last_boundary(bytes: &[u8]) -> Option<usize> {
    super::last_boundary(bytes)
}

/// Makes `dec` read `piece`, the bytes of a stream from byte `offset` on, as if it
/// were new, taking `piece`'s buffer instead of copying it (`piece` gets the decoder's
/// buffer, contents unspecified, capacity kept for the next piece). `offset` must be 0
/// or just past a blank line ([`last_boundary`]); frame offsets count from it, event
/// indexes from 0 (the caller adds them up, with [`SseDecoder::events_seen`]), and a
/// byte order mark is looked for only at offset 0. More bytes may be pushed after
/// `piece`, as for a new decoder; [`SseDecoder::finish`] ends the piece.
#[inline]
pub fn restart_with(dec: &mut SseDecoder, offset: u64, piece: &mut Vec<u8>) {
    dec.restart_with(offset, piece);
}

/// Reads one SSE event's data (as [`SseDecoder::next_frame`] gives it) as an AG-UI
/// event, as [`SseDecoder::next`] reads it; an event of a type protocol 1.1 does not
/// define is an [`UnknownEventType`](crate::encoding::DecodeErrorKind::UnknownEventType) error, which
/// the decoder skips (with a warning). `index` and `offset` are the event's, for the
/// error.
#[inline]
pub fn decode_data(data: &[u8], index: u64, offset: u64) -> Result<Event, DecodeError> {
    super::decode_data(data, index, offset)
}
