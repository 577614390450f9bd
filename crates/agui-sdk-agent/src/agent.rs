//! The agent abstraction.
//!
//! # Design: a stream, with an emitter built on top
//!
//! The primitive is [`Agent::run`], which returns the run's events as a
//! [`Stream`] ([`AgentStream`]). A stream was chosen as the
//! primitive because:
//!
//! * **cancellation is structural**: the runtime polls the stream from inside the
//!   response body, so when the client disconnects the body is dropped, the stream is
//!   dropped, and every future the agent was awaiting is dropped with it. Nothing needs
//!   to remember to check a flag for the common case;
//! * **back-pressure is free**: the agent is only polled when the socket can take more,
//!   so a slow client slows the agent instead of growing a queue;
//! * **zero overhead**: no task, no channel between an event's creation and its
//!   encoding (this is what gives sub-millisecond emit-to-socket delay);
//! * it composes with every stream combinator and adapts any existing event source.
//!
//! Writing a multi-step agent as a hand-made stream is awkward, so [`agent_fn`] offers
//! the emitter shape on top: an `async` function receiving an [`Emitter`] and calling
//! `emit(...).await` in straight-line code. Its future is still polled inside the
//! response stream (not spawned), joined with a *bounded* queue that moves each event
//! in place, so it keeps the cancellation and back-pressure properties above.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, Event, RunAgentInput};
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, Stream, StreamExt};
use tokio::sync::mpsc;

use crate::builders::{self, StateTracker};
use crate::channel::Queue;
use crate::context::RunContext;
use crate::error::AgentError;

/// The events of one run, as produced by an agent.
pub type AgentStream = BoxStream<'static, Result<Event, AgentError>>;

/// Something that answers a run with a stream of events.
///
/// The runtime guarantees the run lifecycle around what the agent produces (see
/// [`crate::lifecycle`]): the agent may omit `RUN_STARTED` and the terminal event, may
/// fail with an [`AgentError`] or even panic; the client always sees `RUN_STARTED`
/// first and exactly one `RUN_FINISHED` or `RUN_ERROR` last.
pub trait Agent: Send + Sync + 'static {
    /// Starts a run. Called on a runtime worker; the work happens when the returned
    /// stream is polled (do not block here).
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream;

    /// What the agent declares it can do (served as JSON on `GET /{name}`). The router
    /// fills in `identity.name` and `transport` when they are left out.
    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities::default()
    }
}

/// An agent written as a function from the run's input to a stream of events (the
/// stream a model client, a channel or a generator already gives). Build it with
/// [`agent_stream`].
pub struct StreamAgent<F> {
    f: F,
}

impl<F> std::fmt::Debug for StreamAgent<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamAgent").finish_non_exhaustive()
    }
}

/// An agent from a function that returns the run's events as a stream; the runtime
/// adds `RUN_STARTED` and the terminal event, as for any agent.
///
/// ```no_run
/// use agui_sdk_agent::{agent_stream, agui_sdk_core::{Event, RunAgentInput}};
///
/// let echo = agent_stream(|input: RunAgentInput, _ctx| {
///     let text = input.last_user_text().unwrap_or_default();
///     let id = format!("{}-echo", input.run_id);
///     agui_sdk_agent::futures_util::stream::iter([
///         Ok(Event::text_message_start(&id)),
///         Ok(Event::text_message_content(&id, text)),
///         Ok(Event::text_message_end(&id)),
///     ])
/// });
/// # let _ = echo;
/// ```
pub fn agent_stream<F, S>(f: F) -> StreamAgent<F>
where
    F: Fn(RunAgentInput, RunContext) -> S + Send + Sync + 'static,
    S: Stream<Item = Result<Event, AgentError>> + Send + 'static,
{
    StreamAgent { f }
}

impl<F, S> Agent for StreamAgent<F>
where
    F: Fn(RunAgentInput, RunContext) -> S + Send + Sync + 'static,
    S: Stream<Item = Result<Event, AgentError>> + Send + 'static,
{
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream {
        (self.f)(input, ctx).boxed()
    }
}

impl<A: Agent + ?Sized> Agent for Arc<A> {
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream {
        (**self).run(input, ctx)
    }
    fn capabilities(&self) -> AgentCapabilities {
        (**self).capabilities()
    }
}

impl<A: Agent + ?Sized> Agent for Box<A> {
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream {
        (**self).run(input, ctx)
    }
    fn capabilities(&self) -> AgentCapabilities {
        (**self).capabilities()
    }
}

