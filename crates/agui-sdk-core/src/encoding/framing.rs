//! [`Framing`]: how a stream of events is laid out in a file or a body, for tools that
//! read and write recordings (the command line, the inspector): either encoding, or JSON
//! Lines.

use std::fmt;
use std::str::FromStr;

use super::Encoding;

/// How events are laid out in a recording: in one of the wire [`Encoding`]s, or as
/// JSON Lines (one event object per line, the form the command line reads and writes
/// besides the wire's). Its text form is `sse`, `proto` or `jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// Server-Sent Events (`data: <JSON>` frames).
    Sse,
    /// Length-prefixed protobuf (cargo feature `proto`).
    #[cfg(feature = "proto")]
    Proto,
    /// JSON Lines: one event object per line.
    JsonLines,
}

impl Framing {
    /// Every framing this build reads and writes.
    pub const ALL: &'static [Framing] = &[
        Framing::JsonLines,
        Framing::Sse,
        #[cfg(feature = "proto")]
        Framing::Proto,
    ];

    /// The wire encoding, `None` for JSON Lines.
    pub fn encoding(self) -> Option<Encoding> {
        match self {
            Framing::Sse => Some(Encoding::Sse),
            #[cfg(feature = "proto")]
            Framing::Proto => Some(Encoding::Proto),
            Framing::JsonLines => None,
        }
    }

    /// The name: `sse`, `proto` or `jsonl`.
    pub fn as_str(self) -> &'static str {
        match self {
            Framing::Sse => "sse",
            #[cfg(feature = "proto")]
            Framing::Proto => "proto",
            Framing::JsonLines => "jsonl",
        }
    }

    /// Guesses the framing of a recording from its first bytes: JSON Lines when it
    /// starts with `{`, SSE when it starts with an SSE field or comment, protobuf
    /// otherwise (SSE in a build without it).
    pub fn sniff(bytes: &[u8]) -> Framing {
        let start = bytes
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map_or(&[][..], |i| &bytes[i..]);
        if start.first() == Some(&b'{') {
            return Framing::JsonLines;
        }
        let sse = [&b"data:"[..], b"event:", b"id:", b"retry:", b":"]
            .iter()
            .any(|p| start.starts_with(p));
        #[cfg(feature = "proto")]
        if !sse {
            return Framing::Proto;
        }
        let _ = sse;
        Framing::Sse
    }
}

impl From<Encoding> for Framing {
    fn from(e: Encoding) -> Self {
        match e {
            Encoding::Sse => Framing::Sse,
            #[cfg(feature = "proto")]
            Encoding::Proto => Framing::Proto,
        }
    }
}

impl fmt::Display for Framing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a framing's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown framing '{0}': expected jsonl, sse or proto")]
pub struct UnknownFraming(pub String);

impl FromStr for Framing {
    type Err = UnknownFraming;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Framing::ALL
            .iter()
            .copied()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFraming(s.to_owned()))
    }
}

impl serde::Serialize for Framing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_recordings_are_sniffed() {
        for f in Framing::ALL {
            assert_eq!(f.as_str().parse::<Framing>(), Ok(*f));
            assert_eq!(serde_json::to_string(f).unwrap(), format!("\"{f}\""));
        }
        assert!("json".parse::<Framing>().is_err());
        assert_eq!(
            Framing::sniff(b"  {\"type\":\"RUN_STARTED\"}"),
            Framing::JsonLines
        );
        assert_eq!(Framing::sniff(b": keep-alive\n"), Framing::Sse);
        assert_eq!(Framing::sniff(b"data: {}\n\n"), Framing::Sse);
        #[cfg(feature = "proto")]
        assert_eq!(Framing::sniff(&[0, 0, 0, 5, 10]), Framing::Proto);
        assert_eq!(Framing::from(Encoding::Sse).encoding(), Some(Encoding::Sse));
        assert_eq!(Framing::JsonLines.encoding(), None);
    }
}
