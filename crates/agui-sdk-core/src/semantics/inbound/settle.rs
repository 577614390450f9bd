//! The second half of the inbound pipeline: verification, then reduction.

use super::{InboundError, InboundWarning, WarningKind};
use crate::event::Event;
use crate::semantics::{Applied, Reducer, Verifier};

/// Expanded events in: verified against the lifecycle rules, then applied to the
/// conversation when a [`Reducer`] is held. A client's middleware sits just before it.
#[derive(Debug, Default)]
pub struct Settle {
    verifier: Option<Verifier>,
    reducer: Option<Reducer>,
    index: u64,
}

impl Settle {
    /// Verification on or off, with or without a reducer.
    pub fn new(verify: bool, reducer: Option<Reducer>) -> Self {
        Settle {
            verifier: verify.then(Verifier::new),
            reducer,
            index: 0,
        }
    }

    /// Every run on the stream must be on `thread_id` (the input's thread); without
    /// this, the first run's thread is the stream's. No effect without verification.
    pub fn expect_thread(mut self, thread_id: impl Into<String>) -> Self {
        if self.verifier.is_some() {
            self.verifier = Some(Verifier::for_thread(thread_id));
        }
        self
    }

    /// The end of the stream: [`InboundError::Unterminated`] when verification is on
    /// and a run is still open (its stream ended without a terminal event).
    pub fn finish(&self) -> Result<(), InboundError> {
        match &self.verifier {
            Some(v) => v.finish().map_err(|rule| InboundError::Unterminated {
                events: self.index,
                rule: Box::new(rule),
            }),
            None => Ok(()),
        }
    }

    /// The reducer, when held.
    pub fn reducer(&self) -> Option<&Reducer> {
        self.reducer.as_ref()
    }

    /// Takes the reducer out.
    pub fn into_reducer(self) -> Option<Reducer> {
        self.reducer
    }

    /// Events taken so far.
    pub fn events_seen(&self) -> u64 {
        self.index
    }

    /// Verifies `event` and applies it; returns what changed when a reducer is held.
    /// A warning of the reducer (a patch that does not apply) is appended to
    /// `warnings`; the event is still delivered.
    #[inline]
    pub fn push(
        &mut self,
        event: &Event,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<Option<Applied>, InboundError> {
        let index = self.verify(event)?;
        let Some(r) = &mut self.reducer else {
            return Ok(None);
        };
        let applied = r.apply(event)?;
        note(index, &applied, warnings);
        Ok(Some(applied))
    }

    /// As [`push`](Settle::push), taking the event (the reducer moves its content
    /// instead of copying it).
    #[inline]
    pub fn push_owned(
        &mut self,
        event: Event,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<Option<Applied>, InboundError> {
        let index = self.verify(&event)?;
        let Some(r) = &mut self.reducer else {
            return Ok(None);
        };
        let applied = r.apply_owned(event)?;
        note(index, &applied, warnings);
        Ok(Some(applied))
    }

    #[inline]
    fn verify(&mut self, event: &Event) -> Result<u64, InboundError> {
        let index = self.index;
        self.index += 1;
        if let Some(v) = &mut self.verifier {
            v.push(event)?;
        }
        Ok(index)
    }
}

fn note(index: u64, applied: &Applied, warnings: &mut Vec<InboundWarning>) {
    if let Some(w) = &applied.warning {
        warnings.push(InboundWarning::new(index, WarningKind::Apply(w.clone())));
    }
}
