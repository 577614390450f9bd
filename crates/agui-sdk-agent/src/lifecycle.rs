//! The run lifecycle the runtime guarantees, whatever the agent does.
//!
//! [`LifecycleGuard`] sits between the agent's stream and the wire:
//!
//! * **`RUN_STARTED` first**: added (with the request's thread and run ids and protocol
//!   version the client declared, when it is one this crate speaks, else this crate's)
//!   when the agent's first event is something else. An agent's own
//!   `RUN_STARTED` must carry the request's ids; a second one is a violation.
//! * **exactly one terminal event last**: when the agent's stream ends without
//!   `RUN_FINISHED`/`RUN_ERROR`, a `RUN_FINISHED` is added; after the agent's terminal
//!   event the agent is not read any further (it is dropped and its context cancelled).
//! * **failures become `RUN_ERROR`**: an [`AgentError`] (its public message only, code
//!   `agent_error` unless it set one), a panic (`agent panicked`, code `agent_panic`;
//!   the panic message goes to the log, not to the client), a protocol violation
//!   (code `protocol_violation`, saying which event and what was wrong), server
//!   shutdown after the grace period (code `shutdown`).
//! * **verification**: every event the agent emits (and every event the guard adds) is
//!   checked by an [`EventVerifier`] when verification is on (the default in debug
//!   builds, see `agui_sdk_server::ServerConfig::verify`).

use agui_sdk_core::event::RunError;
use agui_sdk_core::{Event, EventType};

use crate::error::AgentError;

/// Checks the events of one run, in order. One verifier is made per run.
pub trait EventVerifier: Send {
    /// Accepts the next event, or says what is wrong with it.
    fn check(&mut self, event: &Event) -> Result<(), Violation>;
}

/// Why an event an agent emitted is not acceptable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// A lifecycle rule of the protocol (the core verifier's rule; its `Display` is the
    /// reference client's message).
    #[error("{0}")]
    Rule(agui_sdk_core::semantics::VerifyRule),
    /// The event could not be taken in as a client would (a chunk that cannot be
    /// expanded).
    #[error("{0}")]
    Inbound(agui_sdk_core::semantics::InboundError),
    /// A custom verifier's reason.
    #[error("{0}")]
    Other(String),
}

/// The verifier used when verification is on: the core crate's inbound pipeline
/// ([`Inbound`](agui_sdk_core::semantics::Inbound)) as a client runs it, over the typed
/// events: chunk expansion, then the reference client's rules (lifecycle, open/close
/// pairing of messages, tool calls, reasoning, steps and subagents, attribution). What
/// the agent emits is thus checked exactly as a conforming client will take it in.
pub fn default_verifier() -> Box<dyn EventVerifier> {
    Box::new(PipelineVerifier {
        inbound: agui_sdk_core::semantics::Inbound::new(
            agui_sdk_core::semantics::InboundConfig::default(),
        ),
        out: Vec::new(),
        warnings: Vec::new(),
    })
}

/// [`default_verifier`]: the inbound pipeline over typed events.
struct PipelineVerifier {
    inbound: agui_sdk_core::semantics::Inbound,
    out: Vec<Event>,
    warnings: Vec<agui_sdk_core::semantics::InboundWarning>,
}

impl EventVerifier for PipelineVerifier {
    fn check(&mut self, event: &Event) -> Result<(), Violation> {
        self.out.clear();
        let r = self
            .inbound
            .push_event(event.clone(), &mut self.out, &mut self.warnings);
        for w in self.warnings.drain(..) {
            tracing::warn!(warning = %agui_sdk_core::Escaped(&w.to_string()), "a client will warn about an event this agent emitted");
        }
        r.map_err(|e| match e {
            agui_sdk_core::semantics::InboundError::Verify { source } => {
                Violation::Rule(source.rule)
            }
            other => Violation::Inbound(other),
        })
    }
}

impl EventVerifier for agui_sdk_core::semantics::verify::Verifier {
    fn check(&mut self, event: &Event) -> Result<(), Violation> {
        self.push(event).map_err(|e| Violation::Rule(e.rule))
    }
}

