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

use super::{
    Event, ReasoningMessageContent, ReasoningRole, TextMessageContent, ToolCallArgs, ToolRole,
};
use crate::types::{Content, TextMessageRole};
use crate::wire::plain::{plain_string, raw_string, skip_ws, string, Member, Plain, ReadPlain};

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
/// Unstable: public only with the cargo feature `unstable-parallel`, as
/// `encoding::sse::parallel::Recycler`.
///
/// ```
/// # #[cfg(feature = "unstable-parallel")] {
/// use agui_sdk_core::encoding::sse::parallel::Recycler;
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
/// # }
/// # Ok::<(), agui_sdk_core::JsonError>(())
/// ```
#[derive(Debug, Default)]
// Used by the feature's parallel reader and by tests only.
#[cfg_attr(not(feature = "unstable-parallel"), allow(dead_code))]
pub struct Recycler {
    /// Class `k` holds strings whose capacity is in `[2^k, 2^(k+1))`.
    classes: [Vec<String>; Recycler::CLASSES],
    /// Strings kept, in all classes.
    count: usize,
    /// Their capacity, in all.
    kept: usize,
}

#[cfg_attr(not(feature = "unstable-parallel"), allow(dead_code))]
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
