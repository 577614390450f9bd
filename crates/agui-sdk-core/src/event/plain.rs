//! A direct reader for the events that make up most of a stream: the streamed content
//! of text messages, reasoning messages and tool-call arguments, in their plain shape.
//!
//! Such an event is an object of three string members: `type`, the id
//! (`messageId` or `toolCallId`) and `delta`. This reader takes exactly that, in any key
//! order and with any JSON whitespace, and builds the event without going through
//! serde. Everything else (another event type, one more or one less key, a repeated
//! key, a key or an id with an escape, a `\u` escape that is a lone surrogate, a
//! control character, anything after the object) is left to the exact decoder, which
//! decides and reports errors as always: what this reader accepts, the exact decoder
//! decodes to the same event (a property test holds the two to that on random and
//! mutated input).
//!
//! A second reader, [`read_tagged`], takes any other event whose members are all
//! strings (message, reasoning, step and tool-call starts and ends, tool results with
//! text, run starts and ends with ids only): it reads the members, then the event's own
//! `read_plain` (generated with its declaration, so every event has one) sets each field
//! whose type is read from a string here and refuses the rest. It runs only after the
//! content reader has refused, so that the content events pay nothing for it.

use std::marker::PhantomData;

use super::{
    Event, ReasoningMessageContent, ReasoningRole, TextMessageContent, ToolCallArgs, ToolRole,
};
use crate::types::{Content, TextMessageRole};

/// The event `text` holds when it is a streamed-content event in its plain shape;
/// `None` for anything else (then decode it exactly).
#[inline]
pub(crate) fn read(text: &str) -> Option<Event> {
    read_into(text, &mut String::with_capacity)
}

/// Decodes one event from JSON bytes: directly when it is in a plain shape, exactly
/// otherwise (see [`Event::from_json_slice`]); `blank(n)` gives the direct reader's
/// strings, empty, with room for at least `n` bytes.
#[inline]
pub(crate) fn decode(
    bytes: &[u8],
    blank: &mut impl FnMut(usize) -> String,
) -> Result<Event, crate::wire::JsonError> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => match read_into(text, blank) {
            Some(event) => Ok(event),
            None => match read_tagged(text, blank) {
                Some(event) => Ok(event),
                None => crate::wire::decode_text(text),
            },
        },
        // The byte decoder reports where the bad byte is.
        Err(_) => crate::wire::from_json_slice(bytes),
    }
}

/// [`read`], with the event's strings written into the empty strings `blank(n)` gives
/// (with room for `n` bytes: recycled ones keep their capacity).
#[inline]
pub(crate) fn read_into(text: &str, blank: &mut impl FnMut(usize) -> String) -> Option<Event> {
    let b = text.as_bytes();
    // Three `"key":"value"` members, in any order; the type is checked as soon as it is
    // read, so that another event is left at once.
    let mut at = skip_ws(b, 0);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut ty: Option<&str> = None;
    let mut id: Option<(&[u8], &str)> = None;
    let mut delta: Option<String> = None;
    for member in 0..3 {
        at = skip_ws(b, at);
        if member > 0 {
            if b.get(at) != Some(&b',') {
                return None;
            }
            at = skip_ws(b, at + 1);
        }
        let (key, next) = plain_string(text, at)?;
        at = skip_ws(b, next);
        if b.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(b, at + 1);
        match key {
            "type" if ty.is_none() => {
                let (value, next) = plain_string(text, at)?;
                if !matches!(
                    value,
                    "TEXT_MESSAGE_CONTENT" | "REASONING_MESSAGE_CONTENT" | "TOOL_CALL_ARGS"
                ) {
                    return None;
                }
                ty = Some(value);
                at = next;
            }
            "delta" if delta.is_none() => {
                let (value, next) = string(text, at, blank)?;
                delta = Some(value);
                at = next;
            }
            "messageId" | "toolCallId" if id.is_none() => {
                let (value, next) = plain_string(text, at)?;
                id = Some((key.as_bytes(), value));
                at = next;
            }
            _ => return None,
        }
    }
    at = skip_ws(b, at);
    if b.get(at) != Some(&b'}') || skip_ws(b, at + 1) != b.len() {
        return None;
    }
    let (ty, (id_key, id_text), delta) = (ty?, id?, delta?);
    let mut id = blank(id_text.len());
    id.push_str(id_text);
    match (ty, id_key) {
        ("TEXT_MESSAGE_CONTENT", b"messageId") => Some(TextMessageContent::new(id, delta).into()),
        ("REASONING_MESSAGE_CONTENT", b"messageId") => {
            Some(ReasoningMessageContent::new(id, delta).into())
        }
        ("TOOL_CALL_ARGS", b"toolCallId") => Some(ToolCallArgs::new(id, delta).into()),
        _ => None,
    }
}

