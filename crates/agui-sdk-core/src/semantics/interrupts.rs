//! Interrupts: reading them from a run outcome, expiry, building the `resume` array
//! for the next run, and the check made before sending a run that continues a paused
//! thread.

use std::time::SystemTime;

use indexmap::IndexMap;

use crate::time::millis;
pub use crate::time::{format_iso8601_millis, parse_iso8601_millis};
use serde_json::Value;

use crate::event::RunFinished;
use crate::types::{Interrupt, ResumeEntry, ResumeStatus, RunFinishedOutcome};
use crate::JsonObject;

/// The outcome of a `RUN_FINISHED` (`None` means success).
pub fn run_outcome(event: &RunFinished) -> Option<&RunFinishedOutcome> {
    event.outcome.as_ref()
}

/// The interrupts a `RUN_FINISHED` leaves open (empty unless its outcome is an
/// interrupt).
pub fn open_interrupts(event: &RunFinished) -> &[Interrupt] {
    match &event.outcome {
        Some(RunFinishedOutcome::Interrupt(o)) => &o.interrupts,
        _ => &[],
    }
}

/// Whether an interrupt has expired at `now`: false without `expiresAt` or when it
/// does not parse (it then never expires); else `expiresAt <= now`.
pub fn is_interrupt_expired(interrupt: &Interrupt, now: SystemTime) -> bool {
    is_interrupt_expired_at(interrupt, millis(now))
}

/// [`is_interrupt_expired`] with `now` in milliseconds since the Unix epoch.
pub fn is_interrupt_expired_at(interrupt: &Interrupt, now_millis: i64) -> bool {
    interrupt
        .expires_at
        .as_deref()
        .and_then(parse_iso8601_millis)
        .is_some_and(|t| t <= now_millis)
}

/// The application's answer to one interrupt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResumeResponse {
    /// Resolved or cancelled.
    pub status: ResumeStatus,
    /// The answer (kept only for `resolved`).
    pub payload: Option<Value>,
    /// Envelope data.
    pub metadata: Option<JsonObject>,
}

/// Why a `resume` array cannot be built. The `Display` text is the reference's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    /// Open interrupts without a response.
    #[error("buildResumeArray: missing responses for open interrupts: {}", .0.join(", "))]
    Missing(Vec<String>),
    /// Responses naming no open interrupt.
    #[error("buildResumeArray: responses reference unknown interrupt ids: {}", .0.join(", "))]
    Unknown(Vec<String>),
}

/// Builds the `resume` array answering `interrupts` (one entry per interrupt, in
/// interrupt order). Every interrupt needs a response and every response must name an
/// interrupt. Responses are keyed by interrupt id; a repeated key keeps the last one.
pub fn build_resume_array<K: Into<String>>(
    interrupts: &[Interrupt],
    responses: impl IntoIterator<Item = (K, ResumeResponse)>,
) -> Result<Vec<ResumeEntry>, ResumeError> {
    let responses: IndexMap<String, ResumeResponse> =
        responses.into_iter().map(|(k, v)| (k.into(), v)).collect();
    let mut open: IndexMap<&str, ()> = IndexMap::new();
    for i in interrupts {
        open.insert(&i.id, ());
    }
    let missing: Vec<String> = open
        .keys()
        .filter(|id| !responses.contains_key(**id))
        .map(|s| (*s).to_owned())
        .collect();
    if !missing.is_empty() {
        return Err(ResumeError::Missing(missing));
    }
    let unknown: Vec<String> = responses
        .keys()
        .filter(|id| !open.contains_key(id.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(ResumeError::Unknown(unknown));
    }
    Ok(interrupts
        .iter()
        .filter_map(|i| {
            let r = responses.get(&i.id)?;
            Some(ResumeEntry {
                interrupt_id: i.id.clone(),
                status: r.status,
                payload: match r.status {
                    ResumeStatus::Resolved => r.payload.as_ref().map(crate::JsonText::from),
                    ResumeStatus::Cancelled => None,
                },
                metadata: r.metadata.clone().map(Into::into),
                ..ResumeEntry::wire_blank()
            })
        })
        .collect())
}

/// Why a run may not be sent while interrupts are pending. The `Display` text is the
/// reference's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeCheckError {
    /// Pending interrupts the input's `resume` does not answer.
    #[error("Thread has {} pending interrupt(s) not addressed by resume: {}", .0.len(), .0.join(", "))]
    Uncovered(Vec<String>),
    /// An expired interrupt answered with anything but `cancelled`.
    #[error("Interrupt {id} expired at {expires_at} and can no longer be answered. Cancel it to continue the thread.")]
    Expired {
        /// The interrupt.
        id: String,
        /// Its `expiresAt`.
        expires_at: String,
    },
}

/// The check the reference client makes before starting a run: every pending
/// interrupt must be answered by `resume`, and an expired one only by `cancelled`.
pub fn check_resume(
    pending: &[Interrupt],
    resume: Option<&[ResumeEntry]>,
    now: SystemTime,
) -> Result<(), ResumeCheckError> {
    if pending.is_empty() {
        return Ok(());
    }
    let resume = resume.unwrap_or(&[]);
    let uncovered: Vec<String> = pending
        .iter()
        .filter(|i| !resume.iter().any(|r| r.interrupt_id == i.id))
        .map(|i| i.id.clone())
        .collect();
    if !uncovered.is_empty() {
        return Err(ResumeCheckError::Uncovered(uncovered));
    }
    let now = millis(now);
    for i in pending {
        if !is_interrupt_expired_at(i, now) {
            continue;
        }
        let entry = resume.iter().find(|r| r.interrupt_id == i.id);
        if !matches!(entry, Some(r) if r.status == ResumeStatus::Cancelled) {
            return Err(ResumeCheckError::Expired {
                id: i.id.clone(),
                expires_at: i.expires_at.clone().unwrap_or_default(),
            });
        }
    }
    Ok(())
}
