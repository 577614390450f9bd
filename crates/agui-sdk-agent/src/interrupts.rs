//! Interrupts from the agent's side: the answers a resumed run brings.
//!
//! A run pauses by finishing with an interrupt outcome
//! ([`Emitter::finish_with_interrupts`](crate::Emitter::finish_with_interrupts), or
//! [`interrupt_finished`](crate::builders::interrupt_finished) in a stream). The next
//! run on the thread answers them in `RunAgentInput.resume`. When the agent is served by
//! `agui-sdk-server`, the runtime keeps the open interrupts in its run store and checks
//! every resume before the agent sees the run (unknown, already answered, unanswered,
//! repeated or expired interrupts, and payloads that do not match the interrupt's
//! `responseSchema`, end the run with `RUN_ERROR`; see [`codes`]), so an agent reads
//! only answers that are valid, each matched to its interrupt:
//!
//! ```
//! use agui_sdk_agent::{agent_fn, AgentError};
//! use agui_sdk_agent::agui_sdk_core::Interrupt;
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize)]
//! struct Approval { approved: bool }
//!
//! let agent = agent_fn(|_input, ctx, emit| async move {
//!     if let Some(answer) = ctx.answers().get("send-email") {
//!         let approved = answer.parse::<Approval>()?.is_some_and(|a| a.approved);
//!         emit.text(if approved { "Sent." } else { "Not sent." }).await?;
//!         return Ok(());
//!     }
//!     let ask = Interrupt::new("send-email", "approval")
//!         .with_message("Send the email to the team?")
//!         .with_response_schema(json!({
//!             "type": "object",
//!             "properties": { "approved": { "type": "boolean" } },
//!             "required": ["approved"]
//!         }));
//!     emit.finish_with_interrupts(vec![ask]).await
//! });
//! # let _ = agent;
//! ```
//!
//! A side effect an approval allows (a tool that sends, pays, deletes) must happen at
//! most once even when the resumed run fails after it and the user sends the answer
//! again: [`Answers::begin_effect`] and [`Answers::record_effect`] keep its progress
//! with the open interrupt, and the next attempt reads it from [`Answer::effect`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agui_sdk_core::{Interrupt, ResumeStatus};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::AgentError;

/// The `code`s of the `RUN_ERROR` with which the runtime ends a run whose `resume`
/// does not answer the thread's open interrupts.
pub mod codes {
    /// An entry names an interrupt that is not open on the thread and never was (or
    /// was forgotten), or belongs to another owner's thread.
    pub const UNKNOWN: &str = "interrupt_unknown";
    /// An entry names an interrupt already answered by an earlier run that succeeded,
    /// or being answered by a run still in progress.
    pub const ANSWERED: &str = "interrupt_answered";
    /// An open interrupt has no entry in `resume`: every open interrupt must be
    /// answered at once.
    pub const UNANSWERED: &str = "interrupt_unanswered";
    /// The run has no `resume` while the thread has open interrupts.
    pub const RESUME_REQUIRED: &str = "interrupt_resume_required";
    /// Two entries answer the same interrupt.
    pub const DUPLICATE: &str = "interrupt_duplicate";
    /// An entry answers an interrupt whose `expiresAt` has passed.
    pub const EXPIRED: &str = "interrupt_expired";
    /// A `resolved` payload does not match the interrupt's `responseSchema`.
    pub const INVALID_PAYLOAD: &str = "interrupt_invalid_payload";
    /// The interrupts the agent raised cannot be kept: repeated or empty ids, more
    /// than the runtime keeps, a `responseSchema` that is not a JSON Schema.
    pub const INVALID_INTERRUPTS: &str = "interrupts_invalid";
    /// The interrupt ledger could not be read or written.
    pub const UNAVAILABLE: &str = "interrupts_unavailable";
}

/// What became of the side effect an answer allows, as recorded by an earlier attempt
/// of the resumed run (see [`Answers::begin_effect`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Effect {
    /// Nothing was recorded: no attempt started it.
    #[default]
    None,
    /// An attempt started it and did not record its end (it failed or its process
    /// died): whether it happened is unknown, and it must not be started again.
    Started,
    /// An attempt did it; its recorded result (JSON text).
    Done(String),
}

/// One interrupt and its answer, as the runtime checked it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    interrupt: Interrupt,
    status: ResumeStatus,
    payload: Option<Value>,
    effect: Effect,
}

impl Answer {
    /// An answer to `interrupt`.
    pub fn new(
        interrupt: Interrupt,
        status: ResumeStatus,
        payload: Option<Value>,
        effect: Effect,
    ) -> Self {
        Answer {
            interrupt,
            status,
            payload,
            effect,
        }
    }

    /// The interrupt answered, as the paused run raised it.
    pub fn interrupt(&self) -> &Interrupt {
        &self.interrupt
    }

    /// The interrupt's id.
    pub fn id(&self) -> &str {
        &self.interrupt.id
    }

