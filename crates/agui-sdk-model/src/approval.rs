//! Approvals of server-side tools: which calls wait for a user's answer
//! ([`Approval`]), the interrupt a run ends with when the model makes one, and what a
//! resumed run does with the answers before it calls the model again.

use std::fmt;
use std::sync::Arc;

use agui_sdk_agent::interrupts::{codes, Effect};
use agui_sdk_agent::{AgentError, Answer, Emitter, RunContext};
use agui_sdk_core::event::ToolCallResult;
use agui_sdk_core::semantics::patch::Patcher;
use agui_sdk_core::{Content, Event, Interrupt, Message, RunAgentInput};
use serde_json::{json, Value};

use crate::provider::{MadeCall, ToolSpec};
use crate::{apply_patch, fail, run_tool, Config};

/// The `reason` of the interrupt raised for a call waiting for approval.
pub const APPROVAL_REASON: &str = "tool_call";

/// The most characters of a call's arguments quoted in its interrupt's `message`.
const MAX_QUOTED_ARGUMENTS: usize = 2_000;

/// Which calls of a tool wait for a user's approval before they run
/// ([`ModelAgentBuilder::approve_tool`](crate::ModelAgentBuilder::approve_tool)).
#[derive(Clone)]
#[non_exhaustive]
pub enum Approval {
    /// Every call.
    Always,
    /// The calls whose arguments (parsed JSON; `{}` for none) the function answers
    /// `true` for; the others run at once. Arguments that are not JSON always wait.
    When(Arc<dyn Fn(&Value) -> bool + Send + Sync>),
}

impl Approval {
    /// The calls whose arguments `needed` answers `true` for wait for approval; the
    /// others run at once.
    pub fn when<F>(needed: F) -> Self
    where
        F: Fn(&Value) -> bool + Send + Sync + 'static,
    {
        Approval::When(Arc::new(needed))
    }

    /// Whether a call with `arguments` (as the model wrote them) waits for approval.
    pub fn is_needed(&self, arguments: &str) -> bool {
        match self {
            Approval::Always => true,
            Approval::When(needed) => match parse_arguments(arguments) {
                Ok(args) => needed(&args),
                Err(_) => true,
            },
        }
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Approval::Always => f.write_str("Always"),
            Approval::When(_) => f.write_str("When(..)"),
        }
    }
}

/// A call's arguments as JSON (`{}` for none).
pub(crate) fn parse_arguments(arguments: &str) -> Result<Value, serde_json::Error> {
    if arguments.trim().is_empty() {
        Ok(json!({}))
    } else {
        serde_json::from_str(arguments)
    }
}

/// The interrupt's id for the call `tool_call_id`.
pub(crate) fn interrupt_id(tool_call_id: &str) -> String {
    format!("approve-{tool_call_id}")
}

/// The schema of an approval's answer.
fn response_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approved": { "type": "boolean" },
            "editedArgs": { "type": "object" }
        },
        "required": ["approved"]
    })
}

/// The interrupt asking whether `call` may run.
pub(crate) fn interrupt_for(call: &MadeCall) -> Interrupt {
    let mut quoted: String = call.arguments.chars().take(MAX_QUOTED_ARGUMENTS).collect();
    if quoted.len() < call.arguments.len() {
        quoted.push('…');
    }
    Interrupt::new(interrupt_id(&call.id), APPROVAL_REASON)
        .with_message(format!(
            "Run the tool {:?} with the arguments {quoted}?",
            call.name
        ))
        .with_tool_call_id(call.id.clone())
        .with_response_schema(response_schema())
}

/// An approval's answer.
#[derive(serde::Deserialize)]
struct Decision {
    approved: bool,
    #[serde(default, rename = "editedArgs")]
    edited_args: Option<Value>,
}

/// What to do with one answered call.
enum Step {
    /// Give the model this result without running anything.
    Answer(Content),
    /// Run the call (its arguments possibly edited) as the answer `interrupt` allows.
    Run { call: MadeCall, interrupt: String },
}

