//! The run context handed to an agent: ids, the cancellation signal, and the answers
//! to the interrupts a resumed run brings.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::interrupts::Answers;

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// What the runtime tells an agent about its run besides the input.
///
/// The [cancellation signal](RunContext::cancelled) fires when
/// * the client disconnects (the response body is dropped),
/// * the server starts shutting down (the agent then has the configured grace period
///   to end its stream before the runtime ends the run with `RUN_ERROR`), or
/// * the runtime stops reading the agent (after a terminal event, a protocol
///   violation, an error or a panic).
///
/// An agent written as a stream or with an [`Emitter`](crate::Emitter) is also simply
/// dropped at that point; the signal is for work the agent spawned itself (tasks,
/// subprocesses, outgoing requests) so that nothing keeps running for a client that
/// is gone.
#[derive(Debug, Clone)]
pub struct RunContext {
    // What every clone shares, in one allocation: a clone costs two reference counts.
    ids: Arc<Ids>,
    token: CancellationToken,
}

#[derive(Debug)]
struct Ids {
    agent: Arc<str>,
    thread_id: String,
    run_id: String,
    shutdown: CancellationToken,
    disconnected: AtomicBool,
    answers: OnceLock<Answers>,
}

impl RunContext {
    /// A context for a run of `agent`; `shutdown` is the server's shutdown signal.
    pub fn new(
        agent: impl Into<Arc<str>>,
        thread_id: impl Into<String>,
        run_id: impl Into<String>,
        shutdown: &CancellationToken,
    ) -> Self {
        RunContext {
            ids: Arc::new(Ids {
                agent: agent.into(),
                thread_id: thread_id.into(),
                run_id: run_id.into(),
                shutdown: shutdown.clone(),
                disconnected: AtomicBool::new(false),
                answers: OnceLock::new(),
            }),
            token: shutdown.child_token(),
        }
    }

    /// A context outside any server (tests, direct calls): never cancelled unless
    /// [`cancel`](RunContext::cancel) is called.
    pub fn detached(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunContext::new("", thread_id, run_id, &CancellationToken::new())
    }

    /// The name the agent is mounted under.
    pub fn agent_name(&self) -> &str {
        &self.ids.agent
    }

    /// The run's thread id.
    pub fn thread_id(&self) -> &str {
        &self.ids.thread_id
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.ids.run_id
    }

    /// The cancellation token (clone it into spawned work, or make child tokens).
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves when the run is cancelled.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.token.cancelled()
    }

    /// Whether the server is shutting down (the cancellation came from shutdown).
    pub fn is_shutting_down(&self) -> bool {
        self.ids.shutdown.is_cancelled()
    }

    /// Whether the client went away before the run ended.
    pub fn is_disconnected(&self) -> bool {
        self.ids.disconnected.load(Ordering::Relaxed)
    }

    /// The answers the run brings to the interrupts its thread's last run raised, as
    /// the runtime checked them (see [`crate::interrupts`]); empty for a run that
    /// answers nothing.
    pub fn answers(&self) -> &Answers {
        static NONE: std::sync::LazyLock<Answers> = std::sync::LazyLock::new(Answers::default);
        self.ids.answers.get().unwrap_or(&NONE)
    }

    /// Gives the run its checked answers (the runtime does, before the agent starts);
    /// the first call wins.
    pub fn set_answers(&self, answers: Answers) {
        let _ = self.ids.answers.set(answers);
    }

    /// Cancels the run.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    pub(crate) fn mark_disconnected(&self) {
        self.ids.disconnected.store(true, Ordering::Relaxed);
        self.token.cancel();
    }
}