/// The sending side handed to an [`agent_fn`] agent.
///
/// Emitting waits while the bounded buffer between the agent and the socket is full
/// (back-pressure). Emitting after the client went away returns an error with code
/// `disconnected` (only reachable from work the agent spawned itself: the agent's own
/// future is dropped at that point).
pub struct Emitter {
    // One allocation per run holds the queue and the run's ids.
    shared: Arc<EmitterShared>,
}

struct EmitterShared {
    queue: Queue,
    thread_id: String,
    run_id: String,
    ids: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter")
            .field("thread_id", &self.shared.thread_id)
            .field("run_id", &self.shared.run_id)
            .finish_non_exhaustive()
    }
}

impl Clone for Emitter {
    fn clone(&self) -> Self {
        self.shared.queue.add_sender();
        Emitter {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        self.shared.queue.drop_sender();
    }
}

fn disconnected() -> AgentError {
    AgentError::public("client disconnected").with_code("disconnected")
}

impl Emitter {
    /// Sends one event: waits while the queue to the socket is full; an error with
    /// code `disconnected` once the run's stream is gone.
    pub fn emit(
        &self,
        event: impl Into<Event>,
    ) -> impl std::future::Future<Output = Result<(), AgentError>> + Send + '_ {
        let mut slot = Some(event.into());
        std::future::poll_fn(move |cx| {
            self.shared
                .queue
                .poll_send(cx, &mut slot)
                .map_err(|_| disconnected())
        })
    }

