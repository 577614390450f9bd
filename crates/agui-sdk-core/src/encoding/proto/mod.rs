//! Protobuf, compatible with `@ag-ui/proto` 1.0: each event is one `ag_ui.Event` message
//! preceded by its length as a 4-byte big-endian integer. The schema is
//! `crates/agui-sdk-core/proto/agui-1.1.proto`: the 1.0 schema reconstructed from the
//! reference and checked against its frames (`fixtures/reference/agui-1.0.proto`, kept
//! unchanged) plus protocol 1.1's optional `encrypted_value_type` fields
//! (`ToolCall` 6, `Message` 14, `ReasoningEncryptedValueEvent` 6). A frame without them
//! is a 1.0 frame, and a 1.0 decoder skips them.
//!
//! Each event's mapping is one table, its line in
//! [`for_each_event!`](crate::for_each_event) (`[arm => field number, struct field, …]`),
//! from which the writer and the reader of every event are generated (`table.rs`): a
//! field's Rust type picks its wire encoding. [`encode_event`] writes the bytes straight
//! from our types in one pass, copying no string or value; the reader merges each wire
//! field through prost's field functions, as a decoder generated from the `.proto`
//! would. The nested messages (messages, run input, interrupts, usage, patch
//! operations) go through the prost structs generated from the `.proto` and checked in
//! (`scripts/regen-proto.sh` regenerates them; it needs no `protoc`). Property tests
//! hold the writer to the bytes prost writes of those structs, and the reader to
//! prost's (it refuses whatever prost refuses; an arm split in two occurrences merges).
//! Free-form JSON travels as `google.protobuf.Value`/`Struct`, read and written straight
//! from `serde_json` values by this module.
//!
//! # What protobuf changes
//!
//! The mapping is the reference's (that of `@ag-ui/proto` 1.0.0, reconstructed in
//! `fixtures/reference/agui-1.0.proto`), so the reference decoder reads what
//! [`encode_event`] writes and [`ProtoDecoder`] reads what the reference writes. A JSON
//! → protobuf → JSON trip is exact except where the reference's is not:
//!
//! - unknown keys (`extra`) have no field and are dropped;
//! - numbers inside free-form JSON travel as doubles: integers beyond 2^53 lose
//!   precision; integral values come back as integers (`{"count":1}` stays `1`, where
//!   JavaScript cannot tell the difference anyway; `-0.0` comes back as `0`);
//! - `RUN_STARTED.input.resume` comes back as `[]` when it was absent, as the reference
//!   decoder materialises it;
//! - empty `usage`, `toolCalls`, `pendingToolCallIds` and `interruptIds` arrays come
//!   back absent.
//!
//! # Decoding rules
//!
//! As in the reference: a frame naming two different events, or a content part (or part
//! source) with two kinds, is invalid; repeated occurrences of the same field merge as
//! protobuf requires; a frame with only fields from a later protocol is an unknown event
//! (skipped by default, as the reference client drops it); a frame whose `4 + length`
//! exceeds the limit (10 MiB by default) fails the stream at once; bytes left at the end
//! of the stream are a truncated frame. Values the 1.0 schema rejects (an unknown role,
//! outcome or patch operation, a misplaced `null`) are errors, as the same values are in
//! SSE. Strings must be valid UTF-8 (the protobuf rule). Free-form JSON nests at most
//! 128 levels of objects and arrays (what the JSON decoder allows, so that whatever
//! comes in as JSON can go out as protobuf and back).

mod decode;
// The oracle the direct writer (`write`) is held to: each event copied into the prost
// structs, which prost writes. Tests only.
#[cfg(test)]
mod encode;
// The prost structs generated from the `.proto` (`scripts/regen-proto.sh`), in one
// module: the codec reads the nested messages (messages, run input, interrupts, usage,
// patch operations) through those of `generated.rs`; the `Event` envelope and the event
// messages (`generated_events.rs`) serve the test oracle only.
#[allow(
    dead_code,
    missing_docs,
    missing_debug_implementations,
    clippy::all,
    unreachable_pub
)]
mod generated {
    include!("generated.rs");
    #[cfg(test)]
    include!("generated_events.rs");
}
#[cfg(test)]
mod oracle_tests;
mod scan;
mod table;
pub(crate) mod value;
mod write;

