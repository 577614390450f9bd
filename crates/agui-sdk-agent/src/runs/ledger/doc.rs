//! A thread's ledger document and the rules over it, without I/O: what a resume must
//! answer, the claim, settling and releasing it, effects.

use std::collections::{BTreeMap, HashSet, VecDeque};

use agui_sdk_core::semantics::interrupts::is_interrupt_expired_at;
use agui_sdk_core::{Interrupt, ResumeEntry, ResumeStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::session::Refusal;
use super::InterruptPolicy;
use crate::interrupts::{Answer, Effect};

/// A thread's entry in the ledger.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Doc {
    /// The open interrupts, in the order the paused run raised them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<Interrupt>,
    /// The run answering them, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    /// What attempts recorded of the answers' effects: `null` started, else the result.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub effects: BTreeMap<String, Option<String>>,
    /// The ids of interrupts answered by runs that succeeded, oldest first.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub answered: VecDeque<String>,
}

/// A resumed run's claim on the open interrupts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claim {
    /// The claiming attempt.
    pub by: String,
    /// When the claim lapses, milliseconds since the Unix epoch.
    pub until: u64,
    /// The interrupts it answers.
    pub ids: Vec<String>,
}

impl Doc {
    fn live_claim(&self, now: u64) -> Option<&Claim> {
        self.claim.as_ref().filter(|c| c.until > now)
    }
}

/// Checks `resume` against the thread's `doc` at `now` (ms). `Ok(None)`: nothing to
/// claim (no interrupt open that has not expired, no answer); `Ok(Some(answers))`: the
/// answers, one per open interrupt answered, in the interrupts' order.
pub(crate) fn check(
    doc: Option<&Doc>,
    resume: &[ResumeEntry],
    now: u64,
) -> Result<Option<Vec<Answer>>, Refusal> {
    let mut seen = HashSet::new();
    for entry in resume {
        if !seen.insert(entry.interrupt_id.as_str()) {
            return Err(Refusal::Duplicate(entry.interrupt_id.clone()));
        }
    }
    let empty = Doc::default();
    let doc = doc.unwrap_or(&empty);
    let now_i = i64::try_from(now).unwrap_or(i64::MAX);
    let claim = doc.live_claim(now);
    for entry in resume {
        let id = entry.interrupt_id.as_str();
        match doc.open.iter().find(|i| i.id == id) {
            // An expired interrupt can only be declined (as a client that must answer
            // every pending one declines it); it cannot be resolved.
            Some(i)
                if is_interrupt_expired_at(i, now_i) && entry.status != ResumeStatus::Cancelled =>
            {
                return Err(Refusal::Expired(id.to_owned()))
            }
            Some(_) if claim.is_some() => {
                return Err(Refusal::Answered {
                    id: id.to_owned(),
                    in_progress: true,
                })
            }
            Some(_) => {}
            None if doc.answered.iter().any(|a| a == id) => {
                return Err(Refusal::Answered {
                    id: id.to_owned(),
                    in_progress: false,
                })
            }
            None => return Err(Refusal::Unknown(id.to_owned())),
        }
    }
    let missing: Vec<String> = doc
        .open
        .iter()
        .filter(|i| !is_interrupt_expired_at(i, now_i) && !seen.contains(i.id.as_str()))
        .map(|i| i.id.clone())
        .collect();
    if !missing.is_empty() {
        return Err(if resume.is_empty() {
            Refusal::ResumeRequired(missing)
        } else {
            Refusal::Unanswered(missing)
        });
    }
    if resume.is_empty() {
        return Ok(None);
    }
    let mut answers = Vec::with_capacity(resume.len());
    for interrupt in &doc.open {
        let Some(entry) = resume.iter().find(|e| e.interrupt_id == interrupt.id) else {
            continue;
        };
        let payload = entry.payload.as_ref().map(|p| p.to_value());
        if entry.status == ResumeStatus::Resolved {
            if let (Some(schema), Some(value)) = (&interrupt.response_schema, &payload) {
                check_payload(interrupt, schema, value)?;
            }
        }
        let effect = match doc.effects.get(&interrupt.id) {
            None => Effect::None,
            Some(None) => Effect::Started,
            Some(Some(result)) => Effect::Done(result.clone()),
        };
        answers.push(Answer::new(
            interrupt.clone(),
            entry.status,
            payload,
            effect,
        ));
    }
    Ok(Some(answers))
}

/// Checks a `resolved` payload against the interrupt's schema; the refusal names the
/// first failing path.
fn check_payload(
    interrupt: &Interrupt,
    schema: &agui_sdk_core::JsonObject,
    value: &Value,
) -> Result<(), Refusal> {
    let schema = Value::Object(schema.clone());
    let validator = jsonschema::validator_for(&schema).map_err(|e| Refusal::InvalidPayload {
        id: interrupt.id.clone(),
        path: String::new(),
        message: format!("the interrupt's responseSchema is not a usable JSON Schema: {e}"),
    })?;
    let first = validator
        .iter_errors(value)
        .next()
        .map(|e| Refusal::InvalidPayload {
            id: interrupt.id.clone(),
            path: e.instance_path().to_string(),
            message: e.to_string(),
        });
    first.map_or(Ok(()), Err)
}

