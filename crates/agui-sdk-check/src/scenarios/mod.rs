//! The scenarios: what the checker asks the agent, and what each answer must be.

use agui_sdk_core::{Message, RunAgentInput};

use crate::exchange::{Ctx, Judged};
use crate::report::{Level, ScenarioReport};
use crate::{Checker, Discovery};

pub(crate) mod capabilities;
mod runs;
mod transport;

/// One scenario of a check. Each has a stable id (`chat`, `frontend-tool`, …); one
/// that does not apply to the agent is skipped with its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scenario {
    /// `chat`: one user message; the answer must be a valid event stream.
    Chat,
    /// `frontend-tool`: a tool offered in `tools`; if the agent calls it, a second run
    /// answers with a tool message, and that run must be accepted. Calling a tool
    /// that was not offered is not wrong.
    FrontendTool,
    /// `state`: a run with state in its input; every snapshot and delta must apply.
    State,
    /// `interrupts`: when the capabilities advertise interrupts, a run that pauses on
    /// them is resumed with an answer to each, and that run must be accepted.
    Interrupts,
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
    /// re-attaches with `Last-Event-ID` gets the rest of the run.
    Resumable,
}

impl Scenario {
    /// Every scenario, in the order a check runs them.
    pub const ALL: [Scenario; 10] = [
        Scenario::Chat,
        Scenario::FrontendTool,
        Scenario::State,
        Scenario::Interrupts,
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
        let limit = checker.scenario_limit();
        let scenario = async {
            match self {
                Scenario::Chat => runs::chat(&mut cx).await,
                Scenario::FrontendTool => runs::frontend_tool(&mut cx).await,
                Scenario::State => runs::state(&mut cx).await,
                Scenario::Interrupts => runs::interrupts(&mut cx, discovery).await,
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
            skipped,
            requests: cx.requests,
            findings: cx.findings,
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
