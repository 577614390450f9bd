//! The first half of the inbound pipeline: raw frames to typed, enforced, expanded events.

use serde_json::Value;

use super::era::IncomingEra;
use super::{InboundConfig, InboundError, InboundWarning, WarningKind};
use crate::compat::ThinkingTranslator;
use crate::event::Event;
use crate::semantics::enforce::enforce_event_into;
use crate::semantics::{ChunkExpander, EnforceError};
use crate::wire::de::UnknownKeys;
use crate::wire::JsonError;

/// Raw frames in, typed events out: compatibility translation, the era shims and the
/// peer's version check, enforcement, then chunk expansion. Sans-io: feed it one frame
/// at a time. Its output is what a client's middleware sees; [`Settle`](super::Settle)
/// takes it from there.
#[derive(Debug)]
pub struct Intake {
    enforce: bool,
    thinking: Option<ThinkingTranslator>,
    expander: Option<ChunkExpander>,
    era: IncomingEra,
    index: u64,
}

impl Default for Intake {
    fn default() -> Self {
        Self::new(InboundConfig::default())
    }
}

impl Intake {
    /// An intake with these stages.
    pub fn new(config: InboundConfig) -> Self {
        Intake {
            enforce: config.enforce,
            thinking: config.compat.then(ThinkingTranslator::new),
            expander: config.expand_chunks.then(ChunkExpander::new),
            era: IncomingEra::new(&config.max_protocol_version),
            index: 0,
        }
    }

    /// Uses this translator for `THINKING_*` events (deterministic ids in tests).
    pub fn with_translator(mut self, translator: ThinkingTranslator) -> Self {
        self.thinking = Some(translator);
        self
    }

    /// Raw events taken in so far (dropped ones included).
    pub fn events_seen(&self) -> u64 {
        self.index
    }

    /// Takes one event's JSON, appending what it yields to `out` (nothing when it is
    /// rejected). The typed decoder reads it directly; only when it meets
    /// material it cannot take as it is (an unknown key, tag or type, a deprecated
    /// event) is the frame parsed as a JSON value for translation and enforcement.
    #[inline]
    pub fn push_json(
        &mut self,
        data: &[u8],
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        let index = self.next_index();
        let mark = UnknownKeys::start();
        let decoded = Event::from_json_slice(data);
        let unknown = mark.finish();
        match decoded {
            Ok(event) if !unknown || !self.enforce => self.accept(index, event, out, warnings),
            Err(e) if !self.enforce => Err(malformed(index, event_type_of(data), e)),
            decoded => {
                let value = match serde_json::from_slice::<Value>(data) {
                    Ok(v) => v,
                    // Not JSON at all: the typed decoder's error says where, when it has one.
                    Err(e) => {
                        let e = match decoded {
                            Err(typed) => typed,
                            Ok(_) => JsonError::new(e, String::new()),
                        };
                        return Err(malformed(index, "event".to_owned(), e));
                    }
                };
                self.raw(index, value, out, warnings)
            }
        }
    }

    /// Takes one event given as a JSON value.
    pub fn push_value(
        &mut self,
        value: Value,
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        let index = self.next_index();
        if self.enforce {
            return self.raw(index, value, out, warnings);
        }
        let ty = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("undefined")
            .to_owned();
        let event =
            crate::wire::from_json_value::<Event>(&value).map_err(|e| malformed(index, ty, e))?;
        self.accept(index, event, out, warnings)
    }

    /// Takes one event already typed (decoded from protobuf, or produced in process):
    /// it skips translation and enforcement, and goes through the era shims, the
    /// version check and expansion.
    #[inline]
    pub fn push_event(
        &mut self,
        event: Event,
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        let index = self.next_index();
        self.accept(index, event, out, warnings)
    }

    #[inline]
    fn next_index(&mut self) -> u64 {
        let i = self.index;
        self.index += 1;
        i
    }

    /// The slow path: translation and enforcement over the JSON value.
    fn raw(
        &mut self,
        index: u64,
        mut value: Value,
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        if let (Some(t), Value::Object(o)) = (&mut self.thinking, &mut value) {
            // The translator's first warning says what it converted: one per event.
            for w in t.translate(o) {
                warnings.push(InboundWarning::new(index, WarningKind::Compat(w)));
            }
        }
        let mut removed = Vec::new();
        let enforced = enforce_event_into(value, &mut removed);
        // What was stripped is reported even when the event is then rejected.
        warnings.extend(
            removed
                .into_iter()
                .map(|w| InboundWarning::new(index, WarningKind::Enforce(w))),
        );
        match enforced {
            Ok(Some(event)) => self.accept(index, event, out, warnings),
            Ok(None) => Ok(()),
            Err(source) => Err(InboundError::Malformed {
                index,
                source: Box::new(source),
            }),
        }
    }

    #[inline]
    fn accept(
        &mut self,
        index: u64,
        mut event: Event,
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        let Some(x) = &mut self.expander else {
            // Adapted in place, where it is delivered (an event is large: no extra move).
            out.push(event);
            if let Some(last) = out.last_mut() {
                if !self.era.incoming(index, last, warnings) {
                    out.pop();
                }
            }
            return Ok(());
        };
        if !self.era.incoming(index, &mut event, warnings) {
            return Ok(());
        }
        let start = out.len();
        x.push(event, out).map_err(|source| {
            // Nothing of a rejected event is delivered (not even the closing events the
            // expander produced on its way to the error).
            out.truncate(start);
            InboundError::Chunk {
                index,
                source: Box::new(source),
            }
        })
    }
}

fn malformed(index: u64, event_type: String, source: JsonError) -> InboundError {
    InboundError::Malformed {
        index,
        source: Box::new(EnforceError { event_type, source }),
    }
}

/// The event type named in a frame, for error messages (cheap: a raw scan of `type`).
fn event_type_of(data: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Tagged<'a> {
        #[serde(rename = "type", borrow)]
        ty: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Tagged<'_>>(data)
        .ok()
        .and_then(|t| t.ty.map(|t| t.into_owned()))
        .unwrap_or_else(|| "event".to_owned())
}
