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
    /// A translator that mints random UUIDs.
    pub fn new() -> Self {
        Self::with_id_minter(|| uuid::Uuid::new_v4().to_string())
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
                message: format!("translated deprecated {from} into {to}"),
            },
        );
        for w in &warnings {
            tracing::warn!(from = w.from, "{}", w.message);
        }
        warnings
    }
}
