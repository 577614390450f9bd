use serde::de::DeserializeOwned;
use serde_json::Value;

/// A JSON document that is not a valid protocol object: what was wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}{}", path_prefix(.path), position(*.line, *.column))]
#[non_exhaustive]
pub struct JsonError {
    /// Path of the offending field, `/`-separated (`messages/0/role`); empty for the
    /// document itself.
    pub path: String,
    /// What was wrong, without the position.
    pub message: String,
    /// 1-based line of the input where decoding stopped (0 when unknown).
    pub line: usize,
    /// 1-based column of the input where decoding stopped (0 when unknown).
    pub column: usize,
    /// Whether the input was not JSON at all (syntax, truncation) rather than JSON of the
    /// wrong shape.
    pub syntax: bool,
}

fn path_prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("field `{path}`: ")
    }
}

fn position(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(" (line {line}, column {column})")
    }
}

fn render_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        let part = match seg {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } => key.clone(),
            Segment::Enum { variant } => variant.clone(),
            Segment::Unknown => continue,
        };
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(&part);
    }
    out
}

fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    if e.line() == 0 {
        return s;
    }
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    s.strip_suffix(&suffix).map(str::to_owned).unwrap_or(s)
}

impl JsonError {
    pub(crate) fn new(e: serde_json::Error, path: String) -> Self {
        let mut message = strip_position(&e);
        // serde_json's words for `"\ud800"` (a UTF-16 surrogate with no pair), which
        // `JSON.parse` takes but UTF-8 text cannot hold, say nothing of the cause.
        if message.contains("hex escape") || message.contains("surrogate") {
            message = format!(
                "a \\u escape names a lone UTF-16 surrogate (\\ud800-\\udfff without its pair), which is not Unicode text ({message})"
            );
        }
        JsonError {
            message,
            line: e.line(),
            column: e.column(),
            syntax: matches!(
                e.classify(),
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof
            ),
            path,
        }
    }
}

/// Decodes a protocol object from JSON bytes. The fast path is a plain `serde_json`
/// decode; only when it fails is the input decoded again to find the failing field.
pub fn from_json_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JsonError> {
    decode(bytes, true)
}

/// [`from_json_slice`]; with `utf8_once`, valid UTF-8 (nearly always) is checked once for
/// the whole text, in one fast pass, and then parsed as a `str`, which serde_json does
/// not check again string by string: the same parser, so the same result and the same
/// errors (a test holds the two ways to that). Anything else is parsed as bytes, which
/// reports the bad byte where it is.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], utf8_once: bool) -> Result<T, JsonError> {
    let fast = match std::str::from_utf8(bytes) {
        Ok(text) if utf8_once => serde_json::from_str(text),
        _ => serde_json::from_slice(bytes),
    };
    settle(bytes, fast)
}

/// [`from_json_slice`] of a text already known to be UTF-8 (not checked again).
pub(crate) fn decode_text<T: DeserializeOwned>(text: &str) -> Result<T, JsonError> {
    settle(text.as_bytes(), serde_json::from_str(text))
}

/// The result of the plain decode of `bytes`; on an error, the error with the failing
/// field's path (or the value read as `JSON.parse` reads it, for a repeated tag).
fn settle<T: DeserializeOwned>(
    bytes: &[u8],
    fast: Result<T, serde_json::Error>,
) -> Result<T, JsonError> {
    match fast {
        Ok(v) => Ok(v),
        // A union tag repeated with another value: read as `JSON.parse` reads it, the
        // last occurrence winning (as it does for every other key).
        Err(first) if first.to_string().contains(super::de::REPEATED_TAG) => {
            let value: serde_json::Value =
                serde_json::from_slice(bytes).map_err(|e| JsonError::new(e, String::new()))?;
            serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
                let path = render_path(e.path());
                JsonError::new(e.into_inner(), path)
            })
        }
        Err(first) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Ok(_) => Err(JsonError::new(first, String::new())),
                Err(e) => {
                    let path = render_path(e.path());
                    Err(JsonError::new(e.into_inner(), path))
                }
            }
        }
    }
}

/// Decodes a protocol object from a JSON string. See [`from_json_slice`].
pub fn from_json_str<T: DeserializeOwned>(s: &str) -> Result<T, JsonError> {
    from_json_slice(s.as_bytes())
}

/// Decodes a protocol object from an already parsed JSON value.
pub fn from_json_value<T: DeserializeOwned>(v: &Value) -> Result<T, JsonError> {
    match serde_path_to_error::deserialize::<_, T>(v) {
        Ok(t) => Ok(t),
        Err(e) => {
            let path = render_path(e.path());
            Err(JsonError::new(e.into_inner(), path))
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::Event;

    /// Events whose JSON exercises escapes, non-ASCII text, nesting, numbers and every
    /// kind of value, to be mutated.
    const SEEDS: &[&str] = &[
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"h\u00e9llo \"w\" \ud83d\ude00 ünï 😀\n"}"#,
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","state":{"a":[1,2.5,-3e2,true,null,{"b":"c"}]},"messages":[{"id":"u","role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"f","description":"d","parameters":{"type":"object"}}],"context":[],"forwardedProps":{}}}"#,
        r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/a/-","value":{"k":[1,{"z":null}]}},{"op":"move","from":"/a/0","path":"/b"}],"timestamp":1700000000000}"#,
        r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"assistant","content":"hi","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},{"id":"t","role":"tool","toolCallId":"c","content":"ok"}]}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"approve","metadata":{"n":18446744073709551615}}]},"rawEvent":{"x":[[[]]]},"extra":"kept"}"#,
    ];

    use crate::wire::mutate::{apply, edit};

    fn edit_json() -> impl Strategy<Value = crate::wire::mutate::Edit> {
        edit(b"{}[]\":,\\0123456789.eE+-tfnu ")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        /// The UTF-8-once path and the byte path agree on every input: the same event,
        /// or the same error (message, field path, line and column).
        #[test]
        fn utf8_once_reads_exactly_as_bytes(
            seed in 0..SEEDS.len(),
            edits in prop::collection::vec(edit_json(), 0..4),
        ) {
            let bytes = apply(SEEDS[seed].as_bytes().to_vec(), &edits);
            let fast = super::decode::<Event>(&bytes, true);
            let exact = super::decode::<Event>(&bytes, false);
            match (&fast, &exact) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Err(a), Err(b)) => {
                    prop_assert_eq!(a.to_string(), b.to_string());
                    prop_assert_eq!((a.line, a.column), (b.line, b.column));
                }
                _ => prop_assert!(false, "{:?} vs {:?} on {:?}", fast, exact, String::from_utf8_lossy(&bytes)),
            }
        }
    }

    #[test]
    fn the_seeds_decode() {
        for s in SEEDS {
            super::decode::<Event>(s.as_bytes(), true).unwrap();
        }
    }
}
