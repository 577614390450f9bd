//! The scenarios: what the checker asks the agent, and what each answer must be.

use agui_sdk_core::{Message, RunAgentInput};

use crate::exchange::{Ctx, Judged};
use crate::report::{Level, ScenarioReport};
use crate::{Checker, Discovery};

pub(crate) mod capabilities;
mod runs;
mod transport;

/// One scenario of a check. Each has a stable id (`chat`, `frontend-tool`, …); one
/// that does not apply to the agent is skipped with its reason, and one whose premise
/// did not happen (the agent never paused, never called the offered tool) is not
/// exercised, with its reason: neither passed nor failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scenario {
    /// `chat`: one user message; the answer must be a valid event stream.
    Chat,
    /// `frontend-tool`: a tool offered in `tools`; when the agent calls it, a second
    /// run answers with a tool message, and that run must be accepted. Not exercised
    /// when the agent never calls it.
    FrontendTool,
    /// `state`: a run with state in its input; every snapshot and delta must apply.
    /// Not exercised when the agent sends neither.
    State,
    /// `interrupts`: when the capabilities advertise interrupts, a run that pauses on
    /// them is resumed with an answer to each, and that run must be accepted and not
    /// pause again on them. Not exercised when the first run does not pause (so are
    /// the other interrupt scenarios).
    Interrupts,
    /// `interrupts-unknown`: a paused thread resumed with an answer to each interrupt
    /// and one to an interrupt it never raised must end with `RUN_ERROR`.
    InterruptsUnknown,
    /// `interrupts-replay`: a resume replayed after it was answered (the same entries
    /// on the next run) must end with `RUN_ERROR`, never run twice.
    InterruptsReplay,
    /// `interrupts-no-resume`: a run without `resume` on a paused thread must end
    /// with `RUN_ERROR`.
    InterruptsNoResume,
    /// `invalid-input`: bodies that are not a valid `RunAgentInput` must get a 4xx
    /// with a body, never a 200 event stream.
    InvalidInput,
    /// `content-negotiation`: `Accept: text/event-stream` gets `text/event-stream`;
    /// protobuf, when the agent offers it, decodes to the same events.
    ContentNegotiation,
    /// `hang-up`: the client hangs up mid-stream; the next run must still work.
    HangUp,
    /// `protocol-version`: the producer declares its version in `RUN_STARTED`, and
    /// answers a client that declares none or an older one.
    ProtocolVersion,
    /// `capabilities`: when `GET URL` answers JSON, it must be a valid capabilities
    /// object.
    Capabilities,
    /// `resumable`: when the capabilities advertise resumable runs, a client that
    /// re-attaches with `Last-Event-ID` gets the rest of the run. Not exercised when
    /// the run ended before the client hung up.
    Resumable,
}

impl Scenario {
    /// Every scenario, in the order a check runs them.
    pub const ALL: [Scenario; 13] = [
        Scenario::Chat,
        Scenario::FrontendTool,
        Scenario::State,
        Scenario::Interrupts,
        Scenario::InterruptsUnknown,
        Scenario::InterruptsReplay,
        Scenario::InterruptsNoResume,
        Scenario::InvalidInput,
        Scenario::ContentNegotiation,
        Scenario::HangUp,
        Scenario::ProtocolVersion,
        Scenario::Capabilities,
        Scenario::Resumable,
    ];

