//! Deterministic demo agents, one per AG-UI feature (no model, no network). Each is
//! mounted at `POST /{name}` by [`router`], and served through the CopilotKit runtime
//! by [`copilot_runtime`] ([`app`] does both); ids are derived from the run id, so every
//! run of a thread gets fresh message and tool call ids.
//!
//! | name | shows |
//! |---|---|
//! | `agentic_chat` | a streamed text reply; answers a tool result when the last message is one |
//! | `backend_tool_rendering` | a tool the agent runs itself: call, result, then a reply |
//! | `human_in_the_loop` | a frontend tool call whose JSON arguments stream in small partial pieces; answers the tool result on the next run |
//! | `agentic_generative_ui` | a state snapshot of planned steps, then one JSON Patch delta per step |
//! | `tool_based_generative_ui` | a frontend tool call the client renders (a haiku) |
//! | `shared_state` | reads the state the client sent and publishes its update as a delta |
//! | `predictive_state_updates` | a `PredictState` custom event, tool arguments the client can preview, then the state delta |
//! | `reasoning` | a reasoning span with a streamed reasoning message and an encrypted value |
//! | `subagents` | a subagent invocation whose events carry its attribution |
//! | `interrupt` | finishes with an interrupt outcome; the next run's `resume` completes it |
//!
//! The agents stay within the 1.0 schema and the stricter checks of common
//! conformance validators: `TOOL_CALL_RESULT` content is a string, results only
//! answer calls started in the same run, tool arguments are valid JSON once complete,
//! and no message id is used twice.

use std::time::Duration;

use agui_sdk_core::{Content, Event, Message, RunAgentInput};

use std::sync::Arc;

use agui_sdk_server::copilotkit::CopilotRuntime;
use agui_sdk_server::runs::Resumable;
use agui_sdk_server::Agent;
use agui_sdk_server::Shutdown;
use agui_sdk_server::{AgentRouter, ServerConfig};

mod agentic_chat;
mod agentic_generative_ui;
mod backend_tool_rendering;
mod human_in_the_loop;
mod interrupt;
mod predictive_state_updates;
mod reasoning;
mod shared_state;
mod subagents;
mod suggest;
mod tool_based_generative_ui;

pub use interrupt::InterruptAgent;

/// The demo agents' names, in listing order.
pub const NAMES: [&str; 10] = [
    "agentic_chat",
    "backend_tool_rendering",
    "human_in_the_loop",
    "agentic_generative_ui",
    "tool_based_generative_ui",
    "shared_state",
    "predictive_state_updates",
    "reasoning",
    "subagents",
    "interrupt",
];

/// `agent`, answering CopilotKit's suggestion runs itself (see [`SUGGEST_TOOL`]).
fn suggesting(agent: impl Agent) -> Arc<dyn Agent> {
    Arc::new(suggest::Suggesting(Arc::new(agent)))
}

pub use suggest::SUGGEST_TOOL;

/// Every demo agent, by name, in listing order; `delay` is the pause between streamed
/// pieces (zero for tests). Each answers a CopilotKit suggestion run (one that names
/// [`SUGGEST_TOOL`] in `forwardedProps.toolChoice`) with a call of that tool.
pub fn agents(delay: Duration) -> Vec<(&'static str, Arc<dyn Agent>)> {
    vec![
        ("agentic_chat", suggesting(agentic_chat::agent(delay))),
        (
            "backend_tool_rendering",
            suggesting(backend_tool_rendering::agent(delay)),
        ),
        (
            "human_in_the_loop",
            suggesting(human_in_the_loop::agent(delay)),
        ),
        (
            "agentic_generative_ui",
            suggesting(agentic_generative_ui::agent(delay)),
        ),
        (
            "tool_based_generative_ui",
            suggesting(tool_based_generative_ui::agent(delay)),
        ),
        ("shared_state", suggesting(shared_state::agent(delay))),
        (
            "predictive_state_updates",
            suggesting(predictive_state_updates::agent(delay)),
        ),
        ("reasoning", suggesting(reasoning::agent(delay))),
        ("subagents", suggesting(subagents::agent(delay))),
        ("interrupt", suggesting(InterruptAgent::new(delay))),
    ]
}

/// Adds every demo agent to `router`; `delay` is the pause between streamed pieces
/// (zero for tests).
pub fn mount(router: AgentRouter, delay: Duration) -> AgentRouter {
    agents(delay)
        .into_iter()
        .fold(router, |r, (name, agent)| r.shared_agent(name, agent))
}

/// A router with every demo agent (see [`mount`]).
pub fn router(delay: Duration) -> AgentRouter {
    mount(AgentRouter::new(), delay)
}

/// The CopilotKit runtime over every demo agent, with `default` = `agentic_chat`.
pub fn copilot_runtime(delay: Duration) -> CopilotRuntime {
    agents(delay)
        .into_iter()
        .fold(CopilotRuntime::new(), |r, (name, agent)| {
            r.shared_agent(name, agent)
        })
        .default_agent("agentic_chat")
}

