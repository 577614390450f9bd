//! The rules a stream can break ([`VerifyRule`], whose `Display` is the reference
//! client's message) and the error that names the event that broke one.

use crate::event::EventType;
/// Which subagent owns an entity: `None` is the parent agent.
pub(super) type Owner = Option<String>;

/// Renders an owner the way the reference messages do.
fn owner_label(owner: &Owner) -> &str {
    owner.as_deref().unwrap_or("(the parent agent)")
}

/// Why a stream is not legal. The `Display` text is the reference client's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyRule {
    /// An event after `RUN_ERROR` that does not start a new run.
    #[error("Cannot send event type '{event_type}': The run has already errored with 'RUN_ERROR'. No further events can be sent.")]
    AfterRunError {
        /// The offending event's type.
        event_type: EventType,
    },
    /// An event after `RUN_FINISHED` that is neither `RUN_ERROR` nor `RUN_STARTED`.
    #[error("Cannot send event type '{event_type}': The run has already finished with 'RUN_FINISHED'. Start a new run with 'RUN_STARTED'.")]
    AfterRunFinished {
        /// The offending event's type.
        event_type: EventType,
    },
    /// The stream did not begin with `RUN_STARTED` (or `RUN_ERROR`).
    #[error("First event must be 'RUN_STARTED'")]
    FirstEventNotRunStarted,
    /// `RUN_STARTED` while a run is active.
    #[error("Cannot send 'RUN_STARTED' while a run is still active. The previous run must be finished with 'RUN_FINISHED' before starting a new run.")]
    RunAlreadyActive,
    /// `subagentRunId: null` on an event.
    #[error("Cannot send '{event_type}' with 'subagentRunId: null'. The field is optional — omit it entirely.")]
    NullSubagentRunId {
        /// The offending event's type.
        event_type: EventType,
    },
    /// A message in a snapshot or input echo with `subagentRunId: null`.
    #[error("Cannot send a message (id '{message_id}') with 'subagentRunId: null'. The field is optional — omit it entirely.")]
    NullMessageSubagentRunId {
        /// The message.
        message_id: String,
    },
    /// A start event for an id that is already open.
    #[error("Cannot send '{event_type}' event: A {kind} with ID '{id}' is already in progress. Complete it with '{end}' first.")]
    AlreadyInProgress {
        /// The offending event's type.
        event_type: EventType,
        /// `text message`, `tool call`, `reasoning span`, `reasoning message`.
        kind: &'static str,
        /// The entity id.
        id: String,
        /// The event that closes it.
        end: &'static str,
    },
    /// A content/args event for an id that is not open.
    #[error("Cannot send '{event_type}' event: No active {kind} found with ID '{id}'. Start a {kind} with '{start}' first.")]
    NotActiveStart {
        /// The offending event's type.
        event_type: EventType,
        /// The entity kind.
        kind: &'static str,
        /// The entity id.
        id: String,
        /// The event that opens it.
        start: &'static str,
    },
    /// An end event for an id that is not open.
    #[error("Cannot send '{event_type}' event: No active {kind} found with ID '{id}'. A '{start}' event must be sent first.")]
    NotActiveEnd {
        /// The offending event's type.
        event_type: EventType,
        /// The entity kind.
        kind: &'static str,
        /// The entity id.
        id: String,
        /// The event that opens it.
        start: &'static str,
    },
    /// The event's `subagentRunId` differs from the entity's owner.
    #[error("Cannot send '{event_type}': subagentRunId '{tag}' does not match the {kind} '{id}' opener's subagent '{}'.", owner_label(.owner))]
    OwnerMismatch {
        /// The offending event's type.
        event_type: EventType,
        /// The event's tag.
        tag: String,
        /// The entity kind.
        kind: &'static str,
        /// The entity id.
        id: String,
        /// The recorded owner.
        owner: Owner,
    },
    /// A tool call tagged differently from the message that carries it.
    #[error("Cannot send 'TOOL_CALL_START': subagentRunId '{tag}' does not match its parent message '{parent_message_id}' owner '{}'. A tool call belongs to the message that carries it.", owner_label(.parent_owner))]
    ToolCallParentMismatch {
        /// The event's tag.
        tag: String,
        /// The parent message.
        parent_message_id: String,
        /// The parent message's owner.
        parent_owner: Owner,
    },
    /// An untagged reopen of a tool call whose parent message has another owner.
    #[error("Cannot send 'TOOL_CALL_START': tool call '{tool_call_id}' is owned by '{}' but its parent message '{parent_message_id}' is owned by '{}'. A tool call belongs to the message that carries it.", owner_label(.call_owner), owner_label(.parent_owner))]
    ToolCallReopenMismatch {
        /// The tool call.
        tool_call_id: String,
        /// The call's recorded owner.
        call_owner: Owner,
        /// The parent message.
        parent_message_id: String,
        /// The parent message's owner.
        parent_owner: Owner,
    },
    /// `STEP_STARTED` for a step already open under the same owner.
    #[error("Step \"{step}\" is already active for 'STEP_STARTED'{}", .owner.as_ref().map(|o| format!(" in subagent '{o}'")).unwrap_or_default())]
    StepAlreadyActive {
        /// The step name.
        step: String,
        /// The owner.
        owner: Owner,
    },
    /// `STEP_FINISHED` for a step open under another owner.
    #[error("Cannot send 'STEP_FINISHED' for step \"{step}\" attributed to {}: that step is open under {}. A step must be finished by whoever started it.", who(.owner), who(.open_under))]
    StepOwnerMismatch {
        /// The step name.
        step: String,
        /// The event's owner.
        owner: Owner,
        /// The owner the step is open under.
        open_under: Owner,
    },
    /// `STEP_FINISHED` for a step that was never started.
    #[error("Cannot send 'STEP_FINISHED' for step \"{step}\" that was not started")]
    StepNotStarted {
        /// The step name.
        step: String,
    },
    /// `SUBAGENT_STARTED` for an active subagent.
    #[error("Cannot send 'SUBAGENT_STARTED': subagent '{id}' is already active. Finish it with 'SUBAGENT_FINISHED' first.")]
    SubagentAlreadyActive {
        /// The subagent invocation.
        id: String,
    },
    /// `SUBAGENT_STARTED` reusing an invocation id that already finished in this run.
    #[error("Cannot send 'SUBAGENT_STARTED': subagent '{id}' has already finished in this run. Subagent IDs are per-invocation and cannot be reused.")]
    SubagentReused {
        /// The subagent invocation.
        id: String,
    },
    /// `SUBAGENT_STARTED` naming a parent that was not started in this run.
    #[error("Cannot send 'SUBAGENT_STARTED': parentSubagentRunId '{parent}' has not been started in this run.")]
    SubagentParentUnknown {
        /// The named parent.
        parent: String,
    },
    /// `SUBAGENT_FINISHED`/`SUBAGENT_ERROR` for a subagent that is not active.
    #[error("Cannot send '{event_type}': no active subagent found with ID '{id}'. A 'SUBAGENT_STARTED' event must be sent first.")]
    SubagentNotActive {
        /// The offending event's type.
        event_type: EventType,
        /// The subagent invocation.
        id: String,
    },
    /// `RUN_FINISHED` while entities are still open.
    #[error("Cannot send 'RUN_FINISHED' while {what} are still active: {open}")]
    RunFinishedWhileActive {
        /// `steps`, `text messages`, `reasoning messages`, `reasoning spans`, `tool calls`, `subagents`.
        what: &'static str,
        /// The open ids, comma separated.
        open: String,
    },
    /// `RUN_FINISHED` names another run than the `RUN_STARTED` it closes.
    #[error("Cannot send 'RUN_FINISHED' with runId '{finished}' for the run started as '{started}': a run's RUN_STARTED and RUN_FINISHED must agree on their runId.")]
    RunIdMismatch {
        /// The `runId` of the open run's `RUN_STARTED`.
        started: String,
        /// The `runId` the `RUN_FINISHED` carries.
        finished: String,
    },
    /// `RUN_FINISHED` names another thread than the `RUN_STARTED` it closes: both
    /// boundary events carry the input's `threadId`.
    #[error("Cannot send 'RUN_FINISHED' with threadId '{finished}' for a run started on '{started}': both boundary events of a run, RUN_STARTED and RUN_FINISHED, carry the input's threadId.")]
    ThreadIdMismatch {
        /// The `threadId` of the open run's `RUN_STARTED`.
        started: String,
        /// The `threadId` the `RUN_FINISHED` carries.
        finished: String,
    },
    /// A `RUN_STARTED` on another thread than the stream's (the input's, or the first
    /// run's when the input is not known).
    #[error("Cannot send 'RUN_STARTED' on thread '{got}': every run on a stream carries the input's threadId ('{expected}').")]
    WrongThread {
        /// The stream's thread.
        expected: String,
        /// The thread the `RUN_STARTED` names.
        got: String,
    },
    /// Two interrupts of one `RUN_FINISHED` outcome share an id.
    #[error("Cannot send 'RUN_FINISHED': its outcome has two interrupts carrying the id '{id}'; a resume entry answers an interrupt by its id, so each must be distinct.")]
    DuplicateInterruptId {
        /// The repeated id.
        id: String,
    },
    /// The stream ended while a run was open: the run has no outcome.
    #[error("The stream ended without a terminal event: run '{run_id}' is still open after {events} events (it needs RUN_FINISHED or RUN_ERROR).")]
    EndedWithoutTerminal {
        /// The open run.
        run_id: String,
        /// Events accepted before the end.
        events: usize,
    },
}