/// Most members [`read_tagged`] takes (no event of string members has more).
const MAX_MEMBERS: usize = 8;

/// The event `text` holds when it is one object whose members are all strings, with
/// keys that hold no escape and none repeated, and its type's declaration reads every
/// member from a string (see the module documentation); `None` for anything else.
#[inline]
pub(crate) fn read_tagged(text: &str, blank: &mut impl FnMut(usize) -> String) -> Option<Event> {
    let mut members = [Member::default(); MAX_MEMBERS];
    let n = read_members(text, &mut members)?;
    let members = &members[..n];
    let tag = members.iter().find(|m| m.key == "type")?.plain()?;
    Event::read_plain(tag, members, blank)
}

/// The members of `text` into `out` and how many there are, when `text` is one object
/// (with JSON whitespace around it and its tokens) of at most [`MAX_MEMBERS`] string
/// members whose keys hold no escape and differ.
fn read_members<'a>(text: &'a str, out: &mut [Member<'a>; MAX_MEMBERS]) -> Option<usize> {
    let b = text.as_bytes();
    let mut at = skip_ws(b, 0);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(b, at + 1);
    let mut n = 0;
    if b.get(at) != Some(&b'}') {
        loop {
            let (key, next) = plain_string(text, at)?;
            at = skip_ws(b, next);
            if b.get(at) != Some(&b':') {
                return None;
            }
            at = skip_ws(b, at + 1);
            let (raw, escaped, next) = raw_string(text, at)?;
            if n == MAX_MEMBERS || out[..n].iter().any(|m| m.key == key) {
                return None;
            }
            out[n] = Member { key, raw, escaped };
            n += 1;
            at = skip_ws(b, next);
            match b.get(at) {
                Some(b',') => at = skip_ws(b, at + 1),
                Some(b'}') => break,
                _ => return None,
            }
        }
    }
    (skip_ws(b, at + 1) == b.len()).then_some(n)
}

/// A string starting at `at` (its opening quote): the text between its quotes (escapes
/// not read), whether it holds an escape, and the position after the closing quote.
/// `None` at a control character or with no closing quote.
#[inline]
fn raw_string(text: &str, at: usize) -> Option<(&str, bool, usize)> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let mut from = start;
    let mut escaped = false;
    loop {
        let stop = from + special(b.get(from..)?)?;
        match b[stop] {
            // Next to an ASCII quote: a character boundary.
            b'"' => return Some((text.get(start..stop)?, escaped, stop + 1)),
            b'\\' => {
                // The escaped byte is never the closing quote; the escape itself is
                // judged when the value is read.
                escaped = true;
                from = stop + 2;
            }
            _ => return None,
        }
    }
}

/// `raw`, a string's text between its quotes (`escaped`: it holds an escape), with its
/// escapes read, in a string from `blank` sized once; `None` at a bad escape or a lone
/// surrogate.
#[inline]
fn unescaped(raw: &str, escaped: bool, blank: &mut impl FnMut(usize) -> String) -> Option<String> {
    // The text with its escapes is at least as long as what they stand for.
    let mut out = blank(raw.len());
    if !escaped {
        out.push_str(raw);
        return Some(out);
    }
    unescape(raw, out)
}

/// `raw` (a string's text between its quotes) with its escapes read, appended to `out`;
/// `None` at a bad escape or a lone surrogate.
fn unescape(raw: &str, mut out: String) -> Option<String> {
    let b = raw.as_bytes();
    let mut from = 0;
    loop {
        let Some(stop) = special(&b[from..]).map(|i| from + i) else {
            out.push_str(raw.get(from..)?);
            return Some(out);
        };
        out.push_str(raw.get(from..stop)?);
        if b[stop] != b'\\' {
            return None;
        }
        let (c, next) = escape(b, stop + 1)?;
        out.push(c);
        from = next;
    }
}

/// One member of an object whose values are all strings: its key (which holds no
/// escape) and its value's text between the quotes, escapes not yet read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Member<'a> {
    /// The key.
    pub(crate) key: &'a str,
    raw: &'a str,
    escaped: bool,
}

impl Member<'_> {
    /// The value, its escapes read, in a string from `blank`.
    #[inline]
    pub(crate) fn string(&self, blank: &mut impl FnMut(usize) -> String) -> Option<String> {
        unescaped(self.raw, self.escaped, blank)
    }

    /// The value, when it holds no escape.
    #[inline]
    pub(crate) fn plain(&self) -> Option<&str> {
        (!self.escaped).then_some(self.raw)
    }
}

/// A field's type, for choosing where the protocol macros expand (by autoref, as in
/// `wire::direct`) how the field is read from a string member ([`ReadPlain`] for the
/// types read here, [`NotPlain`], never, for every other type) and what a recycler
/// takes back of it ([`GiveString`] for a string, [`NoString`], dropped, for the rest).
pub(crate) struct Plain<T>(PhantomData<T>);

