//! Server-Sent Events: the reference framing on the way out, the WHATWG event-stream
//! parser on the way in.
//!
//! **Encoding** is what the reference `EventEncoder.encodeSSE` writes, byte for byte:
//! `data: <event JSON>\n\n`, one `data:` line per event (JSON never contains a raw line
//! break), no `event:` or `id:` field, LF line endings, UTF-8. The JSON is what
//! `JSON.stringify` writes, numbers included (`1e+21`, `10000000000000000`, `0` for
//! negative zero, where serde_json alone writes `1e21`, `1e16`, `-0.0`).
//!
//! **Decoding** follows the [WHATWG event-stream rules] rather than the reference
//! client's shortcut (which splits on `"\n\n"` only and so cannot read a CRLF stream):
//! LF, CR and CRLF line endings (also mixed, and a CRLF split between two chunks);
//! several `data:` lines joined with `\n`; comment lines (`:` keep-alives) ignored;
//! `event:`, `id:` and `retry:` parsed and kept ([`SseDecoder::last_event_id`] persists
//! across events, as the spec's "last event ID buffer" does, for resuming a stream);
//! one leading byte order mark skipped; input split at any byte, inside a UTF-8
//! sequence or a CRLF included; a frame without `data` is not an event. Each event's
//! data must be one AG-UI event object. The decoder is sans-io: [`SseDecoder::push`]
//! bytes in, [`SseDecoder::next`] events out.
//!
//! Two choices where the specification leaves room or the reference differs:
//! - at the end of the stream an event whose closing blank line never came is not
//!   dispatched (WHATWG); the decoder reports it, or an unterminated last line that is
//!   not a comment, as [`DecodeErrorKind::Truncated`] instead of dropping it silently
//!   (the reference client parses a last event without its blank line anyway);
//! - data that is not valid UTF-8 is decoded with replacement characters, as the spec's
//!   UTF-8 decode does, before the JSON is read.
//!
//! [WHATWG event-stream rules]: https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation

use std::borrow::Cow;

use serde_json::Value;

use super::error::{DecodeError, DecodeErrorKind, DecoderLimits};
use crate::event::{Event, EventType};

/// The SSE media type (`text/event-stream`).
pub const CONTENT_TYPE: &str = "text/event-stream";

/// Appends one event as an SSE frame, `data: <JSON>\n\n`, to `out`: the reference
/// encoder's exact bytes.
///
/// ```
/// use agui_sdk_core::{encoding::sse, Event};
/// let mut out = Vec::new();
/// sse::encode_event(&Event::text_message_content("m1", "Hi"), &mut out);
/// assert_eq!(out, b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"Hi\"}\n\n");
/// ```
// `#[inline]` lets the serializer be instantiated and optimised in the calling crate,
// together with the caller's loop.
#[inline]
pub fn encode_event(event: &Event, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    event.write_json(out);
    out.extend_from_slice(b"\n\n");
}

