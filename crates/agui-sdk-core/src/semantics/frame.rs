//! The one writer of outgoing frames ([`FrameWriter`]): the outbound end of the
//! pipeline, an event downgraded for its client and encoded.

use std::fmt;

use super::{Downgrade, JsonRewrite, Outgoing};
use crate::encoding::{sse, DecoderLimits, Encoding};
use crate::event::Event;
use crate::EventType;

/// What [`FrameWriter`] did with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// One frame was appended.
    Frame,
    /// Nothing was appended: the downgrade drops the event, or rewrites it into JSON
    /// that the protobuf encoding cannot carry.
    Dropped,
}

/// Why [`FrameWriter`] wrote no frame for an event. Nothing of the frame is left in the
/// output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame is over the size limit (see [`FrameWriter`] for what is measured).
    #[error("a {event_type} event of {size} bytes is over the {limit} a client accepts")]
    TooLarge {
        /// The event's type (before any downgrade).
        event_type: EventType,
        /// Its size, as the limit measures it.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A stored event that does not decode as an event (the store holds what this
    /// SDK wrote: a bug, or a store written by something else).
    #[error("a stored event does not decode: {0}")]
    Undecodable(String),
}

/// The one writer of outgoing frames: an event as it is produced (live), or as a run
/// log keeps it (its canonical JSON, stored), in one encoding, rewritten for an older
/// consumer when asked, with an optional SSE `id:`, and refused when the frame is larger
/// than a client accepts.
///
/// The size rule is the decoders' ([`DecoderLimits::max_event_size`]): for SSE the
/// event's data (its JSON, without `id:`, `data: ` and the blank line), for protobuf the
/// frame including its 4-byte length prefix. A frame that would break it is not
/// written, so that no client of this SDK (or of the reference SDKs, whose limit is the
/// same) is sent an event it refuses.
///
/// A stored event and the same event live give the same bytes. A stored event is framed
/// without being decoded when SSE carries it and the downgrade can rewrite its text (or
/// has nothing to rewrite); protobuf, and a downgrade that needs the event itself
/// ([`JsonRewrite::Decode`]), decode it first.
///
/// ```
/// use agui_sdk_core::encoding::Encoding;
/// use agui_sdk_core::semantics::{Downgrade, FrameWriter, Written};
/// use agui_sdk_core::Event;
///
/// let writer = FrameWriter::new(Encoding::Sse, Downgrade::none());
/// let event = Event::text_message_end("m1");
/// let mut live = Vec::new();
/// writer.write_event(event.clone(), Some(format_args!("run-1:{}", 7)), &mut live).unwrap();
/// let mut stored = Vec::new();
/// let mut json = Vec::new();
/// event.write_json(&mut json);
/// let written = writer.write_stored(&json, Some(format_args!("run-1:{}", 7)), &mut stored);
/// assert_eq!(written, Ok(Written::Frame));
/// assert_eq!(live, stored);
/// assert_eq!(live, b"id: run-1:7\ndata: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m1\"}\n\n");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameWriter {
    encoding: Encoding,
    downgrade: Downgrade,
    max_event_size: usize,
}

/// The bytes SSE adds around an event's data: `data: ` and the blank line.
const SSE_FRAMING: usize = b"data: ".len() + 2;

impl FrameWriter {
    /// A writer of `encoding` frames, each event rewritten by `downgrade` first, with the
    /// decoders' default size limit ([`DecoderLimits::DEFAULT_MAX_EVENT_SIZE`]).
    pub fn new(encoding: Encoding, downgrade: Downgrade) -> Self {
        FrameWriter {
            encoding,
            downgrade,
            max_event_size: DecoderLimits::DEFAULT_MAX_EVENT_SIZE,
        }
    }

