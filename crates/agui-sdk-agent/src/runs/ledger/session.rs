//! The ledger's rules applied over a store: [`Interrupts`] checks and claims a run's
//! answers, and the run's [`Session`] settles or releases them.

use std::sync::{Arc, Mutex};

use agui_sdk_core::{Interrupt, RunAgentInput};

use super::doc::{self, Doc};
use super::{InterruptKey, InterruptLedger, InterruptPolicy, LedgerEntry};
use crate::agent::{Agent, AgentStream};
use crate::context::RunContext;
use crate::error::AgentError;
use crate::interrupts::{codes, Answers, EffectFuture, EffectLog};
use crate::runs::{now_ms, RunStoreError};

/// Why a run's interrupts were refused: each is a `RUN_ERROR` with its
/// [`code`](Self::code) and a message saying what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// `resume` names an interrupt that is not open on the thread.
    #[error("resume answers interrupt '{0}', which is not open on this thread")]
    Unknown(String),
    /// `resume` names an interrupt already answered, or being answered by another run.
    #[error("interrupt '{id}' {}", if *in_progress { "is being answered by another run of this thread" } else { "was already answered by an earlier run" })]
    Answered {
        /// The interrupt.
        id: String,
        /// Whether the run answering it is still going on.
        in_progress: bool,
    },
    /// Open interrupts the resume does not answer.
    #[error("interrupt {} is still unanswered: every open interrupt must be answered at once", quoted(.0))]
    Unanswered(Vec<String>),
    /// A run without `resume` on a thread with open interrupts.
    #[error("the thread is paused on interrupt {}: continue it with a run whose `resume` answers them (status resolved or cancelled)", quoted(.0))]
    ResumeRequired(Vec<String>),
    /// Two entries answer the same interrupt.
    #[error("resume answers interrupt '{0}' twice")]
    Duplicate(String),
    /// An entry resolves an expired interrupt (one can only be cancelled).
    #[error("interrupt '{0}' has expired (its expiresAt has passed): it can only be cancelled")]
    Expired(String),
    /// A `resolved` payload does not match the interrupt's `responseSchema`.
    #[error(
        "the answer to interrupt '{id}' does not match its responseSchema at '{path}': {message}"
    )]
    InvalidPayload {
        /// The interrupt.
        id: String,
        /// The JSON Pointer of the failing part of the payload (empty: the whole).
        path: String,
        /// What failed.
        message: String,
    },
    /// The run raised interrupts the runtime cannot keep.
    #[error("{0}")]
    Invalid(String),
    /// The ledger could not be read or written.
    #[error("the interrupt ledger is unavailable: {0}")]
    Unavailable(String),
}

fn quoted(ids: &[String]) -> String {
    ids.iter()
        .map(|i| format!("'{i}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Refusal {
    /// The `RUN_ERROR` code ([`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Unknown(_) => codes::UNKNOWN,
            Refusal::Answered { .. } => codes::ANSWERED,
            Refusal::Unanswered(_) => codes::UNANSWERED,
            Refusal::ResumeRequired(_) => codes::RESUME_REQUIRED,
            Refusal::Duplicate(_) => codes::DUPLICATE,
            Refusal::Expired(_) => codes::EXPIRED,
            Refusal::InvalidPayload { .. } => codes::INVALID_PAYLOAD,
            Refusal::Invalid(_) => codes::INVALID_INTERRUPTS,
            Refusal::Unavailable(_) => codes::UNAVAILABLE,
        }
    }

    /// The refusal as the error that ends the run.
    pub fn into_error(self) -> AgentError {
        let code = self.code();
        AgentError::public(self.to_string()).with_code(code)
    }
}

impl From<RunStoreError> for Refusal {
    fn from(e: RunStoreError) -> Self {
        Refusal::Unavailable(e.to_string())
    }
}

/// The runtime's interrupts: a ledger and the policy over it. Cheap to clone.
#[derive(Clone)]
pub struct Interrupts {
    ledger: Arc<dyn InterruptLedger>,
    policy: InterruptPolicy,
}

impl std::fmt::Debug for Interrupts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupts")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// How many times an update is tried when other writers keep winning the swap.
const MAX_ATTEMPTS: usize = 16;

impl Interrupts {
    /// Interrupts kept in `ledger` under `policy`.
    pub fn new(ledger: Arc<dyn InterruptLedger>, policy: InterruptPolicy) -> Self {
        Interrupts { ledger, policy }
    }

    /// The policy.
    pub fn policy(&self) -> &InterruptPolicy {
        &self.policy
    }

