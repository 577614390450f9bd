//! Protocol versions, the check of the version a producer declares, and the era shims:
//! what a client does differently for a peer pinned to an older protocol version.
//!
//! | peer pinned to | outgoing input | incoming events |
//! |---|---|---|
//! | ≤ 0.0.39 | message content flattened to its text parts (a warning names what was dropped) | — |
//! | ≤ 0.0.45 | — | `THINKING_*` translated (the always-on compatibility stage already does) |
//! | ≤ 0.0.57 | no `subagentRunId` on messages | `SUBAGENT_*` events dropped and attribution removed, with a warning |
//! | below the current version | no `protocolVersion` (a pinned peer is not told a version it may not know) | — |
//!
//! Legacy `binary` content parts are upgraded to typed media whatever the pin
//! ([`upgrade_legacy_content`]): they are not representable in the typed messages, so the
//! upgrade happens where JSON becomes typed.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use super::{InboundWarning, WarningKind};
use crate::event::{Event, EventFamily};
use crate::types::{Content, ContentPart, Message, RunAgentInput};

/// The protocol version this crate implements.
pub const CURRENT_PROTOCOL_VERSION: &str = crate::PROTOCOL_VERSION;

/// A protocol version, `MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, ordered numerically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProtocolVersion {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch (0 when not written).
    pub patch: u32,
}

impl ProtocolVersion {
    /// A version from its parts.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        ProtocolVersion {
            major,
            minor,
            patch,
        }
    }

    /// The version this crate implements.
    pub fn current() -> Self {
        Self::parse(CURRENT_PROTOCOL_VERSION).unwrap_or(Self::new(1, 1, 0))
    }

    /// Parses `MAJOR.MINOR` or `MAJOR.MINOR.PATCH` (decimal numbers, nothing else);
    /// `None` when the text is not such an identifier.
    pub fn parse(text: &str) -> Option<Self> {
        let mut nums = [0u32; 3];
        let mut count = 0;
        for p in text.split('.') {
            if count == 3 || p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            nums[count] = p.parse().ok()?;
            count += 1;
        }
        if count < 2 {
            return None;
        }
        let [major, minor, patch] = nums;
        Some(Self::new(major, minor, patch))
    }

    /// Whether a peer pinned to this version is at or below `other`.
    pub fn at_most(&self, other: ProtocolVersion) -> bool {
        *self <= other
    }
}

impl PartialOrd for ProtocolVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ProtocolVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch))
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.major == 0 || self.patch != 0 {
            write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
        } else {
            write!(f, "{}.{}", self.major, self.minor)
        }
    }
}

impl std::str::FromStr for ProtocolVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s).ok_or_else(|| {
            format!("{s:?} is not a protocol version (MAJOR.MINOR or MAJOR.MINOR.PATCH)")
        })
    }
}

const ERA_FLATTEN_CONTENT: ProtocolVersion = ProtocolVersion::new(0, 0, 39);
const ERA_NO_SUBAGENTS: ProtocolVersion = ProtocolVersion::new(0, 0, 57);

/// A producer's declared protocol version that this client cannot vouch for. The stream
/// is processed all the same, under this client's rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionWarning {
    /// The producer declares a newer version than this client implements.
    #[error("the producer declares protocol version {declared}, newer than the {current} this client implements: processing it under {current}'s rules, so material it does not describe is stripped")]
    Newer {
        /// What the producer declared.
        declared: String,
        /// What this client implements.
        current: String,
    },
    /// The declaration is not a `MAJOR.MINOR` identifier.
    #[error("cannot interpret the producer's protocol version {declared:?} (expected MAJOR.MINOR): processing it as protocol {current}")]
    Uninterpretable {
        /// What the producer declared.
        declared: String,
        /// What this client implements.
        current: String,
    },
}

/// The incoming half of the era shims and the version check, inside the intake.
#[derive(Debug, Clone)]
pub(crate) struct IncomingEra {
    no_subagents: bool,
}

impl IncomingEra {
    pub(crate) fn new(max: &ProtocolVersion) -> Self {
        IncomingEra {
            no_subagents: max.at_most(ERA_NO_SUBAGENTS),
        }
    }

