use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agui_sdk_core::{
    AgentCapabilities, HumanInTheLoopCapabilities, IdentityCapabilities, Interrupt, ResumeStatus,
    RunAgentInput,
};
use serde_json::{json, Value};

use super::{id, words};
use agui_sdk_server::AgentError;
use agui_sdk_server::RunContext;
use agui_sdk_server::{agent_fn, Agent, AgentStream, FnAgent};

/// Threads remembered with an open interrupt, at most (the oldest is forgotten first).
const MAX_THREADS: usize = 10_000;

/// Open interrupts per thread.
#[derive(Debug, Default)]
struct Pending {
    by_thread: HashMap<String, Vec<String>>,
    order: VecDeque<String>,
}

impl Pending {
    fn insert(&mut self, thread: &str, ids: Vec<String>) {
        if self.by_thread.insert(thread.to_owned(), ids).is_none() {
            self.order.push_back(thread.to_owned());
        }
        while self.order.len() > MAX_THREADS {
            if let Some(old) = self.order.pop_front() {
                self.by_thread.remove(&old);
            }
        }
    }

    fn take(&mut self, thread: &str) -> Option<Vec<String>> {
        let ids = self.by_thread.remove(thread)?;
        self.order.retain(|t| t != thread);
        Some(ids)
    }

    fn get(&self, thread: &str) -> Option<&Vec<String>> {
        self.by_thread.get(thread)
    }
}

/// The `interrupt` demo: asks for approval by finishing with an interrupt outcome; the
/// next run on the thread must answer it with a `resume` entry. It remembers open
/// interrupts per thread in memory (at most 10,000 threads).
pub struct InterruptAgent {
    inner: FnAgent,
}

impl std::fmt::Debug for InterruptAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterruptAgent").finish_non_exhaustive()
    }
}

impl InterruptAgent {
    /// The agent, pausing `delay` between streamed pieces.
    pub fn new(delay: Duration) -> Self {
        let pending = Arc::new(Mutex::new(Pending::default()));
        let inner = agent_fn(move |input, _ctx, tx| {
            let pending = pending.clone();
            async move {
                let plan = decide(&pending, &input)?;
                match plan {
                    Plan::Ask(interrupt_id) => {
                        tx.text_message(
                            &id(&input, "ask"),
                            words("I need your approval before sending the email."),
                            delay,
                        )
                        .await?;
                        let mut interrupt = Interrupt::new(&interrupt_id, "tool_approval");
                        interrupt.message = Some("Send the email to team@example.com?".into());
                        interrupt.response_schema = match json!({
                            "type": "object",
                            "properties": { "approved": { "type": "boolean" } },
                        }) {
                            Value::Object(o) => Some(o),
                            _ => None,
                        };
                        // Record before emitting: the run ends with this event.
                        lock(&pending).insert(&input.thread_id, vec![interrupt_id]);
                        tx.finish_with_interrupts(vec![interrupt]).await?;
                    }
                    Plan::Complete(text) => {
                        tx.text_message(&id(&input, "done"), words(&text), delay)
                            .await?;
                    }
                }
                Ok(())
            }
        })
        .with_capabilities(AgentCapabilities {
            identity: Some(IdentityCapabilities {
                description: Some(
                    "Finishes with an interrupt; the next run's resume completes it.".into(),
                ),
                ..Default::default()
            }),
            human_in_the_loop: Some(HumanInTheLoopCapabilities {
                supported: Some(true),
                approvals: Some(true),
                interrupts: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        });
        InterruptAgent { inner }
    }
}

enum Plan {
    Ask(String),
    Complete(String),
}

fn lock(p: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

fn decide(pending: &Mutex<Pending>, input: &RunAgentInput) -> Result<Plan, AgentError> {
    let resume = input.resume.as_deref().unwrap_or_default();
    let mut p = lock(pending);
    let Some(open) = p.get(&input.thread_id).cloned() else {
        if let Some(r) = resume.first() {
            return Err(AgentError::public(format!(
                "resume answers interrupt '{}', but no interrupt is open on thread '{}'",
                r.interrupt_id, input.thread_id
            ))
            .with_code("unknown_interrupt"));
        }
        return Ok(Plan::Ask(id(input, "approval")));
    };
    let missing: Vec<&str> = open
        .iter()
        .filter(|i| !resume.iter().any(|r| &r.interrupt_id == *i))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(AgentError::public(format!(
            "interrupt {} is still unanswered: continue this thread with a run whose \
             `resume` answers it (status resolved or cancelled)",
            missing
                .iter()
                .map(|m| format!("'{m}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .with_code("interrupt_unanswered"));
    }
    if let Some(extra) = resume.iter().find(|r| !open.contains(&r.interrupt_id)) {
        return Err(AgentError::public(format!(
            "resume answers interrupt '{}', which is not open on this thread",
            extra.interrupt_id
        ))
        .with_code("unknown_interrupt"));
    }
    p.take(&input.thread_id);
    let approved = resume.iter().all(|r| {
        r.status == ResumeStatus::Resolved
            && r.payload
                .as_ref()
                .map(|v| v.to_value())
                .and_then(|v| v.get("approved").and_then(Value::as_bool))
                .unwrap_or(true)
    });
    Ok(Plan::Complete(if approved {
        "Approved: the email is sent.".to_owned()
    } else {
        "Not approved: nothing was sent.".to_owned()
    }))
}

impl Agent for InterruptAgent {
    fn run(&self, input: RunAgentInput, ctx: RunContext) -> AgentStream {
        self.inner.run(input, ctx)
    }

    fn capabilities(&self) -> AgentCapabilities {
        self.inner.capabilities()
    }
}