/// The result the model gets for a call the user declined.
const DECLINED: &str = "the user declined this tool call: it was not run";
/// The result the model gets for a call whose approval was cancelled.
const CANCELLED: &str = "the user cancelled the approval of this tool call: it was not run";
/// The result the model gets for a call an earlier attempt started and did not finish.
const UNKNOWN: &str = "the outcome of this tool call is unknown: an earlier attempt started it after the user approved it and did not finish, and it was not run again";

/// What a resumed run does with the approvals it answers, before the model is called:
/// each answered call's result (run now, recorded by an earlier attempt, or declined)
/// goes out as `TOOL_CALL_RESULT` and takes the place of any result the client sent
/// for the call in `input.messages`. Edited arguments are checked against the tool's
/// schema before anything runs.
pub(crate) async fn resume(
    config: &Config,
    input: &mut RunAgentInput,
    tools: &Tools<'_>,
    state: &mut Value,
    patcher: &mut Patcher,
    ctx: &RunContext,
    tx: &Emitter,
) -> Result<(), AgentError> {
    let answers = ctx.answers().clone();
    let mut steps = Vec::new();
    for answer in answers.iter() {
        let Some(call) = answered_call(answer, &input.messages) else {
            continue;
        };
        let call_id = call.id.clone();
        steps.push((call_id, decide(answer, call, tools.specs)?));
    }
    for (call_id, step) in steps {
        let content = match step {
            Step::Answer(content) => content,
            Step::Run { call, interrupt } => {
                answers.begin_effect(&interrupt).await?;
                let (content, patch) = tools.run(config, &call, state, input, ctx, tx).await?;
                let recorded = serde_json::to_string(&content)
                    .map_err(|e| AgentError::internal(e).with_code("internal"))?;
                answers.record_effect(&interrupt, recorded).await?;
                if let Some(patch) = patch {
                    apply_patch(patcher, state, patch, &call.name, tx).await?;
                }
                content
            }
        };
        put_result(&mut input.messages, &call_id, content.clone());
        tx.emit(Event::from(ToolCallResult::new(
            format!("{call_id}-result"),
            call_id,
            content,
        )))
        .await?;
    }
    Ok(())
}

/// The call an approval answers, from the assistant messages the client sent back;
/// `None` for another kind of answer, or a call the client did not send back.
fn answered_call(answer: &Answer, messages: &[Message]) -> Option<MadeCall> {
    let interrupt = answer.interrupt();
    if interrupt.reason != APPROVAL_REASON {
        return None;
    }
    let id = interrupt.tool_call_id.as_deref()?;
    let found = messages.iter().find_map(|m| match m {
        Message::Assistant(a) => {
            a.tool_calls
                .as_ref()?
                .iter()
                .find(|c| c.id == id)
                .map(|c| MadeCall {
                    id: c.id.clone(),
                    name: c.function.name.clone(),
                    arguments: c.function.arguments.clone(),
                })
        }
        _ => None,
    });
    if found.is_none() {
        tracing::warn!(tool_call_id = %agui_sdk_core::Escaped(id), "an approval answers a tool call the run's messages do not have");
    }
    found
}

/// What the answer to `call` asks for.
fn decide(answer: &Answer, mut call: MadeCall, tools: &[ToolSpec]) -> Result<Step, AgentError> {
    let Some(decision) = answer.parse::<Decision>()? else {
        return Ok(Step::Answer(Content::from(CANCELLED)));
    };
    if !decision.approved {
        return Ok(Step::Answer(Content::from(DECLINED)));
    }
    match answer.effect() {
        Effect::Done(recorded) => {
            let content = serde_json::from_str::<Content>(recorded)
                .unwrap_or_else(|_| Content::from(recorded.clone()));
            return Ok(Step::Answer(content));
        }
        Effect::Started => return Ok(Step::Answer(Content::from(UNKNOWN))),
        _ => {}
    }
    if let Some(edited) = decision.edited_args {
        if let Some(spec) = tools.iter().find(|t| t.name == call.name) {
            check_arguments(&call, spec, &edited)?;
        }
        call.arguments = edited.to_string();
    }
    Ok(Step::Run {
        call,
        interrupt: answer.id().to_owned(),
    })
}