    /// Adapts the event for the consumer in place; `false` when it is dropped.
    #[inline]
    pub(crate) fn incoming(
        &mut self,
        index: u64,
        event: &mut Event,
        warnings: &mut Vec<InboundWarning>,
    ) -> bool {
        if let Event::RunStarted(e) = &*event {
            if let Some(declared) = &e.protocol_version {
                check_declared(index, declared, warnings);
            }
        }
        if self.no_subagents {
            if event.family() == EventFamily::Subagent {
                let ty = event.event_type();
                warnings.push(InboundWarning::new(
                    index,
                    WarningKind::Era(format!(
                        "dropping {ty}: the agent is pinned to protocol {ERA_NO_SUBAGENTS} or older, which has no subagents; its events are kept as the parent's"
                    )),
                ));
                return false;
            }
            strip_attribution(event);
        }
        true
    }
}

/// Removes subagent attribution from an event, and from the messages and interrupts it
/// carries (a peer before subagents has no use for it).
fn strip_attribution(event: &mut Event) {
    if let Some(tag) = event.subagent_run_id_mut() {
        *tag = None;
    }
    match event {
        Event::MessagesSnapshot(e) => {
            for m in &mut e.messages {
                *m.subagent_run_id_mut() = None;
            }
        }
        Event::RunStarted(e) => {
            if let Some(input) = &mut e.input {
                for m in &mut input.messages {
                    *m.subagent_run_id_mut() = None;
                }
            }
        }
        Event::RunFinished(e) => {
            if let Some(crate::types::RunFinishedOutcome::Interrupt(o)) = &mut e.outcome {
                for i in &mut o.interrupts {
                    i.subagent_run_id = None;
                }
            }
        }
        // The other events carry no messages or interrupts.
        _ => {}
    }
}

fn check_declared(index: u64, declared: &str, warnings: &mut Vec<InboundWarning>) {
    let current = ProtocolVersion::current();
    // A declaration is `MAJOR.MINOR`, nothing else (`1.0.0` is not one).
    let parsed = ProtocolVersion::parse(declared).filter(|_| declared.split('.').count() == 2);
    let warning = match parsed {
        None => VersionWarning::Uninterpretable {
            declared: declared.to_owned(),
            current: current.to_string(),
        },
        Some(v) if v > current => VersionWarning::Newer {
            declared: declared.to_owned(),
            current: current.to_string(),
        },
        Some(_) => return,
    };
    warnings.push(InboundWarning::new(index, WarningKind::Version(warning)));
}

/// The outgoing half of the era shims: adapts `input` for a peer pinned to `max` and
/// returns what was lost, as warnings (index 0: they concern the input, not an event).
pub fn apply_outgoing_era(input: &mut RunAgentInput, max: &ProtocolVersion) -> Vec<InboundWarning> {
    let mut warnings = Vec::new();
    if *max < ProtocolVersion::current() {
        input.protocol_version = None;
    }
    if max.at_most(ERA_NO_SUBAGENTS) {
        for m in &mut input.messages {
            *m.subagent_run_id_mut() = None;
        }
    }
    if max.at_most(ERA_FLATTEN_CONTENT) {
        input.parent_run_id = None;
        for m in &mut input.messages {
            let Message::User(u) = m else { continue };
            let Content::Parts(parts) = &u.content else {
                continue;
            };
            let mut text = String::new();
            let mut dropped = Vec::new();
            for p in parts {
                match p {
                    ContentPart::Text(t) => text.push_str(&t.text),
                    other => dropped.push(other.tag()),
                }
            }
            if !dropped.is_empty() {
                warnings.push(InboundWarning::new(
                    0,
                    WarningKind::Era(format!(
                        "message '{}': a peer pinned to protocol {ERA_FLATTEN_CONTENT} takes text content only; flattening DROPS non-text parts ({})",
                        u.id,
                        dropped.join(", ")
                    )),
                ));
            }
            u.content = Content::Text(text);
        }
    }
    warnings
}

/// Upgrades legacy `binary` content parts (`{"type":"binary","mimeType",…,"data"|"url"}`)
/// to the typed media parts of 1.0 (`image`, `audio`, `video` or `document` by MIME type,
/// with a `data` or `url` source; a `filename` becomes `metadata.filename`), in a JSON
/// array of messages, a message, or a whole `RunAgentInput`. A part with neither data nor
/// URL is left as it is (enforcement then drops it, with a warning). Returns how many
/// parts were upgraded.
pub fn upgrade_legacy_content(value: &mut Value) -> usize {
    match value {
        Value::Array(items) => items.iter_mut().map(upgrade_legacy_content).sum(),
        Value::Object(o) => {
            if let Some(messages) = o.get_mut("messages") {
                return upgrade_legacy_content(messages);
            }
            let Some(Value::Array(parts)) = o.get_mut("content") else {
                return 0;
            };
            let mut n = 0;
            for part in parts {
                if let Some(upgraded) = upgrade_part(part) {
                    *part = upgraded;
                    n += 1;
                }
            }
            n
        }
        _ => 0,
    }
}

