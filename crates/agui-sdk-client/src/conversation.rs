//! The conversation: a thread's messages and state, kept correct across runs.

use std::collections::HashSet;
use std::sync::Arc;

use agui_sdk_core::semantics::{
    apply_outgoing_era, InboundConfig, InboundWarning, Intake, ProtocolVersion, Reducer,
    RunOutcome, Settle,
};
use agui_sdk_core::{
    Context, Event, Interrupt, Message, ResumeEntry, RunAgentInput, TokenUsage, Tool,
};
use futures_util::StreamExt;
use serde_json::Value;

use crate::error::ClientError;
use crate::http::{EventStream, HttpAgent};
use crate::middleware::Middleware;
use crate::subscriber::{dispatch, Flow, Subscriber};
use crate::tools::ToolHandler;

/// Anything that can run an agent: given a run's input, a stream of its events.
/// [`HttpAgent`] is the HTTP implementation; tests can provide their own.
pub trait Transport: Send + Sync {
    /// Starts a run. A transport that reads a wire format takes the events through an
    /// [`Intake`] configured by `inbound` (as [`HttpAgent::run_with`] does); one that
    /// returns a plain stream of typed events ([`EventStream::from_events`]) can ignore
    /// it: the conversation then takes them through an intake itself.
    fn run(&self, input: &RunAgentInput, inbound: &InboundConfig) -> EventStream;
}

impl Transport for HttpAgent {
    fn run(&self, input: &RunAgentInput, inbound: &InboundConfig) -> EventStream {
        HttpAgent::run_with(self, input, inbound.clone())
    }
}

/// Takes typed events through an intake (for transports that did not).
fn intake_typed(stream: EventStream, inbound: InboundConfig) -> EventStream {
    let sink: crate::http::WarningSink = Default::default();
    let out_sink = sink.clone();
    let abort = stream.abort_handle();
    let mut intake = Intake::new(inbound);
    let mut failed = false;
    let s = stream.flat_map(move |item| {
        let mut out = Vec::new();
        let items: Vec<Result<Event, ClientError>> = match item {
            _ if failed => Vec::new(),
            Err(e) => vec![Err(e)],
            Ok(event) => {
                let mut warnings = Vec::new();
                let r = intake.push_event(event, &mut out, &mut warnings);
                if !warnings.is_empty() {
                    sink.append(&mut warnings);
                }
                let mut items: Vec<_> = out.drain(..).map(Ok).collect();
                if let Err(source) = r {
                    failed = true;
                    items.push(Err(ClientError::Inbound {
                        byte_offset: None,
                        source,
                    }));
                }
                items
            }
        };
        futures_util::stream::iter(items)
    });
    EventStream::from_stream_with_abort(s, abort).with_intake(out_sink)
}

/// What the next run sends besides the conversation.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunParams {
    /// The run id (a fresh UUID when absent).
    pub run_id: Option<String>,
    /// Tools the agent may call, added to the registered frontend tools.
    pub tools: Vec<Tool>,
    /// Ambient context.
    pub context: Vec<Context>,
    /// Application-defined properties (`{}` when absent, as the reference sends).
    pub forwarded_props: Option<Value>,
    /// Answers to the pending interrupts.
    pub resume: Vec<ResumeEntry>,
}

impl RunParams {
    /// Parameters with defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the run id.
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Answers an interrupt.
    pub fn resume(mut self, entry: ResumeEntry) -> Self {
        self.resume.push(entry);
        self
    }

    /// Sets the forwarded properties.
    pub fn forwarded_props(mut self, props: Value) -> Self {
        self.forwarded_props = Some(props);
        self
    }

    /// Adds a context entry.
    pub fn context(mut self, c: Context) -> Self {
        self.context.push(c);
        self
    }
}

/// What a run produced. It copies nothing the conversation holds: the new messages
/// are named by id and read with [`Conversation::new_messages`], the state with
/// [`Conversation::state`], so a run's peak memory is the conversation's own.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunResult {
    /// Ids of the messages that were not in the conversation before the run, in the
    /// conversation's order.
    pub new_message_ids: Vec<String>,
    /// How the run ended.
    pub outcome: RunOutcome,
    /// Token usage reported by `RUN_FINISHED`.
    pub usage: Vec<TokenUsage>,
    /// Number of runs made (more than one when frontend tools were answered).
    pub runs: usize,
}