impl<T> Plain<T> {
    /// The chooser for `T`.
    pub(crate) const NEW: Self = Plain(PhantomData);
}

/// Types read from a string member, exactly as the exact decoder reads them from a
/// JSON string.
pub(crate) trait ReadPlain<T> {
    /// The value `m` holds; `None` when the exact decoder must judge it.
    fn read_plain(&self, m: &Member<'_>, blank: &mut impl FnMut(usize) -> String) -> Option<T>;
}

/// Every other type: left to the exact decoder.
pub(crate) trait NotPlain<T> {
    /// Always `None`.
    #[inline]
    fn read_plain(&self, _: &Member<'_>, _: &mut impl FnMut(usize) -> String) -> Option<T> {
        None
    }
}

impl<T> NotPlain<T> for Plain<T> {}

impl ReadPlain<String> for &Plain<String> {
    #[inline]
    fn read_plain(
        &self,
        m: &Member<'_>,
        blank: &mut impl FnMut(usize) -> String,
    ) -> Option<String> {
        m.string(blank)
    }
}

impl ReadPlain<Content> for &Plain<Content> {
    #[inline]
    fn read_plain(
        &self,
        m: &Member<'_>,
        blank: &mut impl FnMut(usize) -> String,
    ) -> Option<Content> {
        m.string(blank).map(Content::Text)
    }
}

/// A string field: handed to the recycler.
pub(crate) trait GiveString {
    /// Hands `value` to `keep`.
    fn give(&self, value: String, keep: &mut impl FnMut(String));
}

impl GiveString for &Plain<String> {
    #[inline]
    fn give(&self, value: String, keep: &mut impl FnMut(String)) {
        keep(value)
    }
}

/// Any other field: dropped.
pub(crate) trait NoString<T> {
    /// Drops `value`.
    #[inline]
    fn give(&self, value: T, _: &mut impl FnMut(String)) {
        drop(value)
    }
}

impl<T> NoString<T> for Plain<T> {}

/// The roles: unit variants named by plain strings, read by their own `Deserialize`.
macro_rules! plain_unit {
    ($($t:ty),*) => {$(
        impl ReadPlain<$t> for &Plain<$t> {
            #[inline]
            fn read_plain(&self, m: &Member<'_>, _: &mut impl FnMut(usize) -> String) -> Option<$t> {
                use serde::de::value::{BorrowedStrDeserializer, Error};
                <$t as serde::Deserialize>::deserialize(BorrowedStrDeserializer::<Error>::new(m.plain()?)).ok()
            }
        }
    )*};
}

plain_unit!(TextMessageRole, ToolRole, ReasoningRole);

/// The first position at or after `at` that is not JSON whitespace.
#[inline]
fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(at) {
        at += 1;
    }
    at
}

/// A string starting at `at` (its opening quote) that holds no escape: the text between
/// the quotes and the position after the closing one.
#[inline]
fn plain_string(text: &str, at: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let end = start + special(&b[start..])?;
    if b[end] != b'"' {
        return None;
    }
    // Both ends stand next to an ASCII quote, so they are character boundaries.
    Some((text.get(start..end)?, end + 1))
}

/// A string starting at `at` (its opening quote), unescaped into a string from
/// `blank`: its value and the position after the closing quote. `None` for what the
/// exact decoder must judge (a control character, a bad escape, a lone surrogate, no
/// closing quote).
fn string(
    text: &str,
    at: usize,
    blank: &mut impl FnMut(usize) -> String,
) -> Option<(String, usize)> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let from = at + 1;
    let stop = from + special(&b[from..])?;
    if b[stop] == b'"' {
        // No escape (nearly always): read in the one scan.
        let mut out = blank(stop - from);
        out.push_str(text.get(from..stop)?);
        return Some((out, stop + 1));
    }
    let (raw, escaped, next) = raw_string(text, at)?;
    Some((unescaped(raw, escaped, blank)?, next))
}

/// The character an escape stands for (`at` is just after the backslash) and the
/// position after it.
#[inline]
fn escape(b: &[u8], at: usize) -> Option<(char, usize)> {
    let c = match *b.get(at)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(b, at + 1)?;
            return match high {
                0xD800..=0xDBFF => {
                    // A pair: the low half must follow as another `\u` escape.
                    if b.get(at + 5..at + 7)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(b, at + 7)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    Some((char::from_u32(code)?, at + 11))
                }
                0xDC00..=0xDFFF => None,
                _ => Some((char::from_u32(high)?, at + 5)),
            };
        }
        _ => return None,
    };
    Some((c, at + 1))
}

/// Four hexadecimal digits at `at`.
#[inline]
fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = v * 16 + (d as char).to_digit(16)?;
    }
    Some(v)
}