    /// The scenario's stable id.
    pub fn id(self) -> &'static str {
        match self {
            Scenario::Chat => "chat",
            Scenario::FrontendTool => "frontend-tool",
            Scenario::State => "state",
            Scenario::Interrupts => "interrupts",
            Scenario::InterruptsUnknown => "interrupts-unknown",
            Scenario::InterruptsReplay => "interrupts-replay",
            Scenario::InterruptsNoResume => "interrupts-no-resume",
            Scenario::InvalidInput => "invalid-input",
            Scenario::ContentNegotiation => "content-negotiation",
            Scenario::HangUp => "hang-up",
            Scenario::ProtocolVersion => "protocol-version",
            Scenario::Capabilities => "capabilities",
            Scenario::Resumable => "resumable",
        }
    }

    /// The scenario with this id.
    pub fn from_id(id: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.id() == id)
    }

    pub(crate) async fn run(self, checker: &Checker, discovery: &Discovery) -> ScenarioReport {
        let mut cx = Ctx::new(checker);
        cx.declared_tools = discovery
            .capabilities
            .as_ref()
            .and_then(|c| c.tools.as_ref())
            .and_then(|t| t.items.as_ref())
            .map(|items| items.iter().map(|t| t.name.clone()).collect())
            .unwrap_or_default();
        let limit = checker.scenario_limit();
        let scenario = async {
            match self {
                Scenario::Chat => runs::chat(&mut cx).await,
                Scenario::FrontendTool => runs::frontend_tool(&mut cx).await,
                Scenario::State => runs::state(&mut cx).await,
                Scenario::Interrupts => runs::interrupts(&mut cx, discovery).await,
                Scenario::InterruptsUnknown => runs::interrupts_unknown(&mut cx, discovery).await,
                Scenario::InterruptsReplay => runs::interrupts_replay(&mut cx, discovery).await,
                Scenario::InterruptsNoResume => {
                    runs::interrupts_no_resume(&mut cx, discovery).await
                }
                Scenario::InvalidInput => transport::invalid_input(&mut cx).await,
                Scenario::ContentNegotiation => transport::negotiation(&mut cx, discovery).await,
                Scenario::HangUp => runs::hang_up(&mut cx).await,
                Scenario::ProtocolVersion => runs::protocol_version(&mut cx).await,
                Scenario::Capabilities => capabilities::check(&mut cx, discovery),
                Scenario::Resumable => transport::resumable(&mut cx, discovery).await,
            }
        };
        let ran = tokio::time::timeout(limit, scenario).await;
        let skipped = match ran {
            Ok(skipped) => skipped,
            Err(_) => {
                cx.find(
                    "transport/stall",
                    Level::Error,
                    None,
                    format!(
                        "the scenario did not end within {} (the scenario deadline): stopped",
                        crate::exchange::secs(limit)
                    ),
                );
                None
            }
        };
        ScenarioReport {
            id: self.id(),
            not_exercised: if skipped.is_some() {
                None
            } else {
                cx.not_exercised
            },
            skipped,
            requests: cx.requests,
            findings: cx.findings,
            repeated: Vec::new(),
        }
    }
}

/// A fresh id with a readable prefix.
pub(crate) fn fresh(prefix: &str) -> String {
    format!("agui-sdk-check-{prefix}-{}", uuid::Uuid::new_v4())
}

/// An input on a fresh thread with one user message.
pub(crate) fn chat_input(text: &str) -> RunAgentInput {
    RunAgentInput::new(
        fresh("thread"),
        fresh("run"),
        vec![Message::user(fresh("msg"), text)],
    )
}

/// The next run on `prev`'s thread: its messages, and state, as the reducer left them.
pub(crate) fn next_input(prev: &RunAgentInput, judged: &Judged) -> RunAgentInput {
    let mut next = RunAgentInput::new(
        prev.thread_id.clone(),
        fresh("run"),
        judged.reducer().messages().to_vec(),
    );
    next.tools = prev.tools.clone();
    if let Some(s) = judged.reducer().state() {
        next.state = Some(agui_sdk_core::JsonText::from_value(s));
    }
    next
}

/// A `RUN_ERROR` answering a valid input: a warning where the agent may fail, an
/// error where the run must be accepted.
pub(crate) fn run_error(cx: &mut Ctx<'_>, judged: &Judged, must_succeed: bool) {
    if let Some(m) = &judged.run_error {
        let (level, what) = if must_succeed {
            (Level::Error, "a run that must be accepted")
        } else {
            (Level::Warning, "a valid run")
        };
        cx.find(
            "run/accepted",
            level,
            None,
            format!("the agent answered {what} with RUN_ERROR: {m}"),
        );
    }
}