impl VerifyRule {
    /// The rule's stable id, named after the part of the specification it enforces
    /// (`lifecycle/run-started-first`, …). `agui verify`, the client's errors and
    /// `agui check` name rules by these ids; `docs/check-rules.md` lists them.
    pub fn id(&self) -> &'static str {
        use VerifyRule as R;
        match self {
            R::AfterRunError { .. } => "lifecycle/no-events-after-run-error",
            R::AfterRunFinished { .. } => "lifecycle/no-events-after-run-finished",
            R::FirstEventNotRunStarted => "lifecycle/run-started-first",
            R::RunAlreadyActive => "lifecycle/one-run-at-a-time",
            R::NullSubagentRunId { .. } | R::NullMessageSubagentRunId { .. } => {
                "subagents/no-null-subagent-run-id"
            }
            R::AlreadyInProgress { kind, .. }
            | R::NotActiveStart { kind, .. }
            | R::NotActiveEnd { kind, .. } => match (*kind, self) {
                ("tool call", R::AlreadyInProgress { .. }) => "tool-calls/start-once",
                ("tool call", _) => "tool-calls/started-before-use",
                ("reasoning span" | "reasoning message", R::AlreadyInProgress { .. }) => {
                    "reasoning/start-once"
                }
                ("reasoning span" | "reasoning message", _) => "reasoning/started-before-use",
                (_, R::AlreadyInProgress { .. }) => "messages/start-once",
                _ => "messages/started-before-use",
            },
            R::OwnerMismatch { .. }
            | R::ToolCallParentMismatch { .. }
            | R::ToolCallReopenMismatch { .. } => "subagents/attribution",
            R::StepAlreadyActive { .. } => "steps/start-once",
            R::StepOwnerMismatch { .. } => "subagents/attribution",
            R::StepNotStarted { .. } => "steps/started-before-finished",
            R::SubagentAlreadyActive { .. } | R::SubagentReused { .. } => {
                "subagents/distinct-invocations"
            }
            R::SubagentParentUnknown { .. } => "subagents/parent-started",
            R::SubagentNotActive { .. } => "subagents/started-before-finished",
            R::RunFinishedWhileActive { .. } => "lifecycle/run-finished-closes-everything",
            R::RunIdMismatch { .. } => "lifecycle/run-finished-run-id",
            R::ThreadIdMismatch { .. } => "lifecycle/run-finished-thread-id",
            R::WrongThread { .. } => "lifecycle/one-thread-per-stream",
            R::DuplicateInterruptId { .. } => "interrupts/distinct-ids",
            R::EndedWithoutTerminal { .. } => "lifecycle/terminal-event",
        }
    }
}

pub(super) fn who(owner: &Owner) -> String {
    match owner {
        Some(o) => format!("subagent '{o}'"),
        None => "the parent agent".to_owned(),
    }
}

/// A verification failure: which event (0-based index in the stream) broke which rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {index}: {rule}")]
pub struct VerifyError {
    /// Index of the offending event in the stream.
    pub index: usize,
    /// Its type.
    pub event_type: EventType,
    /// The rule it broke (its `Display` is the reference client's message).
    pub rule: VerifyRule,
}