/// Appends an SSE comment (`: text`, one line per line of `text`) and the blank line
/// that ends the frame, e.g. a keep-alive. Decoders ignore it.
pub fn encode_comment(text: &str, out: &mut Vec<u8>) {
    for line in text.split(['\n', '\r']) {
        out.push(b':');
        if !line.is_empty() {
            out.push(b' ');
            out.extend_from_slice(line.as_bytes());
        }
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// The keep-alive frame every writer of this SDK sends on an idle stream: the comment
/// `: keep-alive` and its blank line. Decoders ignore it.
pub const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// Appends a frame whose data is `json`, already encoded on one line:
/// `data: <json>\n\n`, the bytes [`encode_event`] writes for the event `json` encodes.
/// For events kept as JSON (a run log's entries, a recording).
///
/// JSON text never holds a raw line break; a `json` that does (not JSON) would be read
/// as several lines, so its line breaks are written as spaces.
pub fn encode_data(json: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    let start = out.len();
    out.extend_from_slice(json);
    if memchr::memchr2(b'\n', b'\r', json).is_some() {
        for b in &mut out[start..] {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
    }
    out.extend_from_slice(b"\n\n");
}

/// Appends an `id:` field, the start of the frame that follows: a client resuming the
/// stream sends the last id it saw as `Last-Event-ID`. Line breaks in `id` are
/// dropped, and so are NUL characters (which make a client ignore the field).
///
/// ```
/// use agui_sdk_core::{encoding::sse, Event};
/// let mut out = Vec::new();
/// sse::encode_retry(1000, &mut out);
/// sse::encode_id(format_args!("{}:{}", "run-1", 7), &mut out);
/// sse::encode_event(&Event::text_message_end("m1"), &mut out);
/// out.extend_from_slice(sse::KEEP_ALIVE);
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "retry: 1000\nid: run-1:7\ndata: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m1\"}\n\n: keep-alive\n\n"
/// );
/// ```
pub fn encode_id(id: impl std::fmt::Display, out: &mut Vec<u8>) {
    use std::io::Write as _;
    out.extend_from_slice(b"id: ");
    let start = out.len();
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{id}");
    if out[start..].iter().any(|b| matches!(*b, b'\n' | b'\r' | 0)) {
        let mut i = start;
        while i < out.len() {
            if matches!(out[i], b'\n' | b'\r' | 0) {
                out.remove(i);
            } else {
                i += 1;
            }
        }
    }
    out.push(b'\n');
}

/// Appends a `retry:` field: how many milliseconds a client waits before reconnecting.
/// Like `id:`, it belongs to the frame that follows.
pub fn encode_retry(ms: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b"retry: ");
    out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
    out.push(b'\n');
}

/// One dispatched SSE event, before its data is read as an AG-UI event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseFrame<'a> {
    /// Index of the event in the stream (0-based).
    pub index: u64,
    /// Byte offset in the stream where the event's frame starts.
    pub offset: u64,
    /// The `event:` field, if the frame had one (the spec's default type is `message`).
    pub event: Option<&'a str>,
    /// The data lines, joined with `\n`, as they came (UTF-8 is not checked here; see
    /// [`SseFrame::data_str`]). This is what the inbound pipeline
    /// ([`Intake`](crate::semantics::Intake)) reads.
    pub data: &'a [u8],
    /// The last event id at this event (the most recent `id:` field, possibly from an
    /// earlier event; empty when none was sent).
    pub last_event_id: &'a str,
}

impl<'a> SseFrame<'a> {
    /// The data as text, invalid UTF-8 replaced (as an event-stream reader does).
    pub fn data_str(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.data)
    }
}

/// Where a dispatched frame starts, and its position.
#[derive(Debug, Clone, Copy)]
struct Dispatched {
    index: u64,
    offset: u64,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";
/// Room for a field name, its colon and a space on top of the data a line may carry.
const LINE_SLACK: usize = 16;

/// An incremental, sans-io SSE decoder: push bytes as they arrive (split anywhere), pull
/// AG-UI events. Memory is bounded by [`DecoderLimits::max_event_size`] plus the
/// largest pushed chunk.
///
/// ```
/// use agui_sdk_core::encoding::sse::SseDecoder;
/// let mut dec = SseDecoder::new();
/// dec.push(b": keep-alive\r\nid: 7\r\ndata: {\"type\":\"RUN_ERROR\",");
/// assert!(dec.next().is_none()); // the event is not complete yet
/// dec.push(b"\r\ndata: \"message\":\"boom\"}\r\n\r\n");
/// let event = dec.next().unwrap().unwrap();
/// assert_eq!(event.to_json_string(), r#"{"type":"RUN_ERROR","message":"boom"}"#);
/// assert_eq!(dec.last_event_id(), "7");
/// dec.finish();
/// assert!(dec.next().is_none());
/// ```
#[derive(Debug)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// Start of the first unread line in `buf`.
    pos: usize,
    /// `buf[pos..scanned]` holds no line terminator.
    scanned: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Whether the leading byte order mark has been looked for.
    started: bool,
    /// The previous line ended with a CR at the end of the input: skip a following LF.
    skip_lf: bool,