/// A conversation on one thread: its id, messages, state and pending interrupts,
/// carried from run to run, and the agent (any [`Transport`]) that runs next. Build one
/// with [`Conversation::new`] or [`Conversation::builder`].
///
/// ```no_run
/// use agui_sdk_client::{Conversation, HttpAgent, RunParams};
/// use agui_sdk_core::Message;
///
/// # async fn demo() -> Result<(), agui_sdk_client::ClientError> {
/// let mut chat = Conversation::builder(HttpAgent::builder("http://127.0.0.1:8000/agentic_chat").build()?)
///     .on_event(|event| println!("{}", event.event_type()))
///     .build();
/// chat.add_message(Message::user("u1", "Hello!"));
/// chat.run_agent(RunParams::new()).await?;
/// // The same thread, another agent: messages and state carry over.
/// chat.set_agent(HttpAgent::builder("http://127.0.0.1:8000/human_in_the_loop").build()?);
/// chat.add_message(Message::user("u2", "Plan a trip."));
/// chat.run_agent(RunParams::new()).await?;
/// println!("{} messages on thread {}", chat.messages().len(), chat.thread_id());
/// # Ok(()) }
/// ```
pub struct Conversation {
    transport: Arc<dyn Transport>,
    thread_id: String,
    messages: Vec<Message>,
    state: Value,
    pending_interrupts: Vec<Interrupt>,
    subscribers: Vec<Box<dyn Subscriber>>,
    middleware: Vec<Arc<dyn Middleware>>,
    tools: Vec<(Tool, Arc<dyn ToolHandler>)>,
    inbound: InboundConfig,
    max_tool_rounds: usize,
    max_message_bytes: u64,
    max_tool_args_bytes: u64,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("thread_id", &self.thread_id)
            .field("messages", &self.messages.len())
            .field("pending_interrupts", &self.pending_interrupts)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Conversation`].
pub struct ConversationBuilder {
    conversation: Conversation,
}

impl std::fmt::Debug for ConversationBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ConversationBuilder")
            .field(&self.conversation)
            .finish()
    }
}

/// A subscriber made of closures ([`ConversationBuilder::on_event`],
/// [`ConversationBuilder::on_warning`]).
struct Closures {
    event: Option<EventFn>,
    warning: Option<WarningFn>,
}

type EventFn = Box<dyn FnMut(&Event) + Send>;
type WarningFn = Box<dyn FnMut(&InboundWarning) + Send>;

impl Subscriber for Closures {
    fn on_event(&mut self, event: &Event) -> Flow {
        if let Some(f) = &mut self.event {
            f(event);
        }
        Flow::Continue
    }
    fn on_warning(&mut self, warning: &InboundWarning) {
        if let Some(f) = &mut self.warning {
            f(warning);
        }
    }
}

impl ConversationBuilder {
    /// Sets the thread id (a fresh UUID by default).
    pub fn thread_id(mut self, id: impl Into<String>) -> Self {
        self.conversation.thread_id = id.into();
        self
    }

    /// Sets the initial messages.
    pub fn messages(mut self, messages: Vec<Message>) -> Self {
        self.conversation.messages = messages;
        self
    }

    /// Sets the initial state (`{}` by default).
    pub fn state(mut self, state: Value) -> Self {
        self.conversation.state = state;
        self
    }

    /// Adds a subscriber.
    pub fn subscribe(mut self, s: impl Subscriber + 'static) -> Self {
        self.conversation.subscribers.push(Box::new(s));
        self
    }

    /// Calls `f` with every event, after it was applied (a [`Subscriber`] that only
    /// implements [`on_event`](Subscriber::on_event) and never stops the run).
    pub fn on_event(self, f: impl FnMut(&Event) + Send + 'static) -> Self {
        self.subscribe(Closures {
            event: Some(Box::new(f)),
            warning: None,
        })
    }

    /// Calls `f` with every warning of the inbound pipeline.
    pub fn on_warning(self, f: impl FnMut(&InboundWarning) + Send + 'static) -> Self {
        self.subscribe(Closures {
            event: None,
            warning: Some(Box::new(f)),
        })
    }

    /// Adds a middleware (the first added sees the events first). Middleware sees the
    /// events after chunk expansion and before verification.
    pub fn use_middleware(mut self, m: impl Middleware + 'static) -> Self {
        self.conversation.middleware.push(Arc::new(m));
        self
    }

    /// Registers a frontend tool: it is sent with every run, and its calls are run here
    /// and answered on the next run, up to [`DEFAULT_TOOL_ROUNDS`] runs in a row (see
    /// [`answer_tools`](Self::answer_tools)).
    pub fn tool(mut self, tool: Tool, handler: impl ToolHandler + 'static) -> Self {
        self.conversation.tools.push((tool, Arc::new(handler)));
        self
    }

    /// How many times in a row a run that ends leaving calls to registered tools
    /// unanswered is followed by another run with their results ([`DEFAULT_TOOL_ROUNDS`]
    /// by default). `0` leaves the calls to the caller: the run's result lists them.
    pub fn answer_tools(mut self, max_rounds: usize) -> Self {
        self.conversation.max_tool_rounds = max_rounds;
        self
    }

    /// Whether to verify incoming events (on by default). A violation fails the run.
    pub fn verify(mut self, on: bool) -> Self {
        self.conversation.inbound.verify = on;
        self
    }

    /// Whether enforcement strips what the protocol does not describe, with a warning,
    /// as the specification asks (on by default). Off, events are decoded strictly: an
    /// unknown key is delivered in the event's `extra`, and an unknown event type, tag
    /// or patch operation fails the run.
    pub fn enforce(mut self, on: bool) -> Self {
        self.conversation.inbound.enforce = on;
        self
    }

    /// The newest protocol version the agent is known to speak (the current one by
    /// default). Pinning an older version turns on the era shims that version needs:
    /// content flattened to text for 0.0.39 peers, subagent events and attribution
    /// dropped for peers before 0.0.58, no `protocolVersion` sent to a peer pinned below
    /// the current version. Each loss is reported as a warning.
    pub fn max_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.conversation.inbound.max_protocol_version = version;
        self
    }

    /// The most text one message may accumulate in a run, in bytes: the sum of its
    /// `TEXT_MESSAGE_CONTENT` (or `REASONING_MESSAGE_CONTENT`) deltas
    /// ([`DEFAULT_MAX_MESSAGE_BYTES`] by default; zero: no limit). The delta that would
    /// pass it ends the run with [`ClientError::LimitExceeded`], before it is applied.
    pub fn max_message_bytes(mut self, max: u64) -> Self {
        self.conversation.max_message_bytes = max;
        self
    }

    /// The most arguments one tool call may accumulate in a run, in bytes: the sum of
    /// its `TOOL_CALL_ARGS` deltas ([`DEFAULT_MAX_TOOL_ARGS_BYTES`] by default; zero: no
    /// limit). The delta that would pass it ends the run with
    /// [`ClientError::LimitExceeded`], before it is applied.
    pub fn max_tool_args_bytes(mut self, max: u64) -> Self {
        self.conversation.max_tool_args_bytes = max;
        self
    }

    /// The conversation.
    pub fn build(self) -> Conversation {
        self.conversation
    }
}

/// How many follow-up runs a conversation starts by default to answer its registered
/// tools' calls, before it hands the calls that remain back to the caller.
pub const DEFAULT_TOOL_ROUNDS: usize = 8;

/// Default [`ConversationBuilder::max_message_bytes`]: 16 MiB of text in one message.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 16 << 20;

/// Default [`ConversationBuilder::max_tool_args_bytes`]: 16 MiB of arguments in one tool
/// call.
pub const DEFAULT_MAX_TOOL_ARGS_BYTES: u64 = 16 << 20;

/// The bytes of streamed text per message or tool call in one run, held against the
/// conversation's ceilings. Consecutive deltas of the same id (the common case) take no
/// lookup.
#[derive(Default)]
struct Tally {
    last: Option<(String, u64)>,
    others: std::collections::HashMap<String, u64>,
}

impl Tally {
    /// Adds `len` bytes to `id`'s count and returns the new count.
    fn add(&mut self, id: &str, len: usize) -> u64 {
        let len = len as u64;
        if let Some((last, n)) = &mut self.last {
            if last == id {
                *n = n.saturating_add(len);
                return *n;
            }
        }
        let n = self.others.remove(id).unwrap_or(0).saturating_add(len);
        if let Some((last, m)) = self.last.take() {
            self.others.insert(last, m);
        }
        self.last = Some((id.to_owned(), n));
        n
    }
}

impl Conversation {
    /// A conversation on a new thread (random id, state `{}`) with an HTTP agent.
    pub fn new(http: HttpAgent) -> Self {
        Self::with_transport(Arc::new(http))
    }

    /// A conversation over any transport, with defaults.
    pub fn with_transport(transport: Arc<dyn Transport>) -> Self {
        Conversation {
            transport,
            thread_id: uuid::Uuid::new_v4().to_string(),
            messages: Vec::new(),
            state: Value::Object(Default::default()),
            pending_interrupts: Vec::new(),
            subscribers: Vec::new(),
            middleware: Vec::new(),
            tools: Vec::new(),
            inbound: InboundConfig::default(),
            max_tool_rounds: DEFAULT_TOOL_ROUNDS,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_tool_args_bytes: DEFAULT_MAX_TOOL_ARGS_BYTES,
        }
    }

    /// A builder for a conversation with an HTTP agent.
    pub fn builder(http: HttpAgent) -> ConversationBuilder {
        Self::builder_with_transport(Arc::new(http))
    }

    /// A builder for a conversation over any transport.
    pub fn builder_with_transport(transport: Arc<dyn Transport>) -> ConversationBuilder {
        ConversationBuilder {
            conversation: Self::with_transport(transport),
        }
    }

    /// Makes `http` the agent the next runs go to, on the same thread: messages, state
    /// and pending interrupts carry over.
    pub fn set_agent(&mut self, http: HttpAgent) {
        self.transport = Arc::new(http);
    }

    /// As [`set_agent`](Self::set_agent), with any transport.
    pub fn set_transport(&mut self, transport: Arc<dyn Transport>) {
        self.transport = transport;
    }

    /// The thread id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages a run added, in the conversation's order: those of `result`'s
    /// [`RunResult::new_message_ids`] the conversation still holds (a later run's
    /// `MESSAGES_SNAPSHOT` may have removed some).
    pub fn new_messages<'a>(&'a self, result: &'a RunResult) -> impl Iterator<Item = &'a Message> {
        let ids: HashSet<&str> = result.new_message_ids.iter().map(String::as_str).collect();
        self.messages.iter().filter(move |m| ids.contains(m.id()))
    }

    /// Adds a message to the conversation (typically the user's next message).
    pub fn add_message(&mut self, m: Message) {
        self.messages.push(m);
    }

    /// Adds a user message with a fresh id; returns the id.
    pub fn add_user_message(&mut self, text: impl Into<String>) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.messages.push(Message::user(id.clone(), text.into()));
        id
    }

    /// The current state.
    pub fn state(&self) -> &Value {
        &self.state
    }

    /// Replaces the state.
    pub fn set_state(&mut self, state: Value) {
        self.state = state;
    }

    /// Interrupts the last run left open; the next run must answer each.
    pub fn pending_interrupts(&self) -> &[Interrupt] {
        &self.pending_interrupts
    }

    fn check_interrupts(&self, resume: &[ResumeEntry]) -> Result<(), ClientError> {
        agui_sdk_core::semantics::interrupts::check_resume(
            &self.pending_interrupts,
            Some(resume),
            std::time::SystemTime::now(),
        )
        .map_err(ClientError::Interrupts)
    }

    fn build_input(&self, params: &RunParams) -> RunAgentInput {
        let mut tools: Vec<Tool> = self.tools.iter().map(|(t, _)| t.clone()).collect();
        tools.extend(params.tools.iter().cloned());
        RunAgentInput {
            thread_id: self.thread_id.clone(),
            run_id: params
                .run_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            protocol_version: Some(agui_sdk_core::PROTOCOL_VERSION.to_owned()),
            state: Some(agui_sdk_core::JsonText::from(&self.state)),
            // The reference client never sends activity messages.
            messages: self
                .messages
                .iter()
                .filter(|m| !matches!(m, Message::Activity(_)))
                .cloned()
                .collect(),
            tools,
            context: params.context.clone(),
            forwarded_props: Some(
                params
                    .forwarded_props
                    .as_ref()
                    .map_or_else(agui_sdk_core::JsonText::empty_object, Into::into),
            ),
            resume: (!params.resume.is_empty()).then(|| params.resume.clone()),
            parent_run_id: None,
            extra: Default::default(),
        }
    }

    /// Runs the agent once (or several times when frontend tools are answered
    /// automatically) and returns what it produced. The conversation is updated with
    /// every event as it arrives; on failure it keeps what was applied.
    pub async fn run_agent(&mut self, params: RunParams) -> Result<RunResult, ClientError> {
        let before: HashSet<String> = self.messages.iter().map(|m| m.id().to_owned()).collect();
        let mut params = params;
        let mut runs = 0;
        loop {
            runs += 1;
            let (outcome, usage) = match self.run_once(&params).await {
                Ok(r) => r,
                Err(e) => {
                    for s in &mut self.subscribers {
                        s.on_run_failed(&e);
                    }
                    return Err(e);
                }
            };
            let answerable = match &outcome {
                RunOutcome::Success {
                    pending_tool_call_ids,
                    ..
                } => self.answerable_calls(pending_tool_call_ids),
                _ => Vec::new(),
            };
            if answerable.is_empty() || runs > self.max_tool_rounds {
                let new_message_ids = self
                    .messages
                    .iter()
                    .map(Message::id)
                    .filter(|id| !before.contains(*id))
                    .map(str::to_owned)
                    .collect();
                return Ok(RunResult {
                    new_message_ids,
                    outcome,
                    usage,
                    runs,
                });
            }
            for (call_id, name, args) in answerable {
                let handler = self
                    .tools
                    .iter()
                    .find(|(t, _)| t.name == name)
                    .map(|(_, h)| h.clone());
                let Some(handler) = handler else { continue };
                let parsed: Value = serde_json::from_str(&args)
                    .unwrap_or_else(|_| Value::Object(Default::default()));
                let content = handler
                    .call(parsed)
                    .await
                    .map_err(|message| ClientError::Tool {
                        name: name.clone(),
                        message,
                    })?;
                self.messages.push(Message::tool(
                    uuid::Uuid::new_v4().to_string(),
                    call_id,
                    content,
                ));
            }
            params = RunParams {
                run_id: None,
                resume: Vec::new(),
                ..params
            };
        }
    }

    /// Calls (id, tool name, arguments) among `pending` that a registered tool answers.
    fn answerable_calls(&self, pending: &[String]) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for id in pending {
            for m in &self.messages {
                if let Message::Assistant(a) = m {
                    if let Some(tc) = a.tool_calls.iter().flatten().find(|tc| &tc.id == id) {
                        if self.tools.iter().any(|(t, _)| t.name == tc.function.name) {
                            out.push((
                                tc.id.clone(),
                                tc.function.name.clone(),
                                tc.function.arguments.clone(),
                            ));
                        }
                    }
                }
            }
        }
        out
    }

    async fn run_once(
        &mut self,
        params: &RunParams,
    ) -> Result<(RunOutcome, Vec<TokenUsage>), ClientError> {
        self.check_interrupts(&params.resume)?;
        let mut input = self.build_input(params);
        let era_warnings = apply_outgoing_era(&mut input, &self.inbound.max_protocol_version);
        for w in &era_warnings {
            for s in &mut self.subscribers {
                s.on_warning(w);
            }
        }
        let mut stream = self.transport.run(&input, &self.inbound);
        if !stream.has_intake() {
            stream = intake_typed(stream, self.inbound.clone());
        }
        let sink = stream.warning_sink();
        for m in &self.middleware {
            stream = m.transform(&input, stream);
        }
        let reducer = Reducer::new(
            std::mem::take(&mut self.messages),
            Some(std::mem::replace(&mut self.state, Value::Null)),
        );
        // The first run's thread is the stream's (not the input's): the 1.1 corpus replays
        // streams on other threads than the input's, and expects them accepted.
        let mut settle = Settle::new(self.inbound.verify, Some(reducer));
        let result = self.drive(&mut stream, sink.as_ref(), &mut settle).await;
        let reducer = settle.into_reducer().unwrap_or_default();
        let pending = reducer.pending_interrupts().to_vec();
        let (messages, state) = reducer.into_parts();
        self.messages = messages;
        self.state = state.unwrap_or(Value::Null);
        let (outcome, usage) = result?;
        self.pending_interrupts = pending;
        Ok((outcome, usage))
    }

    /// Hands the warnings raised so far to the subscribers.
    fn warn(&mut self, warnings: &mut Vec<InboundWarning>) {
        for w in warnings.drain(..) {
            for s in &mut self.subscribers {
                s.on_warning(&w);
            }
        }
    }

    /// Counts `len` more bytes of streamed text for `id` and says which ceiling they
    /// pass, if any: the limit's name, its value and what passed it.
    fn over(
        &self,
        tally: &mut Tally,
        id: &str,
        len: usize,
        tool: bool,
    ) -> Option<(&'static str, u64, String)> {
        let (name, max) = if tool {
            ("max_tool_args_bytes", self.max_tool_args_bytes)
        } else {
            ("max_message_bytes", self.max_message_bytes)
        };
        if max == 0 {
            return None;
        }
        let n = tally.add(id, len);
        (n > max).then(|| {
            let what = if tool {
                format!("tool call {id:?}'s arguments ({n} bytes)")
            } else {
                format!("message {id:?}'s text ({n} bytes)")
            };
            (name, max, what)
        })
    }

    async fn drive(
        &mut self,
        stream: &mut EventStream,
        sink: Option<&crate::http::WarningSink>,
        settle: &mut Settle,
    ) -> Result<(RunOutcome, Vec<TokenUsage>), ClientError> {
        let mut finished: Option<(RunOutcome, Vec<TokenUsage>)> = None;
        let mut failure: Option<ClientError> = None;
        let mut warnings = Vec::new();
        let take = |warnings: &mut Vec<InboundWarning>| {
            if let Some(sink) = sink {
                sink.drain_into(warnings);
            }
        };
        let mut texts = Tally::default();
        let mut args = Tally::default();
        while let Some(item) = stream.next().await {
            take(&mut warnings);
            self.warn(&mut warnings);
            let event = item?;
            let over = match &event {
                Event::TextMessageContent(e) => {
                    self.over(&mut texts, &e.message_id, e.delta.len(), false)
                }
                Event::ReasoningMessageContent(e) => {
                    self.over(&mut texts, &e.message_id, e.delta.len(), false)
                }
                Event::ToolCallArgs(e) => {
                    self.over(&mut args, &e.tool_call_id, e.delta.len(), true)
                }
                _ => None,
            };
            if let Some((limit, max, what)) = over {
                stream.abort();
                return Err(ClientError::LimitExceeded {
                    limit,
                    max,
                    event_index: settle.events_seen(),
                    what,
                });
            }
            let applied = settle
                .push(&event, &mut warnings)
                .map_err(|source| ClientError::Inbound {
                    byte_offset: None,
                    source,
                })?
                .unwrap_or_default();
            self.warn(&mut warnings);
            let mut flow = Flow::Continue;
            if !self.subscribers.is_empty() {
                let reducer = settle.reducer();
                // Computed once per event, only when something changed.
                let changed: Vec<String> = if applied.messages_changed {
                    let mut ids = applied.new_message_ids.clone();
                    if let Some(m) = applied
                        .updated
                        .and_then(|i| reducer.and_then(|r| r.messages().get(i)))
                    {
                        ids.push(m.id().to_owned());
                    }
                    ids
                } else {
                    Vec::new()
                };
                let null = Value::Null;
                let state = reducer.and_then(|r| r.state()).unwrap_or(&null);
                let messages = reducer.map(|r| r.messages()).unwrap_or(&[]);
                for s in &mut self.subscribers {
                    if s.on_event(&event) == Flow::Stop
                        || dispatch(s.as_mut(), &event) == Flow::Stop
                    {
                        flow = Flow::Stop;
                    }
                    if applied.messages_changed
                        && s.on_messages_changed(messages, &changed) == Flow::Stop
                    {
                        flow = Flow::Stop;
                    }
                    if applied.state_changed && s.on_state_changed(state) == Flow::Stop {
                        flow = Flow::Stop;
                    }
                }
            }
            match &event {
                Event::RunFinished(e) => {
                    for s in &mut self.subscribers {
                        s.on_run_finished(e);
                    }
                    let outcome = applied.outcome.clone().unwrap_or(RunOutcome::Success {
                        result: e.result.clone(),
                        pending_tool_call_ids: Vec::new(),
                    });
                    finished = Some((outcome, e.usage.clone().unwrap_or_default()));
                }
                Event::RunError(e) => {
                    failure = Some(ClientError::RunFailed {
                        message: e.message.clone(),
                        code: e.code.clone(),
                    });
                }
                Event::RunStarted(_) => {
                    finished = None;
                    failure = None;
                }
                _ => {}
            }
            if flow == Flow::Stop {
                stream.abort();
                return Err(ClientError::Stopped);
            }
        }
        take(&mut warnings);
        self.warn(&mut warnings);
        if let Some(e) = failure {
            return Err(e);
        }
        finished.ok_or(ClientError::Truncated {
            events: settle.events_seen(),
        })
    }
}
