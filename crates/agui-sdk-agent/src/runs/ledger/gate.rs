//! An agent's run behind the ledger's rules: [`gated`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use agui_sdk_core::{Event, Interrupt, RunAgentInput, RunFinishedOutcome};
use futures_util::{Stream, StreamExt};

use super::session::{Interrupts, Refusal, Session};
use super::InterruptKey;
use crate::agent::{Agent, AgentStream};
use crate::context::RunContext;
use crate::error::AgentError;
use crate::interrupts::Answers;

type Begin = Pin<Box<dyn Future<Output = Result<(Arc<Session>, Answers), Refusal>> + Send>>;
type Settle = Pin<Box<dyn Future<Output = Result<(), Refusal>> + Send>>;

// The input is held inline: the state lives in the run's one boxed stream, and a box of
// its own would cost every run an allocation.
#[allow(clippy::large_enum_variant)]
enum State {
    /// Checking and claiming the answers.
    Begin {
        fut: Begin,
        agent: Arc<dyn Agent>,
        input: RunAgentInput,
    },
    /// The agent runs.
    Running,
    /// Settling the ledger before `then` (a `RUN_FINISHED`; `None`: the end of the
    /// agent's stream) goes out.
    Settle {
        fut: Settle,
        then: Option<Box<Event>>,
    },
    /// Nothing to settle: `then` goes out as it is.
    Settled(Option<Box<Event>>),
    /// The run's end went out: what else the agent sends passes as it is (the
    /// lifecycle guard refuses it).
    Ended,
}

struct Gated {
    state: State,
    inner: Option<AgentStream>,
    session: Option<Arc<Session>>,
    ctx: RunContext,
    /// How often the claim is renewed while the run goes on.
    period: std::time::Duration,
    /// Its timer, from the first time the run holds a claim.
    renew_every: Option<tokio::time::Interval>,
    renewing: Option<Settle>,
}

/// `agent`'s run on `input` behind the ledger's rules (see [`Interrupts::run`]).
pub(super) fn gated(
    interrupts: Interrupts,
    agent: Arc<dyn Agent>,
    key: InterruptKey,
    input: RunAgentInput,
    ctx: RunContext,
) -> AgentStream {
    let period = interrupts.policy().claim_ttl / 3;
    // Only what the check reads is held by it: a clone of the whole input would double
    // what a run's request costs while it is checked.
    let run_id = input.run_id.clone();
    let resume = input.resume.clone().unwrap_or_default();
    let fut: Begin = Box::pin(async move { interrupts.begin_owned(key, run_id, &resume).await });
    Box::pin(Gated {
        state: State::Begin { fut, agent, input },
        inner: None,
        session: None,
        ctx,
        period,
        renew_every: None,
        renewing: None,
    })
}

impl Gated {
    /// The interrupts a `RUN_FINISHED` leaves open, `Err` for a cancelled one.
    fn raised(event: &Event) -> Option<Result<Option<Vec<Interrupt>>, ()>> {
        let Event::RunFinished(f) = event else {
            return None;
        };
        Some(match &f.outcome {
            Some(RunFinishedOutcome::Interrupt(o)) => Ok(Some(o.interrupts.clone())),
            Some(RunFinishedOutcome::Cancelled(_)) => Err(()),
            _ => Ok(None),
        })
    }

    fn settle(&mut self, raised: Option<Vec<Interrupt>>, then: Option<Box<Event>>) {
        if raised.is_none() && self.session.as_ref().is_none_or(|s| s.nothing_to_settle()) {
            // The common run: nothing claimed, nothing raised, nothing open.
            self.session = None;
            self.state = State::Settled(then);
            return;
        }
        let session = self.session.clone();
        let fut: Settle = Box::pin(async move {
            match session {
                Some(s) => s.settle(raised).await,
                None => Ok(()),
            }
        });
        self.state = State::Settle { fut, then };
    }