/// Checks the interrupts a run raised before they are kept.
pub(crate) fn check_raised(
    interrupts: &[Interrupt],
    policy: &InterruptPolicy,
) -> Result<(), Refusal> {
    if interrupts.len() > policy.max_interrupts {
        return Err(Refusal::Invalid(format!(
            "the run raised {} interrupts, over the {} the runtime keeps",
            interrupts.len(),
            policy.max_interrupts
        )));
    }
    let mut seen = HashSet::new();
    for i in interrupts {
        if i.id.is_empty() {
            return Err(Refusal::Invalid("an interrupt has an empty id".into()));
        }
        if !seen.insert(i.id.as_str()) {
            return Err(Refusal::Invalid(format!(
                "two interrupts have the id '{}'",
                i.id
            )));
        }
        if let Some(schema) = &i.response_schema {
            if let Err(e) = jsonschema::validator_for(&Value::Object(schema.clone())) {
                return Err(Refusal::Invalid(format!(
                    "the responseSchema of interrupt '{}' is not a usable JSON Schema: {e}",
                    i.id
                )));
            }
        }
    }
    Ok(())
}

/// `doc` with the open set claimed by `by` until `until`.
pub(crate) fn claim(mut doc: Doc, by: &str, until: u64, ids: Vec<String>) -> Doc {
    doc.claim = Some(Claim {
        by: by.to_owned(),
        until,
        ids,
    });
    doc
}

/// The claim `by` holds, if it still holds one (lapsed but not taken is still held).
fn held<'a>(doc: &'a Doc, by: &str) -> Option<&'a Claim> {
    doc.claim.as_ref().filter(|c| c.by == by)
}

/// `doc` after the run `by` (which claimed answers, or `None` for a run that answered
/// nothing) ended without error, having raised `raised` (`None`: it did not pause).
pub(crate) fn settle(
    doc: Option<Doc>,
    by: Option<&str>,
    raised: Option<Vec<Interrupt>>,
    now: u64,
    policy: &InterruptPolicy,
) -> Result<Option<Doc>, Refusal> {
    let mut doc = doc.unwrap_or_default();
    if let Some(by) = by {
        let Some(claim) = held(&doc, by) else {
            // Another attempt took the answers over after this one's claim lapsed.
            return Err(Refusal::Answered {
                id: doc.open.first().map(|i| i.id.clone()).unwrap_or_default(),
                in_progress: doc.claim.is_some(),
            });
        };
        let ids = claim.ids.clone();
        doc.claim = None;
        doc.open.retain(|i| !ids.contains(&i.id));
        doc.effects.retain(|id, _| !ids.contains(id));
        doc.answered.extend(ids);
    } else if raised.is_none() {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        let before = doc.open.len();
        doc.open.retain(|i| !is_interrupt_expired_at(i, now));
        if doc.open.len() == before {
            return Ok(None);
        }
    }
    if let Some(raised) = raised {
        doc.answered.retain(|a| !raised.iter().any(|i| &i.id == a));
        doc.effects
            .retain(|id, _| raised.iter().any(|i| &i.id == id));
        doc.open = raised;
        // A pause replaces the open set; a claim on the old one (a run this one raced)
        // is void.
        doc.claim = None;
    }
    while doc.answered.len() > policy.max_answered_kept {
        doc.answered.pop_front();
    }
    Ok(Some(doc))
}

/// `doc` with the claim of `by` released; `None` when it holds none.
pub(crate) fn release(mut doc: Doc, by: &str) -> Option<Doc> {
    held(&doc, by)?;
    doc.claim = None;
    Some(doc)
}

/// `doc` with the claim of `by` renewed until `until`; `None` when it holds none.
pub(crate) fn renew(mut doc: Doc, by: &str, until: u64) -> Option<Doc> {
    held(&doc, by)?;
    if let Some(c) = doc.claim.as_mut() {
        c.until = until;
    }
    Some(doc)
}

/// `doc` with the effect of the answer to `id` recorded by `by` (`None`: started).
pub(crate) fn effect(
    mut doc: Doc,
    by: &str,
    id: &str,
    result: Option<String>,
) -> Result<Doc, Refusal> {
    match held(&doc, by) {
        Some(c) if c.ids.iter().any(|i| i == id) => {}
        Some(_) => return Err(Refusal::Unknown(id.to_owned())),
        None => {
            return Err(Refusal::Answered {
                id: id.to_owned(),
                in_progress: doc.claim.is_some(),
            })
        }
    }
    doc.effects.insert(id.to_owned(), result);
    Ok(doc)
}