/// Both at once, sharing the agents: the demo routes at `/{name}` (resumable when
/// `resumable` is given) and the CopilotKit runtime at `/copilotkit`, with one
/// configuration and shutdown switch.
pub fn app(
    delay: Duration,
    config: ServerConfig,
    shutdown: Shutdown,
    resumable: Option<Resumable>,
) -> agui_sdk_server::axum::Router {
    app_with(delay, config, shutdown, resumable, None, None)
}

/// As [`app`], with one more agent served beside the demo agents (both at `/{name}`
/// and through the runtime), and the CopilotKit runtime configured from `copilot`
/// (its store, replica and lease; default [`CopilotRuntime::new`]): the demo agents,
/// `config` and `shutdown` are added to it.
pub fn app_with(
    delay: Duration,
    config: ServerConfig,
    shutdown: Shutdown,
    resumable: Option<Resumable>,
    extra: Option<(&str, Arc<dyn Agent>)>,
    copilot: Option<CopilotRuntime>,
) -> agui_sdk_server::axum::Router {
    let mut agents: Vec<(&str, Arc<dyn Agent>)> = agents(delay);
    if let Some(extra) = extra {
        agents.push(extra);
    }
    let mut plain = agents
        .iter()
        .fold(AgentRouter::new(), |r, (name, agent)| {
            r.shared_agent(name, agent.clone())
        })
        .config(config.clone())
        .shutdown(shutdown.clone());
    if let Some(r) = resumable {
        plain = plain.resumable(r);
    }
    let runtime = agents
        .into_iter()
        .fold(copilot.unwrap_or_default(), |r, (name, agent)| {
            r.shared_agent(name, agent)
        })
        .default_agent("agentic_chat")
        .config(config)
        .shutdown(shutdown);
    plain
        .into_router()
        .nest("/copilotkit", runtime.into_router())
}

/// The most of a user's text or a tool result a reply quotes (a huge message must not
/// become a reply of a million events).
pub const MAX_QUOTE_CHARS: usize = 500;

/// The largest state (as JSON text) or tool result the demo agents read and echo: a
/// larger state ends the run with `RUN_ERROR` code `state_too_large`, a larger tool
/// result is only quoted in part.
pub const MAX_ECHO_BYTES: usize = 64 * 1024;

/// `text`, cut after [`MAX_QUOTE_CHARS`] characters (with `…`).
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The state the client sent, when it is small enough to be echoed (see
/// [`MAX_ECHO_BYTES`]); `null` when it sent none.
fn client_state(input: &RunAgentInput) -> Result<serde_json::Value, agui_sdk_server::AgentError> {
    match &input.state {
        Some(s) if s.len() > MAX_ECHO_BYTES => Err(agui_sdk_server::AgentError::public(format!(
            "the demo agents read a state of at most {MAX_ECHO_BYTES} bytes of JSON; this one has {}",
            s.len()
        ))
        .with_code("state_too_large")),
        Some(s) => Ok(s.to_value()),
        None => Ok(serde_json::Value::Null),
    }
}

/// An id unique to this run.
fn id(input: &RunAgentInput, suffix: &str) -> String {
    format!("{}-{suffix}", input.run_id)
}

/// The text of the last user message, if any.
fn last_user_text(input: &RunAgentInput) -> Option<String> {
    input.messages.iter().rev().find_map(|m| match m {
        Message::User(u) => Some(u.content.to_text()),
        _ => None,
    })
}

/// The content of the last message when it is a tool result.
fn trailing_tool_result(input: &RunAgentInput) -> Option<&Content> {
    match input.messages.last() {
        Some(Message::Tool(t)) => Some(&t.content),
        _ => None,
    }
}

/// Splits a reply into word pieces (each keeps its trailing space).
fn words(text: &str) -> Vec<String> {
    // Sized at once: a word per space, and the last.
    let mut words = Vec::with_capacity(text.bytes().filter(|&b| b == b' ').count() + 1);
    words.extend(text.split_inclusive(' ').map(str::to_owned));
    words
}

/// Splits JSON text into small pieces, so that partial arguments stream.
fn json_pieces(value: &serde_json::Value, size: usize) -> Vec<String> {
    agui_sdk_server::agui_sdk_agent::builders::split_pieces(&value.to_string(), size)
}

/// Marks `event` as produced by the subagent invocation `subagent_run_id`.
fn attribute(mut event: Event, subagent_run_id: &str) -> Event {
    let tag = Some(subagent_run_id.to_owned());
    match &mut event {
        Event::TextMessageStart(e) => e.subagent_run_id = tag,
        Event::TextMessageContent(e) => e.subagent_run_id = tag,
        Event::TextMessageEnd(e) => e.subagent_run_id = tag,
        Event::ToolCallStart(e) => e.subagent_run_id = tag,
        Event::ToolCallArgs(e) => e.subagent_run_id = tag,
        Event::ToolCallEnd(e) => e.subagent_run_id = tag,
        Event::ToolCallResult(e) => e.subagent_run_id = tag,
        Event::StepStarted(e) => e.subagent_run_id = tag,
        Event::StepFinished(e) => e.subagent_run_id = tag,
        _ => {}
    }
    event
}

#[cfg(test)]
mod tests;
