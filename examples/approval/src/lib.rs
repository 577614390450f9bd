//! An agent that asks the user's approval before a side effect, and a client that
//! answers it: the interrupt flow of AG-UI end to end (see `docs/interrupts.md`).
//!
//! ```text
//! cargo run -p approval-example --bin server            # serves POST http://127.0.0.1:8000/approval
//! cargo run -p approval-example --bin client -- yes     # asks, approves, resumes
//! cargo run -p approval-example --bin client -- no      # asks, declines, resumes
//! ```
//!
//! The pretend side effect is deleting old backups: the agent asks first (the run
//! finishes with an interrupt outcome), the client answers in the next run's `resume`,
//! and the agent deletes them only when approved, at most once (the server's runtime
//! keeps the answer's effect with the interrupt, so an attempt after a failure does
//! not delete again).

use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agui_sdk_client::agui_sdk_core::semantics::RunOutcome;
use agui_sdk_client::prelude::{Conversation, HttpAgent, Message, ResumeEntry, RunParams};
use agui_sdk_server::agui_sdk_agent::interrupts::Effect;
use agui_sdk_server::agui_sdk_core::{AgentCapabilities, HumanInTheLoopCapabilities};
use agui_sdk_server::prelude::{agent_fn, json, AgentRouter, Interrupt};
use agui_sdk_server::FnAgent;

/// The interrupt's `reason`.
pub const REASON: &str = "approval";

/// The agent's name: it is served at `POST /approval`.
pub const AGENT: &str = "approval";

/// The answer the agent expects.
#[derive(Debug, serde::Deserialize)]
struct Decision {
    approved: bool,
}

/// The agent. `deletions` counts the times the pretend side effect ran (a test reads
/// it; the binary only prints it).
pub fn agent(deletions: Arc<AtomicUsize>) -> FnAgent {
    agent_fn(move |input, ctx, emit| {
        let deletions = deletions.clone();
        async move {
            // The runtime checked the resume before this run started: an answer here
            // answers the interrupt the thread's last run raised, and matches its schema.
            let answers = ctx.answers();
            let Some(answer) = answers.iter().find(|a| a.interrupt().reason == REASON) else {
                emit.text("Three backups are older than 30 days.").await?;
                // A fresh id per ask: an old answer can never answer a new question.
                let ask = Interrupt::new(format!("{}-delete", input.run_id), REASON)
                    .with_message("Delete the 3 backups older than 30 days?")
                    .with_response_schema(json!({
                        "type": "object",
                        "properties": { "approved": { "type": "boolean" } },
                        "required": ["approved"]
                    }));
                return emit.finish_with_interrupts(vec![ask]).await;
            };
            let approved = answer.parse::<Decision>()?.is_some_and(|d| d.approved);
            if !approved {
                emit.text("Nothing was deleted.").await?;
                return Ok(());
            }
            match answer.effect() {
                Effect::Done(_) => {
                    emit.text("The backups were already deleted.").await?;
                }
                Effect::Started => {
                    emit.text("An earlier attempt was deleting the backups when it stopped; check them before trying again.")
                        .await?;
                }
                _ => {
                    answers.begin_effect(answer.id()).await?;
                    deletions.fetch_add(1, Ordering::SeqCst);
                    answers
                        .record_effect(answer.id(), json!({ "deleted": 3 }).to_string())
                        .await?;
                    emit.text("Deleted 3 old backups.").await?;
                }
            }
            Ok(())
        }
    })
    .with_capabilities(
        AgentCapabilities::default()
            .with_description("Asks before it deletes old backups.")
            .with_human_in_the_loop(HumanInTheLoopCapabilities::interrupts().with_approvals()),
    )
}

/// A router serving [`agent`] at `/approval`.
pub fn router(deletions: Arc<AtomicUsize>) -> AgentRouter {
    AgentRouter::new().agent(AGENT, agent(deletions))
}

/// What the client saw: the question asked, and the agent's last reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The interrupt's message.
    pub question: String,
    /// The text of the last assistant message of the resumed run.
    pub reply: String,
}

/// Runs the agent at `url`, reads the interrupt it pauses on, answers it with
/// `approve`, and resumes the thread.
pub async fn ask_and_answer(
    url: &str,
    approve: bool,
) -> Result<Exchange, Box<dyn Error + Send + Sync>> {
    let mut chat = Conversation::new(HttpAgent::builder(url).build()?);
    chat.add_user_message("Clean up the old backups.");
    let first = chat.run_agent(RunParams::new()).await?;
    let RunOutcome::Interrupt { interrupts } = first.outcome else {
        return Err("the agent did not ask for approval".into());
    };
    let Some(ask) = interrupts.first() else {
        return Err("the interrupt outcome lists no interrupt".into());
    };
    let question = ask.message.clone().unwrap_or_default();

    // Every open interrupt is answered in the next run's `resume`.
    let answer = ResumeEntry::resolved(&ask.id, json!({ "approved": approve }));
    let second = chat.run_agent(RunParams::new().resume(answer)).await?;

    let reply = chat
        .new_messages(&second)
        .filter_map(|m| match m {
            Message::Assistant(a) => a.content.clone(),
            _ => None,
        })
        .last()
        .unwrap_or_default();
    Ok(Exchange { question, reply })
}
