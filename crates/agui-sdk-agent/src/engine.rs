//! The run engine: one agent run, driven from its first event to its terminal one.
//!
//! [`RunDriver`] is the one place where an agent's stream is read. Whatever consumes
//! the run (an HTTP response that streams it, a task that records it in a run log, a
//! test), the driver owns what every run needs:
//!
//! * the [`LifecycleGuard`]: `RUN_STARTED` first, exactly one terminal event last,
//!   protocol violations and verification;
//! * **panics**: a panic in the agent's stream becomes `RUN_ERROR` code `agent_panic`;
//! * **the shutdown grace period**: when the server's shutdown signal fires, the agent
//!   (whose context is a child of that signal) has the grace period to end; then the
//!   run ends with `RUN_ERROR` code `shutdown`;
//! * **cancellation**: [`cancel`](RunDriver::cancel) ends the run as a stopped one,
//!   [`abandon`](RunDriver::abandon) records that its consumer went away;
//! * **the end**: once the terminal event is out, the agent is dropped and its
//!   [`RunContext`] cancelled, so nothing it spawned keeps running.
//!
//! The driver does no I/O: it appends the events to send to a buffer the caller owns,
//! and the caller writes them wherever they go.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use agui_sdk_core::{Event, EventType, RunAgentInput};
use futures_util::StreamExt;
use tokio::time::Sleep;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::agent::{Agent, AgentStream};
use crate::context::RunContext;
use crate::error::AgentError;
use crate::lifecycle::{GuardFlow, LifecycleGuard};

/// The largest encoded event a run may send: what the decoders accept on input
/// (10 MiB), so that no client of this SDK (or of the reference SDKs, whose limit is
/// the same) is sent an event it refuses. See [`event_too_large`].
pub const MAX_OUTPUT_EVENT: usize = agui_sdk_core::encoding::DecoderLimits::DEFAULT_MAX_EVENT_SIZE;

/// The message of the results given to the tool calls a cancelled run left unanswered.
pub const STOP_MESSAGE: &str = "Run stopped by user";

/// The `RUN_ERROR` (code `event_too_large`) that ends a run whose agent emitted an event
/// of `size` bytes, over [`MAX_OUTPUT_EVENT`]; the event itself is not sent.
pub fn event_too_large(ty: EventType, size: usize) -> Event {
    let message = format!(
        "the agent emitted a {ty} event of {size} bytes, over the {MAX_OUTPUT_EVENT} a client accepts"
    );
    tracing::warn!(%message, "event too large: ending the run");
    let mut e = agui_sdk_core::event::RunError::new(message);
    e.code = Some("event_too_large".into());
    e.into()
}

/// What one step of a [`RunDriver`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Events may have been added; the run goes on.
    More,
    /// The run is over: its terminal event has been added (now or before).
    Ended,
}

/// Drives one run of an agent. See the [module docs](self).
pub struct RunDriver {
    agent: Option<AgentStream>,
    guard: LifecycleGuard,
    ctx: RunContext,
    shutdown: CancellationToken,
    /// Waiting for `shutdown`, from the first time the run has to wait (a run that
    /// ends in its first step never registers).
    shutdown_wait: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    grace: Duration,
    grace_timer: Option<Pin<Box<Sleep>>>,
}

impl std::fmt::Debug for RunDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunDriver")
            .field("guard", &self.guard)
            .field("reading", &self.agent.is_some())
            .field("grace", &self.grace)
            .field("shutting_down", &self.grace_timer.is_some())
            .finish_non_exhaustive()
    }
}

impl RunDriver {
    /// A driver of `agent`'s run, whose events pass through `guard`. `shutdown` is the
    /// server's shutdown signal (the parent of `ctx`'s); once it fires the agent has
    /// `grace` to end its stream.
    pub fn new(
        agent: AgentStream,
        guard: LifecycleGuard,
        ctx: RunContext,
        shutdown: &CancellationToken,
        grace: Duration,
    ) -> Self {
        RunDriver {
            agent: Some(agent),
            guard,
            ctx,
            shutdown: shutdown.clone(),
            shutdown_wait: None,
            grace,
            grace_timer: None,
        }
    }

    /// Starts `agent`'s run on `input` and drives it (see [`new`](Self::new)). A panic
    /// in the agent's `run` itself becomes the run's `RUN_ERROR` (code `agent_panic`).
    pub fn start(
        agent: &dyn Agent,
        input: RunAgentInput,
        guard: LifecycleGuard,
        ctx: RunContext,
        shutdown: &CancellationToken,
        grace: Duration,
    ) -> Self {
        let stream = match std::panic::catch_unwind(AssertUnwindSafe(|| {
            agent.run(input, ctx.clone())
        })) {
            Ok(stream) => stream,
            Err(panic) => {
                tracing::error!(panic = %crate::lifecycle::panic_message(&*panic), "agent panicked while starting the run");
                let err = AgentError::public("agent panicked").with_code("agent_panic");
                Box::pin(futures_util::stream::iter([Err(err)]))
            }
        };
        RunDriver::new(stream, guard, ctx, shutdown, grace)
    }

    /// Whether the run's terminal event has been produced.
    pub fn is_ended(&self) -> bool {
        self.guard.is_ended()
    }

    /// The run's lifecycle guard (what is open, what was sent).
    pub fn guard(&self) -> &LifecycleGuard {
        &self.guard
    }

    /// The run's context.
    pub fn context(&self) -> &RunContext {
        &self.ctx
    }

