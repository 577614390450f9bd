//! The reference client's inbound processing, in its order: compatibility translation
//! of the deprecated `THINKING_*` events (optional), enforcement, chunk expansion,
//! verification. Fed raw JSON events one at a time; sans-io.

use serde_json::Value;

use super::{
    enforce_event, ChunkError, ChunkExpander, EnforceError, EnforceWarning, Verifier, VerifyError,
};
use crate::compat::{CompatWarning, ThinkingTranslator};
use crate::event::Event;

/// Something the pipeline changed or dropped (also logged through `tracing`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PipelineWarning {
    /// A deprecated event was translated.
    Compat(CompatWarning),
    /// Enforcement removed material or dropped an event.
    Enforce(EnforceWarning),
}

/// Why the pipeline stopped (the reference errors the run).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// A known field is malformed.
    #[error("event {index}: {source}")]
    Enforce {
        /// Index of the raw event.
        index: usize,
        /// The validation failure.
        source: Box<EnforceError>,
    },
    /// Chunk expansion failed.
    #[error("event {index}: {}", .source.rule)]
    Chunk {
        /// Index of the raw event.
        index: usize,
        /// The expansion failure.
        source: Box<ChunkError>,
    },
    /// The expanded stream broke a lifecycle rule.
    #[error("event {index}: {}", .source.rule)]
    Verify {
        /// Index of the raw event that produced the offending event.
        index: usize,
        /// The verification failure (its own index counts expanded events).
        source: Box<VerifyError>,
    },
}

/// Inbound processing of one stream.
#[derive(Debug, Default)]
pub struct IncomingPipeline {
    compat: Option<ThinkingTranslator>,
    expander: ChunkExpander,
    verifier: Verifier,
    index: usize,
    scratch: Vec<Event>,
}

impl IncomingPipeline {
    /// A pipeline without compatibility translation (`THINKING_*` events are dropped by
    /// enforcement as unknown types).
    pub fn new() -> Self {
        Self::default()
    }

    /// A pipeline that first translates `THINKING_*` events into `REASONING_*`, as
    /// the reference client's compatibility boundary does.
    pub fn with_compat(translator: ThinkingTranslator) -> Self {
        IncomingPipeline {
            compat: Some(translator),
            ..Self::default()
        }
    }

    /// Processes one raw event; verified events are appended to `out`.
    pub fn push(
        &mut self,
        mut raw: Value,
        out: &mut Vec<Event>,
        warnings: &mut Vec<PipelineWarning>,
    ) -> Result<(), PipelineError> {
        let index = self.index;
        self.index += 1;
        if let (Some(t), Value::Object(o)) = (&mut self.compat, &mut raw) {
            for w in t.translate(o) {
                tracing::warn!(from = w.from, message = %w.message, "translated a deprecated event");
                warnings.push(PipelineWarning::Compat(w));
            }
        }
        let enforced = enforce_event(raw).map_err(|source| PipelineError::Enforce {
            index,
            source: Box::new(source),
        })?;
        warnings.extend(enforced.warnings.into_iter().map(PipelineWarning::Enforce));
        let Some(event) = enforced.event else {
            return Ok(());
        };
        self.expander
            .push(event, &mut self.scratch)
            .map_err(|source| PipelineError::Chunk {
                index,
                source: Box::new(source),
            })?;
        for e in self.scratch.drain(..) {
            self.verifier
                .push(&e)
                .map_err(|source| PipelineError::Verify {
                    index,
                    source: Box::new(source),
                })?;
            out.push(e);
        }
        Ok(())
    }
}