    // The frame being read.
    data: Vec<u8>,
    /// The frame's data when it is a single line still in `buf`.
    data_in_buf: Option<(usize, usize)>,
    has_data: bool,
    event_name: Option<String>,
    frame_start: Option<u64>,
    /// The frame was dispatched; clear it before reading on.
    reset_pending: bool,

    last_event_id: String,
    retry: Option<u64>,

    index: u64,
    limits: DecoderLimits,
    skip_unknown: bool,
    skipped: u64,
    eof: bool,
    done: bool,
    /// Tests only: the common frame goes the long way too (the fast path's oracle).
    #[cfg(test)]
    long_way: bool,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default limits.
    pub fn new() -> Self {
        Self::with_limits(DecoderLimits::default())
    }

    /// A decoder with the given limits.
    pub fn with_limits(limits: DecoderLimits) -> Self {
        SseDecoder {
            buf: Vec::new(),
            pos: 0,
            scanned: 0,
            base: 0,
            started: false,
            skip_lf: false,
            data: Vec::new(),
            data_in_buf: None,
            has_data: false,
            event_name: None,
            frame_start: None,
            reset_pending: false,
            last_event_id: String::new(),
            retry: None,
            index: 0,
            limits,
            skip_unknown: true,
            skipped: 0,
            eof: false,
            done: false,
            #[cfg(test)]
            long_way: false,
        }
    }

    /// Whether the common frame's fast path is off (in tests, to compare the two).
    #[inline(always)]
    fn long_way(&self) -> bool {
        #[cfg(test)]
        return self.long_way;
        #[cfg(not(test))]
        false
    }

    /// Whether events of a type protocol 1.1 does not define are skipped (the default,
    /// with a `tracing` warning, as the reference client drops them) or returned as
    /// [`DecodeErrorKind::UnknownEventType`] errors (to translate them, for instance).
    pub fn skip_unknown_events(mut self, skip: bool) -> Self {
        self.skip_unknown = skip;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> DecoderLimits {
        self.limits
    }

    /// Makes this decoder read a stream cut just after a blank line (an event
    /// boundary), from byte `offset` of the whole stream on, as if it were new (its
    /// buffers stay allocated): offsets count from `offset`, event indexes from 0, and
    /// a byte order mark is looked for only where a stream starts (`offset` 0). Pieces of
    /// one stream cut so can be read on several threads; their events, errors included,
    /// are then those of one decoder reading the whole stream, but for indexes, which
    /// the caller adds up ([`events_seen`](Self::events_seen)).
    #[cfg(test)]
    pub(crate) fn restart_at(&mut self, offset: u64) {
        self.buf.clear();
        self.restart(offset);
    }

    /// [`restart_at`](Self::restart_at) then [`push`](Self::push) of `piece`, taking
    /// `piece`'s buffer instead of copying it: `piece` gets the decoder's buffer, whose
    /// contents are unspecified (its capacity is kept for the next piece).
    #[cfg(any(test, feature = "unstable-parallel"))]
    pub(crate) fn restart_with(&mut self, offset: u64, piece: &mut Vec<u8>) {
        std::mem::swap(&mut self.buf, piece);
        self.restart(offset);
    }

    /// The state of a stream starting at `offset`, the buffer aside.
    #[cfg(any(test, feature = "unstable-parallel"))]
    fn restart(&mut self, offset: u64) {
        self.pos = 0;
        self.scanned = 0;
        self.base = offset;
        self.started = offset > 0;
        self.skip_lf = false;
        self.reset_frame();
        self.last_event_id.clear();
        self.retry = None;
        self.index = 0;
        self.skipped = 0;
        self.eof = false;
        self.done = false;
    }

    /// Feeds the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.done {
            return;
        }
        if self.reset_pending {
            self.reset_frame();
        }
        if self.pos > 0 {
            if let Some((s, e)) = self.data_in_buf.take() {
                // The frame's data line is about to move: keep a copy.
                self.data.clear();
                self.data.extend_from_slice(&self.buf[s..e]);
            }
            if self.pos == self.buf.len() {
                self.buf.clear();
            } else {
                self.buf.drain(..self.pos);
            }
            self.base += self.pos as u64;
            self.scanned -= self.pos;
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Marks the end of the stream. The events still buffered can then be pulled; an
    /// unfinished one is reported as [`DecodeErrorKind::Truncated`].
    pub fn finish(&mut self) {
        self.eof = true;
    }

    /// The next event, `None` when more input is needed (or the stream has ended).
    ///
    /// An error that is not [fatal](DecodeError::is_fatal) concerns one event: it has
    /// been consumed and the next call goes on with the following one.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<Event, DecodeError>> {
        loop {
            let d = match self.dispatch_next()? {
                Ok(d) => d,
                Err(e) => return Some(Err(e)),
            };
            match decode_data(self.frame_data(), d.index, d.offset) {
                Err(e)
                    if self.skip_unknown
                        && matches!(e.kind, DecodeErrorKind::UnknownEventType(_)) =>
                {
                    warn_skipped(&e);
                    self.skipped += 1;
                }
                result => return Some(result),
            }
        }
    }