/// Whether the guard wants more events from the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardFlow {
    /// Keep reading the agent.
    Continue,
    /// The run is over: stop reading the agent.
    End,
}

/// Enforces the run lifecycle over one run's events. See the [module docs](self).
pub struct LifecycleGuard {
    thread_id: String,
    run_id: String,
    started: bool,
    ended: bool,
    index: u64,
    verifier: Option<Box<dyn EventVerifier>>,
    protocol_version: Option<std::borrow::Cow<'static, str>>,
    open: agui_sdk_core::semantics::OpenConstructs,
    /// Whether the client has a state a `STATE_DELTA` can apply to.
    state_defined: bool,
}

impl std::fmt::Debug for LifecycleGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LifecycleGuard")
            .field("thread_id", &self.thread_id)
            .field("run_id", &self.run_id)
            .field("started", &self.started)
            .field("ended", &self.ended)
            .field("index", &self.index)
            .field("verifying", &self.verifier.is_some())
            .finish()
    }
}

impl LifecycleGuard {
    /// A guard for the run `run_id` of `thread_id`, verifying with `verifier` if given.
    pub fn new(
        thread_id: impl Into<String>,
        run_id: impl Into<String>,
        verifier: Option<Box<dyn EventVerifier>>,
    ) -> Self {
        LifecycleGuard {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            started: false,
            ended: false,
            index: 0,
            verifier,
            protocol_version: Some(std::borrow::Cow::Borrowed(agui_sdk_core::PROTOCOL_VERSION)),
            open: agui_sdk_core::semantics::OpenConstructs::new(),
            state_defined: true,
        }
    }

    /// The protocol version the added `RUN_STARTED` declares (this crate's by default;
    /// the runtime declares the version the client asked for when it is an older one it
    /// speaks, so a client is not told of a version it does not know).
    pub fn declare_protocol_version(
        mut self,
        version: Option<impl Into<std::borrow::Cow<'static, str>>>,
    ) -> Self {
        self.protocol_version = version.map(Into::into);
        self
    }

    /// Whether the request carried a state (`RunAgentInput.state`; the default is
    /// `true`). A client that sent none reduces the run from *no* state, where a
    /// `STATE_DELTA` does not apply; with verification on, a delta before the run's first
    /// `STATE_SNAPSHOT` is then a protocol violation (unless it sets the whole document,
    /// as the reducer allows).
    pub fn input_state(mut self, present: bool) -> Self {
        self.state_defined = present;
        self
    }

    /// Whether the terminal event has been produced.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Takes the agent's next event; appends what to send to `out`.
    pub fn on_event(&mut self, event: Event, out: &mut Vec<Event>) -> GuardFlow {
        if self.ended {
            return GuardFlow::End;
        }
        let index = self.index;
        self.index += 1;
        let ty = event.event_type();
        match &event {
            Event::RunStarted(e)
                if !self.started && (e.thread_id != self.thread_id || e.run_id != self.run_id) =>
            {
                let msg = format!(
                    "RUN_STARTED names thread '{}' run '{}', but the request was for thread '{}' run '{}'",
                    e.thread_id, e.run_id, self.thread_id, self.run_id
                );
                return self.violation(index, ty, msg, out);
            }
            Event::RunStarted(_) if self.started => {
                return self.violation(index, ty, "a second RUN_STARTED in one run".into(), out);
            }
            Event::RunFinished(e) if e.thread_id != self.thread_id || e.run_id != self.run_id => {
                let msg = format!(
                    "RUN_FINISHED names thread '{}' run '{}', but both boundary events carry the input's threadId and runId (thread '{}' run '{}')",
                    e.thread_id, e.run_id, self.thread_id, self.run_id
                );
                return self.violation(index, ty, msg, out);
            }
            _ => {}
        }
        if !self.started {
            if ty == EventType::RunStarted {
                // The agent's own RUN_STARTED opens the run.
                self.started = true;
            } else {
                self.start(out);
            }
        }
        if let Some(v) = self.verifier.as_mut() {
            if let Err(why) = v.check(&event) {
                return self.violation(index, ty, why.to_string(), out);
            }
            if let Err(why) = track_state(&mut self.state_defined, &event) {
                return self.violation(index, ty, why, out);
            }
        }
        let terminal = ty.is_terminal();
        if let Event::RunError(e) = &event {
            // A run the agent fails itself is logged as one the runtime fails.
            tracing::warn!(error = %agui_sdk_core::Escaped(&e.message), code = ?e.code, "agent ended the run with RUN_ERROR");
        }
        self.open.observe(&event);
        out.push(event);
        if terminal {
            self.ended = true;
            GuardFlow::End
        } else {
            GuardFlow::Continue
        }
    }