    /// Runs `agent` on `input` behind the ledger's rules, on the thread `key`: the
    /// resume is checked (and the answers claimed) before the agent starts, reaching it
    /// as [`RunContext::answers`]; the answers are consumed when the run ends without
    /// error, and the interrupts it raised kept, before its terminal event goes out.
    pub fn run(
        &self,
        agent: Arc<dyn Agent>,
        key: InterruptKey,
        input: RunAgentInput,
        ctx: RunContext,
    ) -> AgentStream {
        super::gate::gated(self.clone(), agent, key, input, ctx)
    }

    /// Checks `input.resume` against the thread's open interrupts and claims them for
    /// this attempt: its session and the answers. One load, and one swap when there is
    /// something to claim.
    pub async fn begin(
        &self,
        key: InterruptKey,
        input: &RunAgentInput,
    ) -> Result<(Arc<Session>, Answers), Refusal> {
        self.begin_with(
            key,
            &input.run_id,
            input.resume.as_deref().unwrap_or_default(),
        )
        .await
    }

    /// [`begin`](Self::begin) for the run `run_id` answering `resume` (what it reads of
    /// the input, so that the run's whole input need not be held while it checks).
    pub async fn begin_with(
        &self,
        key: InterruptKey,
        run_id: &str,
        resume: &[agui_sdk_core::ResumeEntry],
    ) -> Result<(Arc<Session>, Answers), Refusal> {
        self.begin_owned(key, run_id.to_owned(), resume).await
    }

    /// [`begin_with`](Self::begin_with), keeping `run_id`.
    pub(crate) async fn begin_owned(
        &self,
        key: InterruptKey,
        run_id: String,
        resume: &[agui_sdk_core::ResumeEntry],
    ) -> Result<(Arc<Session>, Answers), Refusal> {
        let session = Arc::new(Session {
            interrupts: self.clone(),
            key,
            run_id,
            by: std::sync::OnceLock::new(),
            claimed: Mutex::new(false),
            cached: Mutex::new(None),
        });
        let mut answers = Vec::new();
        let claimed = session
            .update(|d| {
                let now = now_ms();
                match doc::check(d.as_ref(), resume, now)? {
                    None => Ok(None),
                    Some(list) => {
                        let ids = list.iter().map(|a| a.id().to_owned()).collect();
                        answers = list;
                        let until = now + self.policy.claim_ttl.as_millis() as u64;
                        Ok(Some(doc::claim(
                            d.unwrap_or_default(),
                            session.by(),
                            until,
                            ids,
                        )))
                    }
                }
            })
            .await?;
        *lock(&session.claimed) = claimed;
        let log: Arc<dyn EffectLog> = session.clone();
        Ok((
            session.clone(),
            Answers::new(answers, claimed.then_some(log)),
        ))
    }
}

/// One attempt's hold on its thread's interrupts.
pub struct Session {
    interrupts: Interrupts,
    key: InterruptKey,
    run_id: String,
    /// The attempt's name in a claim: made when it first claims (a run that answers
    /// nothing never pays for its random part).
    by: std::sync::OnceLock<String>,
    claimed: Mutex<bool>,
    /// The entry this session last read or wrote (or found absent): a swap expecting
    /// it saves a load.
    cached: Mutex<Option<Seen>>,
}

/// An entry as a session last saw it: its version and document, `None` when absent.
struct Seen {
    version: Option<u64>,
    doc: Option<Doc>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("key", &self.key)
            .field("by", &self.by.get())
            .field("claimed", &*lock(&self.claimed))
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    /// The attempt's name in a claim: its run id and a random part.
    fn by(&self) -> &str {
        self.by
            .get_or_init(|| format!("{}#{}", self.run_id, uuid::Uuid::new_v4().simple()))
    }

    /// Whether [`settle`](Self::settle) without interrupts raised has nothing to write:
    /// nothing was claimed and the thread had no entry when the run began.
    pub(crate) fn nothing_to_settle(&self) -> bool {
        !self.claimed() && matches!(&*lock(&self.cached), Some(Seen { doc: None, .. }))
    }

    /// Whether this attempt claimed answers.
    pub fn claimed(&self) -> bool {
        *lock(&self.claimed)
    }

    /// The run ended without error, having raised `raised` (`None`: it did not pause):
    /// its answers are consumed and `raised` becomes the thread's open set, in one
    /// swap. Fails with [`Refusal::Answered`] when another attempt took the answers
    /// over, [`Refusal::Invalid`] for interrupts that cannot be kept.
    pub async fn settle(&self, raised: Option<Vec<Interrupt>>) -> Result<(), Refusal> {
        let policy = &self.interrupts.policy;
        if let Some(raised) = &raised {
            doc::check_raised(raised, policy)?;
        }
        let by = self.claimed().then(|| self.by());
        let absent = matches!(&*lock(&self.cached), Some(Seen { doc: None, .. }));
        if by.is_none() && raised.is_none() && absent {
            // Nothing was claimed, nothing raised, and nothing was open when the run
            // began (the load found no entry): nothing to write.
            return Ok(());
        }
        self.update(|d| doc::settle(d, by, raised.clone(), now_ms(), policy))
            .await?;
        *lock(&self.claimed) = false;
        Ok(())
    }