    /// The next dispatched SSE event, without reading its data as an AG-UI event: its
    /// position, its `event:` field and its data bytes (borrowed from the decoder's
    /// buffer). [`next`](Self::next) is this, read as an AG-UI event.
    #[inline]
    pub fn next_frame(&mut self) -> Option<Result<SseFrame<'_>, DecodeError>> {
        let d = match self.dispatch_next()? {
            Ok(d) => d,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(SseFrame {
            index: d.index,
            offset: d.offset,
            event: self.event_name.as_deref(),
            data: self.frame_data(),
            last_event_id: &self.last_event_id,
        }))
    }

    /// The last event id received (`id:` field), empty when none was. It persists across
    /// events until another `id:` changes it; a client resuming a stream sends it as
    /// `Last-Event-ID`.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time the server asked for (`retry:` field), in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// How many events of unknown types were skipped.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// How many events (frames with data) have been dispatched, skipped ones included.
    pub fn events_seen(&self) -> u64 {
        self.index
    }

    /// Bytes consumed so far (the stream offset of the first byte not yet read).
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn frame_data(&self) -> &[u8] {
        match self.data_in_buf {
            Some((s, e)) => &self.buf[s..e],
            None => &self.data,
        }
    }

    fn reset_frame(&mut self) {
        self.data.clear();
        self.data_in_buf = None;
        self.has_data = false;
        self.event_name = None;
        self.frame_start = None;
        self.reset_pending = false;
    }

    fn fail(
        &mut self,
        offset: u64,
        kind: DecodeErrorKind,
    ) -> Option<Result<Dispatched, DecodeError>> {
        self.done = true;
        Some(Err(DecodeError::new(self.index, offset, kind)))
    }

    fn too_large(&mut self, line_start: usize) -> Option<Result<Dispatched, DecodeError>> {
        let offset = self.frame_start.unwrap_or(self.base + line_start as u64);
        let limit = self.limits.max_event_size;
        self.fail(offset, DecodeErrorKind::TooLarge { limit })
    }

    /// Reads lines until an event is dispatched.
    fn dispatch_next(&mut self) -> Option<Result<Dispatched, DecodeError>> {
        if self.done {
            return None;
        }
        if self.reset_pending {
            self.reset_frame();
        }
        if !self.started {
            let avail = &self.buf[self.pos..];
            if avail.len() < BOM.len() && BOM.starts_with(avail) && !self.eof {
                return None;
            }
            if avail.starts_with(BOM) {
                self.pos += BOM.len();
            }
            self.scanned = self.pos;
            self.started = true;
        }
        let max_line = self.limits.max_event_size.saturating_add(LINE_SLACK);
        loop {
            if self.skip_lf && self.pos < self.buf.len() {
                if self.buf[self.pos] == b'\n' {
                    self.pos += 1;
                }
                self.skip_lf = false;
                self.scanned = self.scanned.max(self.pos);
            }
            let from = self.scanned.max(self.pos);
            // The common frame, `data: <one line>\n\n` with nothing open: dispatched at
            // once, as the lines below would dispatch it (anything else, or a frame
            // over the limit, goes the long way).
            if !self.has_data
                && self.frame_start.is_none()
                && !self.long_way()
                && self.buf[self.pos..].starts_with(b"data: ")
            {
                let value = self.pos + 6;
                let scan = from.max(value);
                if let Some(rel) = memchr::memchr2(b'\n', b'\r', &self.buf[scan..]) {
                    let end = scan + rel;
                    if self.buf[end] == b'\n'
                        && self.buf.get(end + 1) == Some(&b'\n')
                        && end - value <= self.limits.max_event_size
                        && end - self.pos <= max_line
                    {
                        let offset = self.base + self.pos as u64;
                        self.frame_start = Some(offset);
                        self.data_in_buf = Some((value, end));
                        self.has_data = true;
                        self.pos = end + 2;
                        self.scanned = end + 2;
                        let d = Dispatched {
                            index: self.index,
                            offset,
                        };
                        self.index += 1;
                        self.reset_pending = true;
                        return Some(Ok(d));
                    }
                }
            }
            let Some(rel) = memchr::memchr2(b'\n', b'\r', &self.buf[from..]) else {
                self.scanned = self.buf.len();
                if self.buf.len() - self.pos > max_line {
                    return self.too_large(self.pos);
                }
                if self.eof {
                    return self.end_of_stream();
                }
                return None;
            };
            let end = from + rel;
            let start = self.pos;
            let next = if self.buf[end] == b'\r' {
                match self.buf.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    None => {
                        self.skip_lf = true;
                        end + 1
                    }
                }
            } else {
                end + 1
            };
            self.pos = next;
            self.scanned = next;
            if end - start > max_line {
                return self.too_large(start);
            }
            if start == end {
                // A blank line dispatches the frame, if it has data.
                if self.has_data {
                    let d = Dispatched {
                        index: self.index,
                        offset: self.frame_start.unwrap_or(self.base + start as u64),
                    };
                    self.index += 1;
                    self.reset_pending = true;
                    return Some(Ok(d));
                }
                self.event_name = None;
                self.frame_start = None;
                continue;
            }
            if self.frame_start.is_none() {
                self.frame_start = Some(self.base + start as u64);
            }
            if let Some(err) = self.field(start, end) {
                return Some(Err(err));
            }
        }
    }

    /// Interprets the field on the line `buf[start..end]`.
    fn field(&mut self, start: usize, end: usize) -> Option<DecodeError> {
        let line = &self.buf[start..end];
        if line[0] == b':' {
            return None;
        }
        let (name_end, value_start) = match memchr::memchr(b':', line) {
            Some(i) if line.get(i + 1) == Some(&b' ') => (start + i, start + i + 2),
            Some(i) => (start + i, start + i + 1),
            None => (end, end),
        };
        match &self.buf[start..name_end] {
            b"data" => {
                if !self.has_data {
                    self.data_in_buf = Some((value_start, end));
                    self.has_data = true;
                } else {
                    if let Some((s, e)) = self.data_in_buf.take() {
                        self.data.extend_from_slice(&self.buf[s..e]);
                    }
                    self.data.push(b'\n');
                    self.data.extend_from_slice(&self.buf[value_start..end]);
                }
                let len = match self.data_in_buf {
                    Some((s, e)) => e - s,
                    None => self.data.len(),
                };
                if len > self.limits.max_event_size {
                    self.done = true;
                    let offset = self.frame_start.unwrap_or(self.base + start as u64);
                    let limit = self.limits.max_event_size;
                    return Some(DecodeError::new(
                        self.index,
                        offset,
                        DecodeErrorKind::TooLarge { limit },
                    ));
                }
            }
            b"event" => {
                self.event_name =
                    Some(String::from_utf8_lossy(&self.buf[value_start..end]).into_owned());
            }
            b"id" => {
                let value = &self.buf[value_start..end];
                if !value.contains(&0) {
                    self.last_event_id = String::from_utf8_lossy(value).into_owned();
                }
            }
            b"retry" => {
                let value = &self.buf[value_start..end];
                if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                    self.retry = Some(value.iter().fold(0u64, |n, d| {
                        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                    }));
                }
            }
            _ => {}
        }
        None
    }

    /// The input has ended and no complete line is left.
    fn end_of_stream(&mut self) -> Option<Result<Dispatched, DecodeError>> {
        self.done = true;
        // An unterminated last line that is not a comment may be the start of an event
        // (`dat`, `data: {"ty`, `event: x`): the stream was cut.
        let partial = &self.buf[self.pos..];
        let partial_line = !partial.is_empty() && partial[0] != b':';
        if self.has_data || partial_line {
            let pending = self.frame_data().len() + partial.len();
            let offset = self.frame_start.unwrap_or(self.base + self.pos as u64);
            return Some(Err(DecodeError::new(
                self.index,
                offset,
                DecodeErrorKind::Truncated { pending },
            )));
        }
        None
    }
}