    /// The agent's stream ended: adds `RUN_FINISHED` unless the run already ended.
    pub fn on_end(&mut self, out: &mut Vec<Event>) {
        if self.ended {
            return;
        }
        self.start(out);
        let fin = Event::run_finished(&self.thread_id, &self.run_id);
        if let Some(v) = self.verifier.as_mut() {
            if let Err(why) = v.check(&fin) {
                let msg = format!("the agent ended its stream with the run incomplete: {why}");
                tracing::warn!(msg = %agui_sdk_core::Escaped(&msg), "agent broke the protocol");
                self.fail(msg, "protocol_violation", out);
                return;
            }
        }
        out.push(fin);
        self.ended = true;
    }

    /// The agent failed: adds `RUN_ERROR` with the error's public message.
    pub fn on_error(&mut self, err: AgentError, out: &mut Vec<Event>) {
        match err.cause() {
            // An agent's error may quote what a client or an upstream sent.
            Some(cause) => tracing::warn!(
                error = %agui_sdk_core::Escaped(err.message()),
                cause = %agui_sdk_core::Escaped(&cause.to_string()),
                "agent failed"
            ),
            None => tracing::warn!(error = %agui_sdk_core::Escaped(err.message()), "agent failed"),
        }
        let code = err.code().unwrap_or("agent_error").to_owned();
        self.fail(err.message().to_owned(), &code, out);
    }

    /// The agent panicked: adds `RUN_ERROR` (the panic message is logged only).
    pub fn on_panic(&mut self, panic: &(dyn std::any::Any + Send), out: &mut Vec<Event>) {
        tracing::error!(panic = %panic_message(panic), "agent panicked");
        self.fail("agent panicked".to_owned(), "agent_panic", out);
    }

    /// What the run has open (text messages, tool calls, reasoning, steps, subagents),
    /// and the tool calls it has not answered.
    pub fn open_constructs(&self) -> &agui_sdk_core::semantics::OpenConstructs {
        &self.open
    }

    /// Closes everything the run has open (the most recently opened first), as if the
    /// agent had emitted the closing events.
    pub fn close_open(&mut self, out: &mut Vec<Event>) {
        let mut closing = Vec::new();
        self.open.close_all(&mut closing);
        for e in closing {
            if self.on_event(e, out) == GuardFlow::End {
                return;
            }
        }
    }

    /// The run was cancelled (a stop or cancel request): closes what is open and ends
    /// the run with `RUN_FINISHED` whose outcome is `cancelled`.
    pub fn on_cancel(&mut self, out: &mut Vec<Event>) {
        if self.ended {
            return;
        }
        self.start(out);
        self.close_open(out);
        if self.ended {
            return;
        }
        let mut fin = agui_sdk_core::event::RunFinished::new(&self.thread_id, &self.run_id);
        fin.outcome = Some(agui_sdk_core::types::RunFinishedOutcome::Cancelled(
            agui_sdk_core::types::CancelledOutcome::default(),
        ));
        self.on_event(fin.into(), out);
    }

    /// The server is shutting down and the grace period is over.
    pub fn on_shutdown(&mut self, out: &mut Vec<Event>) {
        self.fail("the server is shutting down".to_owned(), "shutdown", out);
    }