fn upgrade_part(part: &Value) -> Option<Value> {
    let o = part.as_object()?;
    if o.get("type")?.as_str()? != "binary" {
        return None;
    }
    let mime = o.get("mimeType")?.as_str()?;
    let kind = if mime.starts_with("image/") {
        "image"
    } else if mime.starts_with("audio/") {
        "audio"
    } else if mime.starts_with("video/") {
        "video"
    } else {
        "document"
    };
    let truthy = |k: &str| o.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (source_type, value) = match (truthy("data"), truthy("url")) {
        (Some(d), _) => ("data", d),
        (None, Some(u)) => ("url", u),
        (None, None) => return None,
    };
    let mut out = serde_json::Map::new();
    out.insert("type".into(), kind.into());
    out.insert(
        "source".into(),
        serde_json::json!({"type": source_type, "value": value, "mimeType": mime}),
    );
    if let Some(f) = truthy("filename") {
        out.insert("metadata".into(), serde_json::json!({ "filename": f }));
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(
            ProtocolVersion::parse("1.1"),
            Some(ProtocolVersion::new(1, 1, 0))
        );
        assert_eq!(
            ProtocolVersion::parse("0.0.39"),
            Some(ProtocolVersion::new(0, 0, 39))
        );
        for bad in [
            "draft", "1", "1.", ".1", "1.1.1.1", "1.x", "+1.1", " 1.1", "1.1-beta",
        ] {
            assert_eq!(ProtocolVersion::parse(bad), None, "{bad}");
        }
        assert!(ProtocolVersion::new(0, 0, 57) < ProtocolVersion::new(1, 0, 0));
        assert!(ProtocolVersion::new(0, 0, 39).at_most(ERA_FLATTEN_CONTENT));
        assert!(!ProtocolVersion::new(0, 0, 40).at_most(ERA_FLATTEN_CONTENT));
        assert_eq!(ProtocolVersion::new(0, 0, 39).to_string(), "0.0.39");
        assert_eq!(
            ProtocolVersion::current().to_string(),
            CURRENT_PROTOCOL_VERSION
        );
    }

    #[test]
    fn declared_versions() {
        let mut w = Vec::new();
        check_declared(0, CURRENT_PROTOCOL_VERSION, &mut w);
        check_declared(0, "1.0", &mut w);
        check_declared(0, "0.9", &mut w);
        assert!(w.is_empty(), "{w:?}");
        check_declared(3, "1.2", &mut w);
        check_declared(4, "v2", &mut w);
        check_declared(5, "1.1.0", &mut w);
        assert_eq!(w.len(), 3);
        assert!(w[2].to_string().contains("cannot interpret"));
        assert!(w[0].to_string().starts_with(
            "event 3: the producer declares protocol version 1.2, newer than the 1.1"
        ));
        assert!(w[1]
            .to_string()
            .contains("cannot interpret the producer's protocol version \"v2\""));
    }

    #[test]
    fn legacy_binary_parts_are_upgraded() {
        let mut v = serde_json::json!([{"id": "u", "role": "user", "content": [
            {"type": "text", "text": "x"},
            {"type": "binary", "mimeType": "image/png", "url": "https://e/x.png"},
            {"type": "binary", "mimeType": "application/pdf", "data": "QUJD", "filename": "a.pdf"},
            {"type": "binary", "mimeType": "audio/wav", "id": "only-an-id"}
        ]}]);
        assert_eq!(upgrade_legacy_content(&mut v), 2);
        assert_eq!(
            v[0]["content"][1],
            serde_json::json!({"type": "image", "source": {"type": "url", "value": "https://e/x.png", "mimeType": "image/png"}})
        );
        assert_eq!(
            v[0]["content"][2],
            serde_json::json!({"type": "document", "source": {"type": "data", "value": "QUJD", "mimeType": "application/pdf"}, "metadata": {"filename": "a.pdf"}})
        );
        assert_eq!(v[0]["content"][3]["type"], "binary");
    }
}