    /// Releases the claim, in the background (the run failed).
    fn release(&mut self) {
        if let Some(session) = self.session.take() {
            if session.claimed() {
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move { session.release().await });
                }
            }
        }
    }

    fn poll_renew(&mut self, cx: &mut Context<'_>) {
        let Some(session) = self.session.as_ref().filter(|s| s.claimed()) else {
            return;
        };
        let period = self.period;
        let every = self.renew_every.get_or_insert_with(|| {
            let mut every = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            every
        });
        if self.renewing.is_none() && every.poll_tick(cx).is_ready() {
            let session = session.clone();
            self.renewing = Some(Box::pin(async move { session.renew().await }));
        }
        if let Some(fut) = self.renewing.as_mut() {
            if let Poll::Ready(r) = fut.as_mut().poll(cx) {
                self.renewing = None;
                if let Err(e) = r {
                    tracing::warn!(error = %e, "could not renew the run's interrupt claim");
                }
            }
        }
    }
}

impl Stream for Gated {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                State::Begin { fut, .. } => {
                    let r = match fut.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(r) => r,
                    };
                    let State::Begin { agent, input, .. } =
                        std::mem::replace(&mut this.state, State::Running)
                    else {
                        continue;
                    };
                    match r {
                        Ok((session, answers)) => {
                            if !answers.is_empty() {
                                tracing::debug!(answers = answers.len(), "resume checked");
                            }
                            this.ctx.set_answers(answers);
                            this.session = Some(session);
                            this.inner = Some(agent.run(input, this.ctx.clone()));
                        }
                        Err(refusal) => {
                            tracing::info!(code = refusal.code(), reason = %refusal, "resume refused");
                            this.state = State::Ended;
                            return Poll::Ready(Some(Err(refusal.into_error())));
                        }
                    }
                }
                State::Running => {
                    this.poll_renew(cx);
                    let Some(inner) = this.inner.as_mut() else {
                        return Poll::Ready(None);
                    };
                    match inner.poll_next_unpin(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Some(Ok(event))) => match Self::raised(&event) {
                            Some(Ok(raised)) => this.settle(raised, Some(Box::new(event))),
                            Some(Err(())) => {
                                this.release();
                                this.state = State::Ended;
                                return Poll::Ready(Some(Ok(event)));
                            }
                            None => {
                                if matches!(event, Event::RunError(_)) {
                                    this.release();
                                    this.state = State::Ended;
                                }
                                return Poll::Ready(Some(Ok(event)));
                            }
                        },
                        Poll::Ready(Some(Err(e))) => {
                            this.release();
                            this.state = State::Ended;
                            return Poll::Ready(Some(Err(e)));
                        }
                        // The agent ended without a terminal event: the run finishes
                        // as a success, so it settles as one.
                        Poll::Ready(None) => {
                            this.inner = None;
                            this.settle(None, None);
                        }
                    }
                }
                State::Settle { fut, .. } => {
                    let r = match fut.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(r) => r,
                    };
                    let State::Settle { then, .. } =
                        std::mem::replace(&mut this.state, State::Ended)
                    else {
                        continue;
                    };
                    match r {
                        Ok(()) => {
                            this.session = None;
                            return Poll::Ready(then.map(|e| Ok(*e)));
                        }
                        Err(refusal) => {
                            tracing::warn!(code = refusal.code(), reason = %refusal, "the run's interrupts could not be settled");
                            this.release();
                            return Poll::Ready(Some(Err(refusal.into_error())));
                        }
                    }
                }
                State::Settled(then) => {
                    let then = then.take();
                    this.state = State::Ended;
                    return Poll::Ready(then.map(|e| Ok(*e)));
                }
                State::Ended => {
                    return match this.inner.as_mut() {
                        Some(inner) => inner.poll_next_unpin(cx),
                        None => Poll::Ready(None),
                    };
                }
            }
        }
    }
}

impl Drop for Gated {
    fn drop(&mut self) {
        // Dropped before its end went out (a stop, a client gone, a panic, shutdown):
        // the answers stay open.
        self.release();
    }
}