use super::error::{DecodeError, DecodeErrorKind, DecoderLimits};
use crate::event::Event;

/// The protobuf media type (`application/vnd.ag-ui.event+proto`). No parameters are
/// defined.
pub const CONTENT_TYPE: &str = "application/vnd.ag-ui.event+proto";

/// Appends one event as a protobuf frame (4-byte big-endian length, then the
/// `ag_ui.Event` message) to `out`.
///
/// ```
/// use agui_sdk_core::{encoding::proto, Event};
/// let mut out = Vec::new();
/// proto::encode_event(&Event::text_message_start("m1"), &mut out);
/// let mut dec = proto::ProtoDecoder::new();
/// dec.push(&out);
/// assert_eq!(dec.next().unwrap().unwrap(), Event::text_message_start("m1"));
/// ```
pub fn encode_event(event: &Event, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    write::event(event, out);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// Appends one event as a bare `ag_ui.Event` message, without the length prefix (what
/// `@ag-ui/proto`'s `encode` returns).
pub fn encode_message(event: &Event, out: &mut Vec<u8>) {
    write::event(event, out);
}

/// Decodes one bare `ag_ui.Event` message (what `@ag-ui/proto`'s `decode` reads).
/// An event from a later protocol is [`DecodeErrorKind::UnknownEventType`]; the error's
/// index and offset are 0.
pub fn decode_message(bytes: &[u8]) -> Result<Event, DecodeError> {
    decode_message_kind(bytes).map_err(|kind| DecodeError::new(0, 0, kind))
}

fn decode_message_kind(bytes: &[u8]) -> Result<Event, DecodeErrorKind> {
    match scan::envelope(bytes) {
        Err(()) => Err(DecodeErrorKind::Proto(
            "malformed message (two different events in one envelope, or broken protobuf)"
                .to_owned(),
        )),
        Ok(Some(arm)) => table::decode_arm(arm, bytes).map_err(DecodeErrorKind::Proto),
        Ok(None) if scan::names_only_future_arms(bytes) => {
            Err(DecodeErrorKind::UnknownEventType(None))
        }
        Ok(None) => Err(DecodeErrorKind::Proto(
            "the message names no event".to_owned(),
        )),
    }
}

const PREFIX: usize = 4;

/// An incremental, sans-io protobuf stream decoder: push bytes as they arrive (split
/// anywhere), pull events. Memory is bounded by [`DecoderLimits::max_event_size`] plus
/// the largest pushed chunk.
#[derive(Debug)]
pub struct ProtoDecoder {
    buf: Vec<u8>,
    pos: usize,
    base: u64,
    index: u64,
    limits: DecoderLimits,
    skip_unknown: bool,
    skipped: u64,
    eof: bool,
    done: bool,
}

impl Default for ProtoDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ProtoDecoder {
    /// A decoder with the default limits.
    pub fn new() -> Self {
        Self::with_limits(DecoderLimits::default())
    }

    /// A decoder with the given limits.
    pub fn with_limits(limits: DecoderLimits) -> Self {
        ProtoDecoder {
            buf: Vec::new(),
            pos: 0,
            base: 0,
            index: 0,
            limits,
            skip_unknown: true,
            skipped: 0,
            eof: false,
            done: false,
        }
    }

    /// Whether frames naming only event types from a later protocol are skipped (the
    /// default, with a `tracing` warning, as the reference client drops them) or
    /// returned as [`DecodeErrorKind::UnknownEventType`] errors.
    pub fn skip_unknown_events(mut self, skip: bool) -> Self {
        self.skip_unknown = skip;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> DecoderLimits {
        self.limits
    }

    /// Feeds the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.done {
            return;
        }
        if self.pos > 0 {
            if self.pos == self.buf.len() {
                self.buf.clear();
            } else {
                self.buf.drain(..self.pos);
            }
            self.base += self.pos as u64;
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Marks the end of the stream; leftover bytes are then a
    /// [`DecodeErrorKind::Truncated`] error.
    pub fn finish(&mut self) {
        self.eof = true;
    }

    /// The next event, `None` when more input is needed (or the stream has ended).
    ///
    /// An error that is not [fatal](DecodeError::is_fatal) concerns one frame: it has
    /// been consumed and the next call goes on with the following one.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<Event, DecodeError>> {
        loop {
            if self.done {
                return None;
            }
            let avail = self.buf.len() - self.pos;
            let offset = self.base + self.pos as u64;
            if avail < PREFIX {
                return self.wait_or_truncated(avail, offset);
            }
            let mut prefix = [0u8; PREFIX];
            prefix.copy_from_slice(&self.buf[self.pos..self.pos + PREFIX]);
            let total = PREFIX as u64 + u64::from(u32::from_be_bytes(prefix));
            if total > self.limits.max_event_size as u64 {
                self.done = true;
                let limit = self.limits.max_event_size;
                return Some(Err(DecodeError::new(
                    self.index,
                    offset,
                    DecodeErrorKind::TooLarge { limit },
                )));
            }
            let total = total as usize;
            if avail < total {
                return self.wait_or_truncated(avail, offset);
            }
            let index = self.index;
            self.index += 1;
            let start = self.pos;
            self.pos += total;
            match decode_message_kind(&self.buf[start + PREFIX..start + total]) {
                Ok(ev) => return Some(Ok(ev)),
                Err(DecodeErrorKind::UnknownEventType(_)) if self.skip_unknown => {
                    log_warn!(
                        event_index = index,
                        byte_offset = offset,
                        "skipped a protobuf event of a type this version does not know"
                    );
                    self.skipped += 1;
                }
                Err(kind) => return Some(Err(DecodeError::new(index, offset, kind))),
            }
        }
    }

    fn wait_or_truncated(
        &mut self,
        avail: usize,
        offset: u64,
    ) -> Option<Result<Event, DecodeError>> {
        if !self.eof {
            return None;
        }
        self.done = true;
        if avail == 0 {
            return None;
        }
        Some(Err(DecodeError::new(
            self.index,
            offset,
            DecodeErrorKind::Truncated { pending: avail },
        )))
    }

    /// How many frames of unknown event types were skipped.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// How many frames have been read, skipped ones included.
    pub fn events_seen(&self) -> u64 {
        self.index
    }

    /// Bytes consumed so far (the stream offset of the first byte not yet read).
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_message_start_has_an_empty_base_event() {
        let mut out = Vec::new();
        let start = crate::event::TextMessageStart {
            role: None,
            ..crate::event::TextMessageStart::new("m")
        };
        encode_message(&start.into(), &mut out);
        assert_eq!(out, [0x0a, 0x05, 0x0a, 0x00, 0x12, 0x01, b'm']);
    }

    #[test]
    fn oversized_frame_fails_at_its_prefix() {
        let mut dec = ProtoDecoder::with_limits(DecoderLimits::default().with_max_event_size(100));
        dec.push(&[0, 0, 0, 97]);
        let err = dec.next().unwrap().unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::TooLarge { limit: 100 });
        assert!(dec.next().is_none());
    }

    #[test]
    fn trailing_bytes_are_truncation() {
        let mut dec = ProtoDecoder::new();
        dec.push(&[0, 0, 0, 9, 1, 2]);
        assert!(dec.next().is_none());
        dec.finish();
        let err = dec.next().unwrap().unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::Truncated { pending: 6 });
    }

    #[test]
    fn future_events_are_skipped() {
        let mut dec = ProtoDecoder::new();
        // field 40 (unknown arm) holding a well-formed message, then an empty frame.
        dec.push(&[0, 0, 0, 5, 0xc2, 0x02, 0x02, 0x08, 0x01, 0, 0, 0, 0]);
        let err = dec.next().unwrap().unwrap_err();
        assert_eq!((err.index, err.offset), (1, 9));
        assert_eq!(dec.skipped(), 1);
    }
}