    /// Watches the shutdown signal: starts the grace period when it fires, and when the
    /// grace period is over ends the run (`RUN_ERROR` code `shutdown`, appended to
    /// `out`) and resolves.
    pub fn poll_shutdown(&mut self, cx: &mut Context<'_>, out: &mut Vec<Event>) -> Poll<()> {
        if self.guard.is_ended() {
            return Poll::Ready(());
        }
        if self.grace_timer.is_none() {
            let token = &self.shutdown;
            let wait = self
                .shutdown_wait
                .get_or_insert_with(|| Box::pin(token.clone().cancelled_owned()));
            if wait.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            tracing::info!(grace = ?self.grace, "shutdown: waiting for the run to finish");
            self.grace_timer = Some(Box::pin(tokio::time::sleep(self.grace)));
        }
        let Some(timer) = self.grace_timer.as_mut() else {
            return Poll::Pending;
        };
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        tracing::warn!("shutdown: grace period over, ending the run");
        self.guard.on_shutdown(out);
        self.stop_agent();
        Poll::Ready(())
    }

    /// Reads the agent's next item, passes it through the guard, and appends what to
    /// send to `out`. A panic, an error or the end of the agent's stream ends the run.
    pub fn poll_agent(&mut self, cx: &mut Context<'_>, out: &mut Vec<Event>) -> Poll<Progress> {
        let Some(agent) = self.agent.as_mut() else {
            return Poll::Ready(Progress::Ended);
        };
        let flow = match std::panic::catch_unwind(AssertUnwindSafe(|| agent.poll_next_unpin(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Some(Ok(event)))) => self.guard.on_event(event, out),
            Ok(Poll::Ready(Some(Err(err)))) => {
                self.guard.on_error(err, out);
                GuardFlow::End
            }
            Ok(Poll::Ready(None)) => {
                self.guard.on_end(out);
                GuardFlow::End
            }
            Err(panic) => {
                self.guard.on_panic(&*panic, out);
                GuardFlow::End
            }
        };
        if flow == GuardFlow::End || self.guard.is_ended() {
            self.stop_agent();
            return Poll::Ready(Progress::Ended);
        }
        Poll::Ready(Progress::More)
    }

    /// [`poll_shutdown`](Self::poll_shutdown), then [`poll_agent`](Self::poll_agent).
    pub fn poll_step(&mut self, cx: &mut Context<'_>, out: &mut Vec<Event>) -> Poll<Progress> {
        if self.poll_shutdown(cx, out).is_ready() {
            return Poll::Ready(Progress::Ended);
        }
        self.poll_agent(cx, out)
    }

    /// The next step: waits for the agent's next item (or the end of the grace period).
    pub async fn step(&mut self, out: &mut Vec<Event>) -> Progress {
        std::future::poll_fn(|cx| self.poll_step(cx, out)).await
    }

    /// The next step if the agent has an item ready now; `None` when it would wait.
    pub fn try_step(&mut self, out: &mut Vec<Event>) -> Option<Progress> {
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        match self.poll_agent(&mut cx, out) {
            Poll::Ready(p) => Some(p),
            Poll::Pending => None,
        }
    }

    /// Ends the run as a cancelled one: what is open is closed, each tool call left
    /// unanswered gets a result saying the run was stopped (so that no client goes on
    /// to execute it), and `RUN_FINISHED` with outcome `cancelled` ends the run.
    pub fn cancel(&mut self, out: &mut Vec<Event>) {
        self.stop_agent();
        if self.guard.is_ended() {
            return;
        }
        self.guard.close_open(out);
        let unanswered: Vec<String> = self
            .guard
            .open_constructs()
            .unanswered_tool_calls()
            .map(str::to_owned)
            .collect();
        for call in unanswered {
            let result = Event::tool_call_result(
                format!("{call}-result"),
                call.as_str(),
                serde_json::json!({
                    "status": "stopped",
                    "reason": "stop_requested",
                    "message": STOP_MESSAGE,
                })
                .to_string(),
            );
            self.guard.on_event(result, out);
        }
        self.guard.on_cancel(out);
    }

    /// Ends the run with `RUN_ERROR` carrying `err`'s public message and code, after
    /// closing what is open.
    pub fn fail(&mut self, err: AgentError, out: &mut Vec<Event>) {
        self.stop_agent();
        if self.guard.is_ended() {
            return;
        }
        self.guard.close_open(out);
        self.guard.on_error(err, out);
    }

    /// Ends the run with `RUN_ERROR` carrying `err`, without closing what is open (the
    /// run's consumer refused its events and will record nothing more but the end).
    pub fn fail_now(&mut self, err: AgentError, out: &mut Vec<Event>) {
        self.stop_agent();
        self.guard.on_error(err, out);
    }

    /// The run's consumer went away before the end: the agent is dropped and its
    /// context cancelled, with [`RunContext::is_disconnected`] true.
    pub fn abandon(&mut self) {
        if !self.guard.is_ended() {
            self.ctx.mark_disconnected();
        }
        self.stop_agent();
    }

    /// Stops reading the agent without ending the run (another process owns it now).
    pub fn detach(&mut self) {
        self.stop_agent();
    }

    fn stop_agent(&mut self) {
        self.agent = None;
        self.ctx.cancel();
    }
}

impl Drop for RunDriver {
    fn drop(&mut self) {
        self.ctx.cancel();
    }
}

#[cfg(test)]
mod tests;
