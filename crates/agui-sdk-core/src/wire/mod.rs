//! JSON wire form: decoding helpers, the lexing of the direct readers, canonical
//! writing, and the error type that says where bad input went wrong. The macros that
//! define protocol objects with them are the crate's `macros` module.

pub(crate) mod canonical;
pub(crate) mod de;
pub(crate) mod direct;
mod error;
#[cfg(test)]
pub(crate) mod mutate;
pub(crate) mod plain;
#[cfg(test)]
pub(crate) use error::decode as decode_bytes;
pub(crate) use error::decode_text;
pub(crate) mod js_number;
pub(crate) mod shape;

pub use error::{from_json_slice, from_json_str, from_json_value, JsonError};

/// Writes `value` as the project's canonical JSON: compact, keys in the order the value
/// gives them, and numbers spelled as ECMAScript's `JSON.stringify` spells them (`1e+21`,
/// `10000000000000000`, `0` for `-0`), exactly as the SSE encoder writes event data.
/// Every JSON this workspace writes that carries protocol or user values goes through
/// it (event frames, JSON Lines, run request bodies, CopilotKit thread reads, stored
/// interrupt entries, the inspector's API, the command line's output), so one value has
/// one spelling everywhere. Error bodies holding only strings and the model agent's
/// requests to its provider are written by `serde_json` directly.
///
/// A value serde_json could not write either (a map whose keys are not strings or
/// scalars) is written up to that point.
#[inline]
pub fn write_canonical<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Serializing into memory cannot fail for the workspace's types: every map key is a
    // string.
    let _ = canonical::write(value, out);
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

/// Where the JSON string whose opening quote is at `quote` ends: just past its closing
/// quote (over escapes), or the text's length when it stops first. It checks nothing: it
/// is for moving over text already known to be JSON, or for estimating.
pub(crate) fn string_end(json: &[u8], quote: usize) -> usize {
    let mut i = quote + 1;
    while i < json.len() {
        match memchr::memchr2(b'"', b'\\', &json[i..]) {
            Some(k) if json[i + k] == b'\\' => i += k + 2,
            Some(k) => return i + k + 1,
            None => break,
        }
    }
    json.len()
}

/// Where the JSON value starting at `start` (whitespace before it allowed) ends: just
/// past it for a string or a container, at the `,`, `}` or `]` after it for a number or
/// a literal; the text's length when it stops first. Like [`string_end`], it checks
/// nothing.
pub(crate) fn value_end(json: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < json.len() {
        match json[i] {
            b'"' => {
                i = string_end(json, i);
                if depth == 0 {
                    return i;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return i;
                }
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    json.len()
}

#[cfg(test)]
mod scan_tests {
    #[test]
    fn values_and_strings_end_where_they_end() {
        // Keys and separators, then each value (escapes and brackets inside strings).
        let parts = [
            r#"{"k\"}":"#,
            r#""]}\\\"""#,
            r#", "n":"#,
            " -1.5e3 ",
            r#","a":"#,
            r#"[1,{"b":"]"}]"#,
            r#","z":"#,
            "true",
            "}",
        ];
        let text = parts.concat();
        let t = text.as_bytes();
        let mut at = 0;
        for (i, part) in parts.iter().enumerate() {
            if i % 2 == 1 {
                assert_eq!(&text[at..super::value_end(t, at)], *part);
            }
            at += part.len();
        }
        assert_eq!(super::string_end(t, 1), parts[0].len() - 1);
        assert_eq!(super::value_end(b"[1,2", 0), 4);
        assert_eq!(super::string_end(b"\"ab\\", 0), 4);
    }
}