    /// A fresh id, unique within this run: `{runId}-{what}-{n}`.
    pub fn new_id(&self, what: &str) -> String {
        let n = self
            .shared
            .ids
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}-{what}-{n}", self.shared.run_id)
    }

    /// Sends a whole assistant message (`TEXT_MESSAGE_START`, one
    /// `TEXT_MESSAGE_CONTENT`, `TEXT_MESSAGE_END`) with a fresh id; returns the id.
    pub async fn text(&self, text: impl Into<String>) -> Result<String, AgentError> {
        let id = self.new_id("message");
        let text = text.into();
        let pieces = (!text.is_empty()).then_some(text);
        self.emit_all(builders::text_message(&id, pieces)).await?;
        Ok(id)
    }

    /// Streams an assistant message from a stream the agent already has (a model's
    /// tokens): `TEXT_MESSAGE_START` at once, one `TEXT_MESSAGE_CONTENT` per non-empty
    /// piece as it arrives, `TEXT_MESSAGE_END` when the stream ends. Returns the
    /// message id (fresh) and the whole text.
    pub async fn text_stream<S: Into<String>>(
        &self,
        pieces: impl futures_util::Stream<Item = S>,
    ) -> Result<(String, String), AgentError> {
        let id = self.new_id("message");
        self.emit(agui_sdk_core::Event::text_message_start(&id))
            .await?;
        let mut pieces = std::pin::pin!(pieces);
        let mut all = String::new();
        while let Some(piece) = pieces.next().await {
            let piece: String = piece.into();
            if piece.is_empty() {
                continue;
            }
            all.push_str(&piece);
            self.emit(agui_sdk_core::Event::text_message_content(&id, piece))
                .await?;
        }
        self.emit(agui_sdk_core::Event::text_message_end(&id))
            .await?;
        Ok((id, all))
    }

    /// As [`text_stream`](Self::text_stream), from the receiving end of a channel (the
    /// message ends when every sender is dropped).
    pub async fn text_channel<S: Into<String>>(
        &self,
        mut rx: mpsc::Receiver<S>,
    ) -> Result<(String, String), AgentError> {
        let pieces = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        self.text_stream(pieces).await
    }

    /// Emits a call of the tool `name` with `arguments` (serialized as one JSON piece):
    /// `TOOL_CALL_START`, `TOOL_CALL_ARGS`, `TOOL_CALL_END`, with a fresh id; returns
    /// the tool call id. A frontend tool is then answered by the client on its next run.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: &serde_json::Value,
    ) -> Result<String, AgentError> {
        let id = self.new_id("call");
        self.emit_all(builders::tool_call(
            &id,
            name,
            None,
            [arguments.to_string()],
        ))
        .await?;
        Ok(id)
    }

    /// Emits the result of a tool call the agent ran itself (`TOOL_CALL_RESULT`, the
    /// JSON `result` as its content), with a fresh message id; returns the id.
    pub async fn tool_result(
        &self,
        tool_call_id: &str,
        result: &serde_json::Value,
    ) -> Result<String, AgentError> {
        let id = self.new_id("result");
        let content = match result {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.emit(agui_sdk_core::Event::tool_call_result(
            &id,
            tool_call_id,
            content,
        ))
        .await?;
        Ok(id)
    }

    /// Sends several events in order.
    pub async fn emit_all(
        &self,
        events: impl IntoIterator<Item = Event>,
    ) -> Result<(), AgentError> {
        for e in events {
            self.emit(e).await?;
        }
        Ok(())
    }

    /// Sends events with a pause of `pace` before each one after the first (no pause
    /// when `pace` is zero).
    pub async fn emit_paced(
        &self,
        events: impl IntoIterator<Item = Event>,
        pace: Duration,
    ) -> Result<(), AgentError> {
        for (i, e) in events.into_iter().enumerate() {
            if i > 0 && !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            self.emit(e).await?;
        }
        Ok(())
    }

    /// Streams an assistant text message from string pieces: `TEXT_MESSAGE_START`, one
    /// `TEXT_MESSAGE_CONTENT` per piece (paced), `TEXT_MESSAGE_END`.
    pub async fn text_message<S: Into<String>>(
        &self,
        message_id: &str,
        pieces: impl IntoIterator<Item = S>,
        pace: Duration,
    ) -> Result<(), AgentError> {
        // The events are made as they go out, so a paced message holds its text pieces
        // only, not an event per piece for its whole length.
        let pieces = pieces.into_iter().map(Into::into).collect();
        self.emit_paced(builders::text_message_lazy(message_id, pieces), pace)
            .await
    }

    /// Emits a tool call: `TOOL_CALL_START` (with `parent_message_id` when given), one
    /// `TOOL_CALL_ARGS` per argument piece (paced), `TOOL_CALL_END`.
    pub async fn tool_call<S: Into<String>>(
        &self,
        tool_call_id: &str,
        tool_name: &str,
        parent_message_id: Option<&str>,
        arg_pieces: impl IntoIterator<Item = S>,
        pace: Duration,
    ) -> Result<(), AgentError> {
        // As in `text_message`: events made as they go out.
        let pieces = arg_pieces.into_iter().map(Into::into).collect();
        let events = builders::tool_call_lazy(tool_call_id, tool_name, parent_message_id, pieces);
        self.emit_paced(events, pace).await
    }

    /// Publishes `state` as a `STATE_SNAPSHOT` and remembers it in `tracker`.
    pub async fn state_snapshot(
        &self,
        tracker: &mut StateTracker,
        state: serde_json::Value,
    ) -> Result<(), AgentError> {
        self.emit(tracker.snapshot(state)).await
    }

    /// Publishes the change from the tracker's state to `state` as a `STATE_DELTA` (a
    /// JSON Patch computed by diffing); nothing is sent when nothing changed.
    pub async fn state_delta(
        &self,
        tracker: &mut StateTracker,
        state: serde_json::Value,
    ) -> Result<(), AgentError> {
        match tracker.delta(state) {
            Some(e) => self.emit(e).await,
            None => Ok(()),
        }
    }

    /// Applies `patch` to the tracker's state and publishes it as a `STATE_DELTA`; it
    /// costs what the patch touches, whatever the state's size. A patch that does not
    /// apply is not sent, and the run fails (an internal error: the reason is logged).
    pub async fn patch_state(
        &self,
        tracker: &mut StateTracker,
        patch: agui_sdk_core::JsonPatch,
    ) -> Result<(), AgentError> {
        match tracker.patch(patch) {
            Ok(e) => self.emit(e).await,
            Err(e) => Err(AgentError::internal(e)),
        }
    }

    /// Changes the state with `change` and publishes the change as a `STATE_DELTA`
    /// (nothing is sent when nothing changed).
    ///
    /// ```no_run
    /// # use agui_sdk_agent::{agent_fn, StateTracker};
    /// let counter = agent_fn(|input, _ctx, tx| async move {
    ///     let mut state = StateTracker::from_input(&input);
    ///     tx.update_state(&mut state, |s| s["count"] = serde_json::json!(1)).await?;
    ///     Ok(())
    /// });
    /// ```
    pub async fn update_state(
        &self,
        tracker: &mut StateTracker,
        change: impl FnOnce(&mut serde_json::Value),
    ) -> Result<(), AgentError> {
        match tracker.update(change) {
            Some(e) => self.emit(e).await,
            None => Ok(()),
        }
    }

    /// Ends the run with an interrupt outcome (`RUN_FINISHED` whose outcome lists
    /// `interrupts`); the next run continues with `resume` entries answering them.
    ///
    /// The runtime stops reading the agent at its terminal event, so code after this
    /// call may never run: record what the next run needs *before* calling it.
    pub async fn finish_with_interrupts(
        &self,
        interrupts: Vec<agui_sdk_core::Interrupt>,
    ) -> Result<(), AgentError> {
        self.emit(builders::interrupt_finished(
            &self.shared.thread_id,
            &self.shared.run_id,
            interrupts,
        ))
        .await
    }

    /// Ends the run successfully with a `result`.
    pub async fn finish_with_result(&self, result: serde_json::Value) -> Result<(), AgentError> {
        let mut e =
            agui_sdk_core::event::RunFinished::new(&*self.shared.thread_id, &*self.shared.run_id);
        e.result = Some(result);
        self.emit(e).await
    }
}

