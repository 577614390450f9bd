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
    match serde_json::from_slice(bytes) {
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