    /// The same writer with another size limit.
    pub fn with_max_event_size(mut self, bytes: usize) -> Self {
        self.max_event_size = bytes;
        self
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The downgrade.
    pub fn downgrade(&self) -> Downgrade {
        self.downgrade
    }

    /// The size limit.
    pub fn max_event_size(&self) -> usize {
        self.max_event_size
    }

    /// Appends the frame of `event`, rewritten by the downgrade, to `out`; `id` is its
    /// SSE `id:` (protobuf has none).
    #[inline]
    pub fn write_event(
        &self,
        event: Event,
        id: Option<fmt::Arguments<'_>>,
        out: &mut Vec<u8>,
    ) -> Result<Written, FrameError> {
        let before = out.len();
        let event_type = event.event_type();
        let event = if self.downgrade.is_active() {
            match self.downgrade.apply(event) {
                Some(Outgoing::Event(e)) => e,
                Some(Outgoing::Json(v)) => {
                    return match self.encoding {
                        Encoding::Sse => {
                            let mut text = Vec::new();
                            crate::wire::write_canonical(&v, &mut text);
                            self.write_sse_text(&text, || Ok(event_type), id, out)
                        }
                        // No protobuf frame for a JSON-only rewrite.
                        #[cfg(feature = "proto")]
                        Encoding::Proto => Ok(Written::Dropped),
                    };
                }
                None => return Ok(Written::Dropped),
            }
        } else {
            event
        };
        let size = match self.encoding {
            Encoding::Sse => {
                if let Some(id) = id {
                    sse::encode_id(id, out);
                }
                let data = out.len();
                sse::encode_event(&event, out);
                out.len() - data - SSE_FRAMING
            }
            #[cfg(feature = "proto")]
            Encoding::Proto => {
                crate::encoding::proto::encode_event(&event, out);
                out.len() - before
            }
        };
        if size > self.max_event_size {
            out.truncate(before);
            return Err(self.too_large(event_type, size));
        }
        Ok(Written::Frame)
    }

    /// Appends the frame of a stored event, `json` its canonical JSON (as
    /// [`Event::write_json`] writes it), to `out`: the bytes [`write_event`](Self::write_event)
    /// writes for that event. Decoded only when it must be (see the
    /// [`FrameWriter`] docs).
    pub fn write_stored(
        &self,
        json: &[u8],
        id: Option<fmt::Arguments<'_>>,
        out: &mut Vec<u8>,
    ) -> Result<Written, FrameError> {
        match self.encoding {
            Encoding::Sse => match self.downgrade.apply_json(json) {
                JsonRewrite::Unchanged(text) => self.write_stored_text(json, text, id, out),
                JsonRewrite::Spliced(text) => self.write_stored_text(json, &text, id, out),
                JsonRewrite::Decode => self.write_event(decode(json)?, id, out),
            },
            #[cfg(feature = "proto")]
            Encoding::Proto => self.write_event(decode(json)?, id, out),
        }
    }

    /// An SSE frame of `text`, the stored `json` as the consumer gets it.
    fn write_stored_text(
        &self,
        json: &[u8],
        text: &[u8],
        id: Option<fmt::Arguments<'_>>,
        out: &mut Vec<u8>,
    ) -> Result<Written, FrameError> {
        // Rare: the type of a stored event too large is read from the event itself.
        self.write_sse_text(text, || Ok(decode(json)?.event_type()), id, out)
    }

    /// An SSE frame of `text`, the JSON of an event whose type `event_type` says.
    fn write_sse_text(
        &self,
        text: &[u8],
        event_type: impl FnOnce() -> Result<EventType, FrameError>,
        id: Option<fmt::Arguments<'_>>,
        out: &mut Vec<u8>,
    ) -> Result<Written, FrameError> {
        if text.len() > self.max_event_size {
            return Err(self.too_large(event_type()?, text.len()));
        }
        if let Some(id) = id {
            sse::encode_id(id, out);
        }
        sse::encode_data(text, out);
        Ok(Written::Frame)
    }

    fn too_large(&self, event_type: EventType, size: usize) -> FrameError {
        FrameError::TooLarge {
            event_type,
            size,
            limit: self.max_event_size,
        }
    }
}

fn decode(json: &[u8]) -> Result<Event, FrameError> {
    Event::from_json_slice(json).map_err(|e| FrameError::Undecodable(e.to_string()))
}

#[cfg(test)]
mod tests;
