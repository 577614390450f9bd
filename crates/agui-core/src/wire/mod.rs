//! JSON wire form: the macros that define protocol objects, decoding helpers and the
//! error type that says where bad input went wrong.

#[macro_use]
pub(crate) mod macros;
pub mod de;
mod error;
pub(crate) mod js_number;
pub(crate) mod shape;

pub use error::{from_json_slice, from_json_str, from_json_value, JsonError};

/// Writes `value` as the project's canonical JSON: compact, keys in the order the value
/// gives them, and numbers spelled as ECMAScript's `JSON.stringify` spells them (`1e+21`,
/// `10000000000000000`, `0` for `-0`), exactly as the SSE encoder writes event data.
/// Every JSON this workspace writes (SSE frames, JSON Lines, the command line's output)
/// goes through it, so one value has one spelling everywhere.
pub fn write_canonical<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, js_number::JsFormatter);
    // Serializing into memory cannot fail for these types: every map key is a string.
    let _ = value.serialize(&mut ser);
}

/// [`write_canonical`] into any writer, as it serializes: nothing is built in memory
/// first, so writing a large value costs no copy of it.
///
/// # Errors
/// What `out` returns.
pub fn write_canonical_to<T: serde::Serialize + ?Sized, W: std::io::Write>(
    value: &T,
    out: W,
) -> std::io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, js_number::JsFormatter);
    value.serialize(&mut ser).map_err(std::io::Error::from)
}

/// [`write_canonical`] into a `String`.
pub fn to_canonical_string<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(128);
    write_canonical(value, &mut out);
    // The serializer writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}
