//! Writing an event's canonical JSON straight from its fields, without going through
//! serde: the keys and the union tag are literals written as they are, strings go to
//! the SIMD escaper, free-form JSON text is copied, and only the rest (free-form
//! `Value`s, nested objects, lists) goes through the canonical serializer. The output is
//! the serializer's, byte for byte (`tests/encoding_props.rs` holds the two to that on
//! every event type).
//!
//! Which way a field is written is chosen by its type where the protocol macros expand,
//! with autoref: `(&&Direct(&field)).write_direct(out)` finds a specific impl on
//! `&Direct<String>` (and the other types written here) first, and falls back to
//! [`WriteViaSerde`] on `Direct<T>` for any other serializable type.

use serde::Serialize;

use crate::JsonText;

/// A field about to be written.
pub(crate) struct Direct<'a, T: ?Sized>(pub &'a T);

/// Types written here directly.
pub(crate) trait WriteDirect {
    /// Appends the value's canonical JSON to `out`.
    fn write_direct(&self, out: &mut Vec<u8>);
}

/// Any other type: through the canonical serializer.
pub(crate) trait WriteViaSerde {
    /// Appends the value's canonical JSON to `out`.
    fn write_direct(&self, out: &mut Vec<u8>);
}

impl<T: Serialize + ?Sized> WriteViaSerde for Direct<'_, T> {
    #[inline]
    fn write_direct(&self, out: &mut Vec<u8>) {
        super::write_canonical(self.0, out);
    }
}

impl WriteDirect for &Direct<'_, String> {
    #[inline]
    fn write_direct(&self, out: &mut Vec<u8>) {
        json_escape_simd::escape_into(self.0, out);
    }
}

impl WriteDirect for &Direct<'_, bool> {
    #[inline]
    fn write_direct(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if *self.0 { b"true" } else { b"false" });
    }
}

impl WriteDirect for &Direct<'_, i64> {
    #[inline]
    fn write_direct(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(*self.0).as_bytes());
    }
}

impl WriteDirect for &Direct<'_, JsonText> {
    #[inline]
    fn write_direct(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0.as_str().as_bytes());
    }
}

/// Appends the unknown keys `extra` holds as `,"key":value…` (its canonical object text
/// without its braces: the serializer writes each entry so too).
#[inline]
pub(crate) fn write_extra(extra: &crate::Extra, out: &mut Vec<u8>) {
    if let Some(text) = extra.as_text() {
        let text = text.as_str().as_bytes();
        if text.len() > 2 {
            out.push(b',');
            out.extend_from_slice(&text[1..text.len() - 1]);
        }
    }
}