/// Where `bytes`, a piece of an SSE stream that starts at a line start, can be cut last
/// so that a decoder restarted there ([`SseDecoder::restart_with`]) reads the rest
/// exactly as one decoder would: just past the last blank line that ends with a line
/// feed (no frame is open there, and no carriage return waits for its line feed).
/// `None` when there is none.
#[cfg(any(test, feature = "unstable-parallel"))]
pub(crate) fn last_boundary(bytes: &[u8]) -> Option<usize> {
    memchr::memrchr_iter(b'\n', bytes)
        .find(|&p| {
            // Whether a line starts at `i`: the piece's start, or just after a
            // terminator (a line feed, or a carriage return not followed by one).
            let line_start = |i: usize| i == 0 || matches!(bytes[i - 1], b'\n' | b'\r');
            // The line this line feed ends is empty: its terminator is this line feed
            // alone, just after another terminator, or a CR LF at a line's start.
            p == 0
                || match bytes[p - 1] {
                    b'\n' => true,
                    b'\r' => line_start(p - 1),
                    _ => false,
                }
        })
        .map(|p| p + 1)
}

/// Reads one SSE event's data (as [`SseDecoder::next_frame`] gives it) as an AG-UI
/// event, as [`SseDecoder::next`] reads it; an event of a type protocol 1.1 does not
/// define is an [`UnknownEventType`](DecodeErrorKind::UnknownEventType) error, which
/// the decoder skips (with a warning). `index` and `offset` are the event's, for
/// the error.
fn decode_data(data: &[u8], index: u64, offset: u64) -> Result<Event, DecodeError> {
    parse_event(data).map_err(|kind| DecodeError::new(index, offset, kind))
}