type BoxedFn = dyn Fn(RunAgentInput, RunContext, Emitter) -> BoxFuture<'static, Result<(), AgentError>>
    + Send
    + Sync;

/// An agent written as an `async` function over an [`Emitter`]. Build it with
/// [`agent_fn`].
pub struct FnAgent {
    f: Arc<BoxedFn>,
    capabilities: AgentCapabilities,
    buffer: usize,
}

impl std::fmt::Debug for FnAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnAgent")
            .field("buffer", &self.buffer)
            .finish_non_exhaustive()
    }
}

/// An agent from an `async` function that emits its events through an [`Emitter`].
///
/// ```
/// use std::time::Duration;
/// use agui_sdk_agent::{agent_fn, AgentError};
///
/// let agent = agent_fn(|input, _ctx, tx| async move {
///     let id = format!("{}-reply", input.run_id);
///     tx.text_message(&id, ["Hello", ", world"], Duration::ZERO).await?;
///     Ok(())
/// });
/// # let _ = agent;
/// ```
pub fn agent_fn<F, Fut>(f: F) -> FnAgent
where
    F: Fn(RunAgentInput, RunContext, Emitter) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), AgentError>> + Send + 'static,
{
    FnAgent {
        f: Arc::new(move |i, c, e| f(i, c, e).boxed()),
        capabilities: AgentCapabilities::default(),
        buffer: 16,
    }
}

impl FnAgent {
    /// Declares the agent's capabilities.
    pub fn with_capabilities(mut self, capabilities: AgentCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sets how many events may wait between the agent and the socket (at least 1;
    /// default 16).
    pub fn with_buffer(mut self, events: usize) -> Self {
        self.buffer = events.max(1);
        self
    }
}

impl Agent for FnAgent {
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream {
        let shared = Arc::new(EmitterShared {
            queue: Queue::new(self.buffer),
            thread_id: input.thread_id.clone(),
            run_id: input.run_id.clone(),
            ids: Default::default(),
        });
        let emitter = Emitter {
            shared: shared.clone(),
        };
        let fut = (self.f)(input, ctx, emitter);
        Box::pin(EmitterStream {
            fut: Some(fut),
            rx: shared,
            error: None,
            panic: None,
        })
    }

    fn capabilities(&self) -> AgentCapabilities {
        self.capabilities.clone()
    }
}

/// Joins an emitter agent's future with the receiving end of its queue.
struct EmitterStream {
    fut: Option<BoxFuture<'static, Result<(), AgentError>>>,
    rx: Arc<EmitterShared>,
    error: Option<AgentError>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

impl Drop for EmitterStream {
    fn drop(&mut self) {
        // The agent's future first (its emitter with it), then the queue.
        self.fut = None;
        self.rx.queue.close();
    }
}

impl Stream for EmitterStream {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        // Events already sent go out first. No waker is left here: the future is
        // polled next, and the queue is waited on below before this returns.
        if let Some(ev) = this.rx.queue.take() {
            return Poll::Ready(Some(Ok(ev)));
        }
        if let Some(fut) = this.fut.as_mut() {
            let polled = std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll_unpin(cx)));
            match polled {
                Ok(Poll::Pending) => {}
                Ok(Poll::Ready(r)) => {
                    this.fut = None;
                    this.error = r.err();
                }
                Err(panic) => {
                    // Deliver what was sent before the panic, then re-raise it for the
                    // runtime to report.
                    this.fut = None;
                    this.panic = Some(panic);
                }
            }
            // What the future sent during this poll.
            if let Poll::Ready(Some(ev)) = this.rx.queue.poll_recv(cx) {
                return Poll::Ready(Some(Ok(ev)));
            }
            if this.fut.is_some() {
                return Poll::Pending;
            }
        }
        if let Some(panic) = this.panic.take() {
            // Nothing more was buffered: no sender outlives a panicked future's drop
            // except clones in spawned work, which are not waited for.
            std::panic::resume_unwind(panic);
        }
        // The future is done; senders cloned into spawned work may remain.
        match this.rx.queue.poll_recv(cx) {
            Poll::Ready(Some(ev)) => Poll::Ready(Some(Ok(ev))),
            Poll::Ready(None) => Poll::Ready(this.error.take().map(Err)),
            Poll::Pending => Poll::Pending,
        }
    }
}
