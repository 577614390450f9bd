//! The `interrupt` demo: an approval asked with an interrupt, and an effect (sending an
//! email, pretended) done at most once.
//!
//! The runtime that serves the agent (`agui-sdk-server`) keeps the thread's open
//! interrupts and checks every `resume` before the agent starts: a run that leaves the
//! approval unanswered, answers another interrupt, or replays an answer already used,
//! ends with `RUN_ERROR` (codes in [`codes`]) and never reaches the agent. The agent
//! reads only the valid answer, from [`RunContext::answers`].
//!
//! What a resumed run says:
//!
//! | the answer, and what an earlier attempt recorded | the reply |
//! |---|---|
//! | `resolved` with `{"approved": true}`, nothing recorded | "Sending the email…", then [`SENT`] |
//! | `resolved` with `{"approved": false}`, or `cancelled` | [`NOT_SENT`] |
//! | approved, an earlier attempt recorded the email sent | [`ALREADY_SENT`] |
//! | approved, an earlier attempt started sending and stopped | [`SENDING_STOPPED`] |
//!
//! The last two happen when a resumed run fails after the email went out (or while it
//! was going out) and the client sends the same answer again: the runtime released the
//! answer for another attempt, and kept what the failed one recorded
//! ([`Answers::begin_effect`], [`Answers::record_effect`]).

use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, HumanInTheLoopCapabilities, Interrupt, RunAgentInput};
use agui_sdk_server::agui_sdk_agent::interrupts::{codes, Effect};
use agui_sdk_server::agui_sdk_agent::{Answer, Answers};
use agui_sdk_server::{agent_fn, Agent, AgentError, AgentStream, FnAgent};
use agui_sdk_server::{Emitter, RunContext};
use serde_json::{json, Value};

use super::{id, words};

/// The reply when the email is sent.
pub(crate) const SENT: &str = "Approved: the email is sent.";

/// The reply when the answer does not approve (`approved: false`, or `cancelled`).
pub(crate) const NOT_SENT: &str = "Not approved: nothing was sent.";

/// The reply when an earlier attempt of the resumed run recorded the email sent: it
/// is not sent again.
pub(crate) const ALREADY_SENT: &str =
    "Approved: the email was already sent by an earlier attempt; it is not sent again.";

/// The reply when an earlier attempt started sending the email and stopped before it
/// recorded the end: whether it went out is unknown, and it is not sent again.
pub(crate) const SENDING_STOPPED: &str =
    "Approved, but an earlier attempt was sending the email when it stopped; it is not sent again.";

/// The interrupt's `reason`.
pub(crate) const REASON: &str = "tool_approval";

/// The `interrupt` demo: asks for approval by finishing with an interrupt outcome (its
/// `responseSchema` is `{"approved": boolean}`); the next run on the thread answers it
/// with a `resume` entry, and the email is sent at most once (see the module's table).
pub struct InterruptAgent {
    inner: FnAgent,
}

impl std::fmt::Debug for InterruptAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterruptAgent").finish_non_exhaustive()
    }
}

impl InterruptAgent {
    /// The agent, pausing `delay` between streamed pieces (and as long while the email
    /// is being sent).
    pub fn new(delay: Duration) -> Self {
        let inner = agent_fn(move |input, ctx, tx| async move {
            let answers = ctx.answers().clone();
            match answers.iter().next() {
                Some(answer) => complete(&input, &answers, answer, &tx, delay).await,
                None => ask(&input, &tx, delay).await,
            }
        })
        .with_capabilities(
            AgentCapabilities::default()
                .with_description("Finishes with an interrupt; the next run's resume completes it.")
                .with_human_in_the_loop(HumanInTheLoopCapabilities::interrupts().with_approvals()),
        );
        InterruptAgent { inner }
    }
}

/// The approval asked of the user.
fn approval(interrupt_id: &str) -> Interrupt {
    Interrupt::new(interrupt_id, REASON)
        .with_message("Send the email to team@example.com?")
        .with_response_schema(json!({
            "type": "object",
            "properties": { "approved": { "type": "boolean" } },
            "required": ["approved"],
        }))
}

/// A first run (nothing answered): asks for approval.
async fn ask(input: &RunAgentInput, tx: &Emitter, delay: Duration) -> Result<(), AgentError> {
    if let Some(entry) = input.resume.as_deref().unwrap_or_default().first() {
        // Answers reach the agent only through a runtime that checked them.
        return Err(AgentError::public(format!(
            "resume answers interrupt '{}', but no runtime checked it: serve this agent \
             with agui-sdk-server, which keeps the thread's interrupts",
            entry.interrupt_id
        ))
        .with_code(codes::UNKNOWN));
    }
    tx.text_message(
        &id(input, "ask"),
        words("I need your approval before sending the email."),
        delay,
    )
    .await?;
    tx.finish_with_interrupts(vec![approval(&id(input, "approval"))])
        .await
}

/// A resumed run: sends the email when approved, at most once.
async fn complete(
    input: &RunAgentInput,
    answers: &Answers,
    answer: &Answer,
    tx: &Emitter,
    delay: Duration,
) -> Result<(), AgentError> {
    let approved = answer
        .parse::<Value>()?
        .and_then(|v| v.get("approved").and_then(Value::as_bool))
        .unwrap_or(false);
    let reply = if !approved {
        NOT_SENT
    } else {
        match answer.effect() {
            Effect::Done(_) => ALREADY_SENT,
            Effect::Started => SENDING_STOPPED,
            _ => {
                // Recorded before it starts: an attempt that dies while sending leaves
                // `Effect::Started`, and the next one does not send again.
                answers.begin_effect(answer.id()).await?;
                tx.text_message(&id(input, "sending"), ["Sending the email…"], delay)
                    .await?;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                answers
                    .record_effect(
                        answer.id(),
                        json!({ "sent": true, "to": "team@example.com" }).to_string(),
                    )
                    .await?;
                SENT
            }
        }
    };
    tx.text_message(&id(input, "done"), words(reply), delay)
        .await
}

impl Agent for InterruptAgent {
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream {
        self.inner.run(input, ctx)
    }

    fn capabilities(&self) -> AgentCapabilities {
        self.inner.capabilities()
    }
}
