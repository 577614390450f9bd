//! Compatibility with pre-1.0 producers: the deprecated `THINKING_*` events.
//!
//! Protocol 1.0 has no `THINKING_*` events (a 1.0 producer emits `REASONING_*`), and
//! [`Event`](crate::Event) rejects them. The reference client still translates them on
//! input, and so does [`ThinkingTranslator`]: `THINKING_START` becomes `REASONING_START`,
//! `THINKING_TEXT_MESSAGE_START` becomes `REASONING_MESSAGE_START` (role `reasoning`),
//! `..._CONTENT` and `..._END` become `REASONING_MESSAGE_CONTENT`/`_END`, and
//! `THINKING_END` becomes `REASONING_END`. `THINKING_*` events carry no ids, so the
//! translator mints one on each opener and reuses it on the continuations. Every
//! translation is reported as a [`CompatWarning`] and through `tracing`.

use serde_json::Value;

use crate::JsonObject;

/// The deprecated event type names the translator understands.
pub const THINKING_TYPES: &[&str] = &[
    "THINKING_START",
    "THINKING_END",
    "THINKING_TEXT_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END",
];

/// Something a compatibility translation changed or lost.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompatWarning {
    /// The deprecated type that was translated.
    pub from: &'static str,
    /// What happened.
    pub message: String,
}

impl CompatWarning {
    /// A warning about a translation from `from`.
    pub fn new(from: &'static str, message: impl Into<String>) -> Self {
        CompatWarning {
            from,
            message: message.into(),
        }
    }
}

/// Translates `THINKING_*` events into their `REASONING_*` equivalents, one stream at a
/// time (it remembers the open span and message ids).
pub struct ThinkingTranslator {
    span_id: Option<String>,
    message_id: Option<String>,
    mint: Box<dyn FnMut() -> String + Send>,
}

impl std::fmt::Debug for ThinkingTranslator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThinkingTranslator")
            .field("span_id", &self.span_id)
            .field("message_id", &self.message_id)
            .finish_non_exhaustive()
    }
}

impl Default for ThinkingTranslator {
    fn default() -> Self {
        Self::new()
    }
}

impl ThinkingTranslator {
    /// A translator that mints random ids spelled as UUIDs (version 4 layout; random
    /// enough to be unique in a stream, not secret).
    pub fn new() -> Self {
        Self::with_id_minter(random_id)
    }

    /// A translator with its own id minter (deterministic ids for tests).
    pub fn with_id_minter(mint: impl FnMut() -> String + Send + 'static) -> Self {
        ThinkingTranslator {
            span_id: None,
            message_id: None,
            mint: Box::new(mint),
        }
    }

    fn continuation(
        &mut self,
        from: &'static str,
        current: Option<String>,
        warnings: &mut Vec<CompatWarning>,
    ) -> String {
        match current {
            Some(id) => id,
            None => {
                let id = (self.mint)();
                warnings.push(CompatWarning {
                    from,
                    message: format!(
                        "minted messageId '{id}' for {from}: no THINKING opener preceded it, so verification will reject the translated event"
                    ),
                });
                id
            }
        }
    }

    /// Translates `event` in place when its `type` is a `THINKING_*` name and returns
    /// what changed; returns an empty list and leaves other events untouched.
    pub fn translate(&mut self, event: &mut JsonObject) -> Vec<CompatWarning> {
        let Some(Value::String(ty)) = event.get("type") else {
            return Vec::new();
        };
        let Some(&from) = THINKING_TYPES.iter().find(|t| **t == ty.as_str()) else {
            return Vec::new();
        };
        let mut warnings = Vec::new();
        let (to, id) = match from {
            "THINKING_START" => {
                let id = (self.mint)();
                self.span_id = Some(id.clone());
                if let Some(title) = event.shift_remove("title") {
                    warnings.push(CompatWarning {
                        from,
                        message: format!(
                            "dropped THINKING_START.title {title}: REASONING_START has no title"
                        ),
                    });
                }
                ("REASONING_START", id)
            }
            "THINKING_TEXT_MESSAGE_START" => {
                let id = (self.mint)();
                self.message_id = Some(id.clone());
                event.insert("role".into(), Value::String("reasoning".into()));
                ("REASONING_MESSAGE_START", id)
            }
            "THINKING_TEXT_MESSAGE_CONTENT" => {
                let cur = self.message_id.clone();
                (
                    "REASONING_MESSAGE_CONTENT",
                    self.continuation(from, cur, &mut warnings),
                )
            }
            "THINKING_TEXT_MESSAGE_END" => {
                let cur = self.message_id.take();
                (
                    "REASONING_MESSAGE_END",
                    self.continuation(from, cur, &mut warnings),
                )
            }
            _ => {
                let cur = self.span_id.take();
                ("REASONING_END", self.continuation(from, cur, &mut warnings))
            }
        };
        event.insert("type".into(), Value::String(to.into()));
        event.insert("messageId".into(), Value::String(id));
        warnings.insert(
            0,
            CompatWarning {
                from,
                message: format!(
                    "converted the deprecated {from} to {to}; the producer should send {to}"
                ),
            },
        );
        #[cfg(feature = "tracing")]
        for w in &warnings {
            log_warn!(from = w.from, "{}", w.message);
        }
        warnings
    }
}

/// 128 random bits spelled as a version 4 UUID. The bits come from the standard
/// library's per-process random hash keys and a counter, so that the core needs no
/// random-number crate: unique within a process and unpredictable across processes,
/// which is all a minted message id needs.
fn random_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let half = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_u64(salt);
        h.finish()
    };
    let (hi, lo) = (half(0), half(1));
    let hi = (hi & !0xf000) | 0x4000; // version 4
    let lo = (lo & !(0xc << 60)) | (0x8 << 60); // RFC 4122 variant
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod id_tests {
    #[test]
    fn minted_ids_are_uuid_shaped_and_distinct() {
        let ids: Vec<String> = (0..1000).map(|_| super::random_id()).collect();
        for id in &ids {
            let parts: Vec<&str> = id.split('-').collect();
            let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
            assert_eq!(lens, [8, 4, 4, 4, 12], "{id}");
            assert!(parts[2].starts_with('4'), "{id}");
            assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{id}");
            assert!(
                id.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()),
                "{id}"
            );
        }
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
    }
}