/// Checks edited arguments against the tool's JSON Schema; the error names the first
/// failing path.
fn check_arguments(call: &MadeCall, spec: &ToolSpec, args: &Value) -> Result<(), AgentError> {
    let validator = match jsonschema::validator_for(&spec.parameters) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(tool = %agui_sdk_core::Escaped(&call.name), error = %e, "a tool's schema cannot check edited arguments");
            return Ok(());
        }
    };
    let Some(error) = validator.iter_errors(args).next() else {
        return Ok(());
    };
    let path = error.instance_path().to_string();
    let path = if path.is_empty() {
        "/".to_owned()
    } else {
        path
    };
    Err(fail(
        format!(
            "the edited arguments of tool call {} ({}) do not match the tool's schema at {path}: {error}",
            call.id, call.name
        ),
        codes::INVALID_PAYLOAD,
    ))
}

/// Puts `content` as the one result of `call_id` in `messages`: any result the client
/// sent for it goes, and the result follows the assistant message with the call (and
/// the results already after it).
fn put_result(messages: &mut Vec<Message>, call_id: &str, content: Content) {
    messages.retain(|m| !matches!(m, Message::Tool(t) if t.tool_call_id == call_id));
    let owner = messages.iter().position(|m| match m {
        Message::Assistant(a) => a
            .tool_calls
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c.id == call_id)),
        _ => false,
    });
    let result = Message::tool(format!("{call_id}-result"), call_id, content);
    match owner {
        Some(i) => {
            let mut at = i + 1;
            while matches!(messages.get(at), Some(Message::Tool(_))) {
                at += 1;
            }
            messages.insert(at, result);
        }
        None => messages.push(result),
    }
}

/// Keeps one result per tool call, the last one: a client that added a result for a
/// call waiting for approval (as CopilotKit does before it resumes) and then got the
/// agent's has two, and the model must get one.
pub(crate) fn dedupe_results(messages: &mut Vec<Message>) {
    let mut seen = std::collections::HashSet::new();
    let mut keep = vec![true; messages.len()];
    for (i, m) in messages.iter().enumerate().rev() {
        if let Message::Tool(t) = m {
            if !seen.insert(t.tool_call_id.clone()) {
                keep[i] = false;
            }
        }
    }
    let mut flags = keep.into_iter();
    messages.retain(|_| flags.next().unwrap_or(true));
}

/// The tools a resumed run may run: the agent's own and, with the feature `mcp`, those
/// its MCP servers offer in this run.
pub(crate) struct Tools<'a> {
    /// Every server-side tool offered to the model in this run, MCP tools among them.
    pub specs: &'a [ToolSpec],
    /// The MCP tools offered in this run.
    #[cfg(feature = "mcp")]
    pub mcp: &'a [crate::mcp::Offered],
}

impl Tools<'_> {
    /// Runs `call`: its result and the state change it asks for.
    async fn run(
        &self,
        config: &Config,
        call: &MadeCall,
        state: &Value,
        input: &RunAgentInput,
        ctx: &RunContext,
        tx: &Emitter,
    ) -> Result<(Content, Option<Vec<agui_sdk_core::types::PatchOperation>>), AgentError> {
        #[cfg(feature = "mcp")]
        if let (Some(sources), Some(tool)) =
            (&config.mcp, self.mcp.iter().find(|t| t.name == call.name))
        {
            let out = sources.call(tool, &call.id, &call.arguments, tx).await?;
            return Ok((out.content, None));
        }
        #[cfg(not(feature = "mcp"))]
        let _ = tx;
        let out = run_tool(config, call, state, input, ctx).await;
        Ok((Content::from(out.content), out.state_patch))
    }
}