    fn start(&mut self, out: &mut Vec<Event>) {
        if self.started {
            return;
        }
        self.started = true;
        let mut started = agui_sdk_core::event::RunStarted::new(&self.thread_id, &self.run_id);
        // Declared once: the guard starts a run at most once.
        started.protocol_version = self.protocol_version.take().map(Into::into);
        let ev = Event::from(started);
        if let Some(v) = self.verifier.as_mut() {
            // RUN_STARTED is always acceptable as a first event.
            let _ = v.check(&ev);
        }
        out.push(ev);
    }

    fn violation(
        &mut self,
        index: u64,
        ty: EventType,
        msg: String,
        out: &mut Vec<Event>,
    ) -> GuardFlow {
        let msg = format!("the agent broke the protocol at its event {index} ({ty}): {msg}");
        tracing::warn!(msg = %agui_sdk_core::Escaped(&msg), "agent broke the protocol");
        self.fail(msg, "protocol_violation", out);
        GuardFlow::End
    }

    fn fail(&mut self, message: String, code: &str, out: &mut Vec<Event>) {
        if self.ended {
            return;
        }
        self.start(out);
        let mut e = RunError::new(message);
        e.code = Some(code.to_owned());
        out.push(e.into());
        self.ended = true;
    }
}

/// Follows whether the client has a state: a snapshot defines it; a delta applies
/// to an undefined state only when its first operation (after whole-document removes)
/// adds or replaces the whole document, as the reducer's rule is.
fn track_state(defined: &mut bool, event: &Event) -> Result<(), String> {
    match event {
        Event::StateSnapshot(_) => *defined = true,
        Event::StateDelta(d) if !*defined => {
            use agui_sdk_core::types::PatchOperation as Op;
            for (i, op) in d.delta.iter().enumerate() {
                match op {
                    Op::Remove(o) if o.path.is_empty() => continue,
                    Op::Add(o) if o.path.is_empty() => {}
                    Op::Replace(o) if o.path.is_empty() => {}
                    other => {
                        return Err(format!(
                            "STATE_DELTA operation {i} ({} {:?}) applies to an undefined state: the request carried no state and the run has not sent a STATE_SNAPSHOT; send one first",
                            op_name(other),
                            other.path()
                        ))
                    }
                }
                *defined = true;
                break;
            }
        }
        _ => {}
    }
    Ok(())
}

fn op_name(op: &agui_sdk_core::types::PatchOperation) -> &'static str {
    use agui_sdk_core::types::PatchOperation as Op;
    match op {
        Op::Add(_) => "add",
        Op::Remove(_) => "remove",
        Op::Replace(_) => "replace",
        Op::Move(_) => "move",
        Op::Copy(_) => "copy",
        Op::Test(_) => "test",
    }
}