/// Where the first byte that ends a run of plain string content stands in `b`: a quote,
/// a backslash or a control character. Eight bytes at a time.
#[inline]
fn special(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut at = 0;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // A byte below 0x20 (control), equal to `"` or to `\`. The bytes at or above
        // 0x80 are masked out of the control test so that UTF-8 does not trip it.
        let control = v.wrapping_sub(ONES * 0x20) & !v & HIGHS;
        let found =
            control | has_zero(v ^ (ONES * b'"' as u64)) | has_zero(v ^ (ONES * b'\\' as u64));
        if found != 0 {
            // The lowest flagged byte is the first such one (the tests above may flag a
            // byte after a true one, never before it).
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| c < 0x20 || c == b'"' || c == b'\\')
        .map(|i| at + i)
}

/// The strings of events a consumer is done with, kept for the next events it decodes:
/// a reader that decodes many events and drops them as it goes (a verifier, a
/// converter) then neither allocates nor frees their text. [`Recycler::decode`] decodes
/// exactly as [`Event::from_json_slice`]; [`Recycler::recycle`] takes an event back.
///
/// It keeps strings by capacity (in classes of powers of two) and hands out for each
/// value one with room for it when it has one, so that a string is not grown again
/// while it is filled. What it keeps is bounded: 4,096 strings of up to 4 KiB of
/// capacity each, 512 KiB in all; the rest is freed as usual.
///
/// ```
/// use agui_sdk_core::event::Recycler;
///
/// let mut recycler = Recycler::new();
/// for line in [
///     r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"Hel"}"#,
///     r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"lo"}"#,
/// ] {
///     let event = recycler.decode(line.as_bytes())?;
///     // … use the event, then hand it back:
///     recycler.recycle(event);
/// }
/// # Ok::<(), agui_sdk_core::JsonError>(())
/// ```
#[derive(Debug, Default)]
pub struct Recycler {
    /// Class `k` holds strings whose capacity is in `[2^k, 2^(k+1))`.
    classes: [Vec<String>; Recycler::CLASSES],
    /// Strings kept, in all classes.
    count: usize,
    /// Their capacity, in all.
    kept: usize,
}

impl Recycler {
    /// Most capacity one kept string may have.
    const MAX_STRING: usize = 4 << 10;
    /// Most capacity kept in all.
    const MAX_KEPT: usize = 512 << 10;
    /// Most strings kept.
    const MAX_STRINGS: usize = 4096;
    /// Capacity classes: up to [`MAX_STRING`](Self::MAX_STRING), a power of two.
    const CLASSES: usize = 13;

    /// An empty recycler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one event from JSON bytes, as [`Event::from_json_slice`] does, with
    /// recycled strings where it can.
    #[inline]
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Event, crate::wire::JsonError> {
        decode(bytes, &mut |n| self.blank(n))
    }

    /// Decodes one event as [`decode`](Self::decode) does, when it is all protocol: the
    /// event, or `None` when the bytes do not read as one or a protocol object in them
    /// has a key its declaration does not define. A `Some` is what the inbound pipeline
    /// makes of the same bytes before its checks (nothing to remove or warn about), so a
    /// reader on another thread can decode ahead and hand the pipeline typed events
    /// ([`RawBody::Event`](crate::encoding::RawBody::Event)), and the rest as text.
    #[inline]
    pub fn decode_known(&mut self, bytes: &[u8]) -> Option<Event> {
        let mark = crate::wire::de::UnknownKeys::start();
        let decoded = self.decode(bytes);
        let unknown = mark.finish();
        decoded.ok().filter(|_| !unknown)
    }

    /// Takes an event back: its string fields are kept for the next decodes (within
    /// the bounds); the rest is dropped.
    #[inline]
    pub fn recycle(&mut self, event: Event) {
        event.give_strings(&mut |s| self.keep(s));
    }

    #[inline]
    fn keep(&mut self, mut s: String) {
        let cap = s.capacity();
        if cap != 0
            && cap <= Self::MAX_STRING
            && self.kept + cap <= Self::MAX_KEPT
            && self.count < Self::MAX_STRINGS
        {
            s.clear();
            self.kept += cap;
            self.count += 1;
            // The class of `cap`: the position of its highest bit.
            self.classes[cap.ilog2() as usize].push(s);
        }
    }

    /// An empty string with room for `n` bytes: a kept one from the smallest class whose
    /// strings all have that room, or a new one.
    #[inline]
    fn blank(&mut self, n: usize) -> String {
        // The smallest `k` with `2^k >= n`.
        let first = n.max(1).next_power_of_two().ilog2() as usize;
        for class in self.classes.iter_mut().skip(first) {
            if let Some(s) = class.pop() {
                self.kept -= s.capacity();
                self.count -= 1;
                return s;
            }
        }
        String::with_capacity(n)
    }
}

#[cfg(test)]
mod tests;