    /// Resolved or cancelled.
    pub fn status(&self) -> ResumeStatus {
        self.status
    }

    /// Whether the answer is `resolved`.
    pub fn is_resolved(&self) -> bool {
        self.status == ResumeStatus::Resolved
    }

    /// The payload as sent (a `resolved` answer's has been checked against the
    /// interrupt's `responseSchema`).
    pub fn payload(&self) -> Option<&Value> {
        self.payload.as_ref()
    }

    /// The payload of a `resolved` answer as a `T`; `None` for a cancelled answer or a
    /// resolved one without payload. A payload that is not a `T` is an error naming the
    /// interrupt and what did not match.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<Option<T>, AgentError> {
        if !self.is_resolved() {
            return Ok(None);
        }
        let Some(payload) = &self.payload else {
            return Ok(None);
        };
        T::deserialize(payload).map(Some).map_err(|e| {
            AgentError::public(format!(
                "the answer to interrupt '{}' is not what the agent expects: {e}",
                self.interrupt.id
            ))
            .with_code(codes::INVALID_PAYLOAD)
        })
    }

    /// What an earlier attempt recorded of the effect this answer allows.
    pub fn effect(&self) -> &Effect {
        &self.effect
    }
}

/// A boxed future of an [`EffectLog`].
pub type EffectFuture<'a> = Pin<Box<dyn Future<Output = Result<(), AgentError>> + Send + 'a>>;

/// Where the progress of an answer's effect is kept: the runtime's interrupt ledger.
/// Implemented by the runtime; an agent uses it through [`Answers`].
pub trait EffectLog: Send + Sync + 'static {
    /// Records that the effect of the answer to `interrupt_id` starts.
    fn begin<'a>(&'a self, interrupt_id: &'a str) -> EffectFuture<'a>;
    /// Records the effect's result (JSON text).
    fn record<'a>(&'a self, interrupt_id: &'a str, result: String) -> EffectFuture<'a>;
}

/// The answers a resumed run brings, one per interrupt the paused run raised, in the
/// order it raised them: [`RunContext::answers`](crate::RunContext::answers). Empty
/// for a run that answers nothing.
#[derive(Clone, Default)]
pub struct Answers {
    /// `None` for none (a run that answers nothing allocates nothing).
    list: Option<Arc<[Answer]>>,
    log: Option<Arc<dyn EffectLog>>,
}

impl fmt::Debug for Answers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answers")
            .field("list", &self.all())
            .field("effects_kept", &self.log.is_some())
            .finish()
    }
}

impl Answers {
    /// Answers checked by the runtime, whose effects `log` keeps.
    pub fn new(list: Vec<Answer>, log: Option<Arc<dyn EffectLog>>) -> Self {
        Answers {
            list: (!list.is_empty()).then(|| list.into()),
            log,
        }
    }

    /// Whether the run answers nothing.
    pub fn is_empty(&self) -> bool {
        self.all().is_empty()
    }

    fn all(&self) -> &[Answer] {
        self.list.as_deref().unwrap_or(&[])
    }

    /// How many interrupts the run answers.
    pub fn len(&self) -> usize {
        self.all().len()
    }

    /// Every answer, in the order the interrupts were raised.
    pub fn iter(&self) -> std::slice::Iter<'_, Answer> {
        self.all().iter()
    }

    /// The answer to the interrupt `id`.
    pub fn get(&self, id: &str) -> Option<&Answer> {
        self.all().iter().find(|a| a.interrupt.id == id)
    }

    /// The answer to the interrupt raised for the tool call `tool_call_id`.
    pub fn for_tool_call(&self, tool_call_id: &str) -> Option<&Answer> {
        self.all()
            .iter()
            .find(|a| a.interrupt.tool_call_id.as_deref() == Some(tool_call_id))
    }

    /// Records, before it starts, that the effect the answer to `interrupt_id` allows
    /// starts: an attempt that dies before [`record_effect`](Self::record_effect) leaves
    /// [`Effect::Started`] for the next one. Without a runtime that keeps interrupts (a
    /// run outside a server), it records nothing.
    pub async fn begin_effect(&self, interrupt_id: &str) -> Result<(), AgentError> {
        match &self.log {
            Some(log) => log.begin(interrupt_id).await,
            None => Ok(()),
        }
    }

    /// Records the effect's result (JSON text): a later attempt of the resumed run
    /// reads [`Effect::Done`] and does not do it again.
    pub async fn record_effect(
        &self,
        interrupt_id: &str,
        result: impl Into<String>,
    ) -> Result<(), AgentError> {
        match &self.log {
            Some(log) => log.record(interrupt_id, result.into()).await,
            None => Ok(()),
        }
    }
}

impl<'a> IntoIterator for &'a Answers {
    type Item = &'a Answer;
    type IntoIter = std::slice::Iter<'a, Answer>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