/// A panic's message, for the log.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> LifecycleGuard {
        LifecycleGuard::new("t", "r", Some(default_verifier()))
    }

    fn names(out: &[Event]) -> Vec<&'static str> {
        out.iter().map(|e| e.event_type().as_str()).collect()
    }

    #[test]
    fn adds_run_started_before_the_first_event_and_run_finished_at_the_end() {
        let mut g = guard();
        let mut out = Vec::new();
        assert_eq!(
            g.on_event(Event::step_started("s"), &mut out),
            GuardFlow::Continue
        );
        assert_eq!(
            g.on_event(Event::step_finished("s"), &mut out),
            GuardFlow::Continue
        );
        g.on_end(&mut out);
        assert_eq!(
            names(&out),
            [
                "RUN_STARTED",
                "STEP_STARTED",
                "STEP_FINISHED",
                "RUN_FINISHED"
            ]
        );
        assert!(g.is_ended());
        // Nothing after the end.
        g.on_end(&mut out);
        g.on_shutdown(&mut out);
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn an_empty_agent_still_gets_a_whole_run() {
        let mut out = Vec::new();
        guard().on_end(&mut out);
        assert_eq!(names(&out), ["RUN_STARTED", "RUN_FINISHED"]);
    }

    #[test]
    fn a_first_run_error_is_preceded_by_run_started() {
        let mut g = guard();
        let mut out = Vec::new();
        assert_eq!(g.on_event(Event::run_error("no"), &mut out), GuardFlow::End);
        assert_eq!(names(&out), ["RUN_STARTED", "RUN_ERROR"]);
    }

    #[test]
    fn violations_end_the_run_with_a_protocol_violation() {
        let mut g = guard();
        let mut out = Vec::new();
        g.on_event(Event::tool_call_args("c1", "{}"), &mut out);
        assert_eq!(names(&out), ["RUN_STARTED", "RUN_ERROR"]);
        match &out[1] {
            Event::RunError(e) => {
                assert_eq!(e.code.as_deref(), Some("protocol_violation"));
                assert!(
                    e.message.contains("event 0 (TOOL_CALL_ARGS)"),
                    "{}",
                    e.message
                );
                assert!(e.message.contains("c1"), "{}", e.message);
            }
            _ => unreachable!(),
        }
        assert_eq!(
            g.on_event(Event::step_started("x"), &mut out),
            GuardFlow::End
        );
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_delta_against_no_state_is_a_violation() {
        use agui_sdk_core::PatchOperation as Op;
        let delta = |ops| Event::state_delta(ops);
        let snapshot = Event::state_snapshot(serde_json::json!({}));
        let add_a = || vec![Op::add("/a", serde_json::json!(1))];

        let mut g = guard().input_state(false);
        let mut out = Vec::new();
        assert_eq!(g.on_event(delta(add_a()), &mut out), GuardFlow::End);
        let (msg, code) = match out.last() {
            Some(Event::RunError(e)) => (e.message.clone(), e.code.clone()),
            other => panic!("{other:?}"),
        };
        assert_eq!(code.as_deref(), Some("protocol_violation"));
        assert!(
            msg.contains("event 0 (STATE_DELTA)")
                && msg.contains("operation 0 (add \"/a\")")
                && msg.contains("undefined state"),
            "{msg}"
        );

        // A snapshot first, or a delta that sets the whole document, defines the state.
        for first in [
            snapshot,
            delta(vec![Op::remove(""), Op::add("", serde_json::json!({}))]),
        ] {
            let mut g = guard().input_state(false);
            let mut out = Vec::new();
            assert_eq!(g.on_event(first, &mut out), GuardFlow::Continue);
            assert_eq!(
                g.on_event(delta(add_a()), &mut out),
                GuardFlow::Continue,
                "{out:?}"
            );
        }
        // A request that carried a state, and a guard without a verifier, accept it.
        for mut g in [
            guard(),
            LifecycleGuard::new("t", "r", None).input_state(false),
        ] {
            let mut out = Vec::new();
            assert_eq!(g.on_event(delta(add_a()), &mut out), GuardFlow::Continue);
        }
    }

    #[test]
    fn without_a_verifier_only_the_lifecycle_is_enforced() {
        let mut g = LifecycleGuard::new("t", "r", None);
        let mut out = Vec::new();
        g.on_event(Event::tool_call_args("c1", "{}"), &mut out);
        g.on_event(Event::run_started("t", "r"), &mut out);
        assert_eq!(names(&out), ["RUN_STARTED", "TOOL_CALL_ARGS", "RUN_ERROR"]);
    }

    #[test]
    fn errors_and_panics_are_sanitized() {
        let mut out = Vec::new();
        let io = std::io::Error::other("/etc/shadow unreadable");
        guard().on_error(AgentError::from(io), &mut out);
        let json = out[1].to_json_string();
        assert!(
            json.contains("\"agent failed\"") && !json.contains("shadow"),
            "{json}"
        );

        let mut out = Vec::new();
        let payload: Box<dyn std::any::Any + Send> = Box::new("secret detail");
        guard().on_panic(&*payload, &mut out);
        let json = out[1].to_json_string();
        assert!(
            json.contains("agent_panic") && !json.contains("secret"),
            "{json}"
        );

        let mut out = Vec::new();
        guard().on_error(
            AgentError::public("rate limited").with_code("rate_limit"),
            &mut out,
        );
        match &out[1] {
            Event::RunError(e) => {
                assert_eq!(
                    (e.message.as_str(), e.code.as_deref()),
                    ("rate limited", Some("rate_limit"))
                )
            }
            _ => unreachable!(),
        }
    }
}