    /// The run failed (or was stopped, or lost its client): its claim is released and
    /// the same answers can be sent again.
    pub async fn release(&self) {
        if !self.claimed() {
            return;
        }
        let by = self.by().to_owned();
        match self
            .update(|d| Ok(d.and_then(|d| doc::release(d, &by))))
            .await
        {
            Ok(_) => *lock(&self.claimed) = false,
            Err(e) => {
                tracing::warn!(error = %e, "could not release the run's interrupt claim: it lapses on its own")
            }
        }
    }

    /// Renews the claim (the run goes on).
    pub async fn renew(&self) -> Result<(), Refusal> {
        if !self.claimed() {
            return Ok(());
        }
        let until = now_ms() + self.interrupts.policy.claim_ttl.as_millis() as u64;
        let by = self.by().to_owned();
        self.update(|d| Ok(d.and_then(|d| doc::renew(d, &by, until))))
            .await
            .map(|_| ())
    }

    async fn effect(&self, id: &str, result: Option<String>) -> Result<(), Refusal> {
        let by = self.by().to_owned();
        self.update(|d| {
            let d = d.ok_or_else(|| Refusal::Answered {
                id: id.to_owned(),
                in_progress: false,
            })?;
            doc::effect(d, &by, id, result.clone()).map(Some)
        })
        .await
        .map(|_| ())
    }

    /// Applies `f` to the thread's document and swaps the result in (`Ok(None)` from
    /// `f`: nothing to write), retrying when another writer won. Whether it wrote.
    async fn update<F>(&self, mut f: F) -> Result<bool, Refusal>
    where
        F: FnMut(Option<Doc>) -> Result<Option<Doc>, Refusal>,
    {
        let ledger = &self.interrupts.ledger;
        let policy = &self.interrupts.policy;
        for _ in 0..MAX_ATTEMPTS {
            let cached = lock(&self.cached).take();
            let (version, current) = match cached {
                Some(seen) => (seen.version, seen.doc),
                None => match ledger.load(&self.key).await? {
                    Some(entry) => {
                        let d: Doc = serde_json::from_slice(&entry.doc).map_err(|e| {
                            Refusal::Unavailable(format!(
                                "the thread's interrupt entry is unreadable: {e}"
                            ))
                        })?;
                        (Some(entry.version), Some(d))
                    }
                    None => (None, None),
                },
            };
            let Some(next) = f(current.clone())? else {
                *lock(&self.cached) = Some(Seen {
                    version,
                    doc: current,
                });
                return Ok(false);
            };
            let mut bytes = Vec::with_capacity(256);
            agui_sdk_core::wire::write_canonical_to(&next, &mut bytes)
                .map_err(|e| Refusal::Unavailable(format!("cannot write the entry: {e}")))?;
            if bytes.len() > policy.max_entry_bytes {
                return Err(Refusal::Invalid(format!(
                    "the thread's interrupts would take {} bytes, over the {} the runtime keeps per thread",
                    bytes.len(),
                    policy.max_entry_bytes
                )));
            }
            let new_version = uuid::Uuid::new_v4().as_u64_pair().0;
            let entry = LedgerEntry {
                version: new_version,
                doc: bytes.into(),
            };
            if ledger
                .swap(&self.key, version, entry, policy.keep_for)
                .await?
            {
                *lock(&self.cached) = Some(Seen {
                    version: Some(new_version),
                    doc: Some(next),
                });
                return Ok(true);
            }
        }
        Err(Refusal::Unavailable(format!(
            "{MAX_ATTEMPTS} attempts to update the thread's interrupts lost to other writers"
        )))
    }
}

impl EffectLog for Session {
    fn begin<'a>(&'a self, interrupt_id: &'a str) -> EffectFuture<'a> {
        Box::pin(async move {
            self.effect(interrupt_id, None)
                .await
                .map_err(Refusal::into_error)
        })
    }

    fn record<'a>(&'a self, interrupt_id: &'a str, result: String) -> EffectFuture<'a> {
        Box::pin(async move {
            self.effect(interrupt_id, Some(result))
                .await
                .map_err(Refusal::into_error)
        })
    }
}