/// Logs the warning the decoder logs when it skips an event of an unknown type.
pub(crate) fn warn_skipped(e: &DecodeError) {
    #[cfg(feature = "tracing")]
    let name = match &e.kind {
        DecodeErrorKind::UnknownEventType(name) => name.as_deref().unwrap_or(""),
        _ => return,
    };
    #[cfg(not(feature = "tracing"))]
    let _ = e;
    log_warn!(
        event_index = e.index,
        byte_offset = e.offset,
        event_type = name,
        "skipped an SSE event of a type protocol 1.1 does not define"
    );
}

/// Reads one event's data as an AG-UI event.
pub(crate) fn parse_event(data: &[u8]) -> Result<Event, DecodeErrorKind> {
    match Event::from_json_slice(data) {
        Ok(ev) => Ok(ev),
        Err(e) => {
            // The slow path: find out why.
            if std::str::from_utf8(data).is_err() {
                let text = String::from_utf8_lossy(data);
                return parse_event(text.as_bytes());
            }
            if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(data) {
                if let Some(Value::String(ty)) = obj.get("type") {
                    if EventType::from_wire(ty).is_none() {
                        return Err(DecodeErrorKind::UnknownEventType(Some(ty.clone())));
                    }
                }
            }
            Err(DecodeErrorKind::Json(e))
        }
    }
}

#[cfg(feature = "unstable-parallel")]
pub mod parallel;
#[cfg(test)]
mod tests;
