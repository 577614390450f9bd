//! `agui run URL`: talk to any AG-UI agent from the terminal.

use std::io::{BufRead, IsTerminal, Write};

use agui_sdk_client::{
    ClientError, Conversation, EventStream, HttpAgent, Middleware, RunParams, RunResult, Subscriber,
};
use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::semantics::{
    enforce_outgoing_input, upgrade_legacy_content, InboundWarning, ProtocolVersion, RunOutcome,
};
use agui_sdk_core::{Escaped, Interrupt, Message, ResumeEntry, RunAgentInput};
use std::time::Duration;

use clap::Args;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::io::CliError;
use crate::render::TerminalRenderer;

/// Arguments of `agui run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The agent's endpoint (`http://127.0.0.1:8000/agentic_chat`).
    pub url: String,
    /// A user message to send.
    #[arg(long)]
    pub message: Option<String>,
    /// The initial state, as JSON.
    #[arg(long)]
    pub state: Option<String>,
    /// The thread id (a fresh one when absent).
    #[arg(long)]
    pub thread: Option<String>,
    /// Ask for protobuf (`Accept: application/vnd.ag-ui.event+proto`) instead of SSE.
    #[arg(long)]
    pub proto: bool,
    /// Print every event as a JSON line, then a final line
    /// `{"messages":[...],"state":...,"outcome":...}`.
    #[arg(long)]
    pub json: bool,
    /// A whole `RunAgentInput` to start from (`-` for standard input): its thread,
    /// run id, messages, state, tools, context and forwarded properties. `--thread`,
    /// `--state` and `--message` are applied on top of it.
    #[arg(long, value_name = "FILE")]
    pub input: Option<String>,
    /// An HTTP header to send, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// A bearer token (`Authorization: Bearer TOKEN`).
    #[arg(long, value_name = "TOKEN")]
    pub bearer: Option<String>,
    /// The newest protocol version the agent speaks (default: this client's, 1.1). An
    /// older pin turns on the era shims that version needs (e.g. `0.0.39`).
    #[arg(long, value_name = "VERSION")]
    pub max_protocol_version: Option<ProtocolVersion>,
    /// Ask for a resumable run (`AGUI-Resumable: 1` with an owner token): when the
    /// connection drops, the run goes on on the server and this command re-attaches
    /// (printing `reconnecting…` to standard error), ending as an uncut run would.
    #[arg(long)]
    pub resumable: bool,
    /// Longest wait for the response's head, in seconds (0: no limit).
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub timeout: u64,
    /// Longest wait between two events, in seconds (0: no limit; keep-alive comments do
    /// not count).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub idle_timeout: u64,
    /// The most text one message may stream in a run, in bytes (0: no limit); past it
    /// the run ends with an error naming the limit and the event.
    #[arg(long, value_name = "BYTES", default_value_t = agui_sdk_client::DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: u64,
    /// The most arguments one tool call may stream in a run, in bytes (0: no limit).
    #[arg(long, value_name = "BYTES", default_value_t = agui_sdk_client::DEFAULT_MAX_TOOL_ARGS_BYTES)]
    pub max_tool_args_bytes: u64,
    /// The most bytes one run's response may bring in all, in bytes (0: no limit).
    #[arg(long, value_name = "BYTES", default_value_t = agui_sdk_client::DEFAULT_MAX_RUN_BYTES)]
    pub max_run_bytes: u64,
}

/// Prints the inbound pipeline's warnings to standard error as `warning: …` lines.
struct WarningPrinter;

impl Subscriber for WarningPrinter {
    fn on_warning(&mut self, warning: &InboundWarning) {
        eprintln!("warning: {}", Escaped(&warning.to_string()));
    }
}

/// Reads `--input`: legacy content upgraded, unknown material stripped (reported as
/// warnings), then validated strictly.
fn read_input(path: &str) -> Result<RunAgentInput, CliError> {
    let text = if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut s)
            .map_err(CliError::io("reading the input from standard input"))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(CliError::io(format!("cannot read {path}")))?
    };
    let mut value: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Malformed(format!("--input {path}: not JSON: {e}")))?;
    upgrade_legacy_content(&mut value);
    let (input, warnings) = enforce_outgoing_input(value)
        .map_err(|e| CliError::Malformed(format!("--input {path}: {e}")))?;
    for w in warnings {
        eprintln!("warning: --input {path}: {w}");
    }
    Ok(input)
}

/// Prints every event as it arrives, as a JSON line on standard output.
struct JsonTap;

impl Middleware for JsonTap {
    fn transform(&self, _input: &RunAgentInput, events: EventStream) -> EventStream {
        EventStream::from_stream(events.map(|item| {
            if let Ok(ev) = &item {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", ev.to_json_string());
            }
            item
        }))
    }
}

/// The wire form of an outcome, for the final JSON line.
pub(crate) fn outcome_json(outcome: &RunOutcome) -> Value {
    match outcome {
        RunOutcome::Success {
            pending_tool_call_ids,
            ..
        } if !pending_tool_call_ids.is_empty() => {
            json!({"type": "success", "pendingToolCallIds": pending_tool_call_ids})
        }
        RunOutcome::Success { .. } => json!({"type": "success"}),
        RunOutcome::Interrupt { interrupts } => {
            json!({"type": "interrupt", "interrupts": interrupts})
        }
        RunOutcome::Cancelled => json!({"type": "cancelled"}),
    }
}

fn ask(interrupt: &Interrupt) -> Result<ResumeEntry, CliError> {
    let prompt = interrupt
        .message
        .clone()
        .unwrap_or_else(|| format!("The agent asks: {}", interrupt.reason));
    eprint!(
        "{}\n  answer y (approve), n (cancel) or a JSON payload: ",
        Escaped(&prompt)
    );
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(CliError::io("reading the answer"))?;
    let line = line.trim();
    Ok(match line {
        "n" | "N" | "no" => ResumeEntry::cancelled(&interrupt.id),
        "y" | "Y" | "yes" | "" => ResumeEntry::resolved(&interrupt.id, json!({"approved": true})),
        other => match agui_sdk_core::JsonText::parse(other) {
            Ok(v) => ResumeEntry::resolved(&interrupt.id, v),
            Err(_) => ResumeEntry::resolved(&interrupt.id, Value::String(other.to_owned())),
        },
    })
}

/// `agui run`.
pub(crate) fn run(args: RunArgs) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::io("starting the runtime"))?;
    rt.block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> Result<(), CliError> {
    let mut builder = HttpAgent::builder(&args.url).encoding(if args.proto {
        Encoding::Proto
    } else {
        Encoding::Sse
    });
    for h in &args.headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(CliError::Malformed(format!(
                "--header {h:?}: expected `Name: value`"
            )));
        };
        builder = builder.header(name.trim(), value.trim());
    }
    if let Some(token) = &args.bearer {
        builder = builder.bearer_token(token);
    }
    builder = builder
        .response_timeout(Duration::from_secs(args.timeout))
        .idle_timeout(Duration::from_secs(args.idle_timeout))
        .max_run_bytes(args.max_run_bytes);
    if args.resumable {
        builder = builder.resumable(agui_sdk_client::ResumeOptions::default().on_reconnect(|r| {
            eprintln!(
                "reconnecting… (attempt {}, after event {}: {})",
                r.attempt, r.after_seq, r.reason
            );
        }));
    }
    let http = builder
        .build()
        .map_err(|e| CliError::Malformed(e.to_string()))?;
    let mut builder = Conversation::builder(http)
        .subscribe(WarningPrinter)
        .max_message_bytes(args.max_message_bytes)
        .max_tool_args_bytes(args.max_tool_args_bytes);
    if let Some(v) = args.max_protocol_version {
        builder = builder.max_protocol_version(v);
    }
    let mut first = RunParams::new();
    if let Some(path) = &args.input {
        let input = read_input(path)?;
        builder = builder
            .thread_id(input.thread_id.clone())
            .messages(input.messages.clone());
        if let Some(state) = &input.state {
            builder = builder.state(state.to_value());
        }
        first = first.run_id(input.run_id.clone());
        first.tools = input.tools.clone();
        first.context = input.context.clone();
        first.forwarded_props = input.forwarded_props.as_ref().map(|p| p.to_value());
        first.resume = input.resume.clone().unwrap_or_default();
    }
    if let Some(t) = &args.thread {
        builder = builder.thread_id(t.clone());
    }
    if let Some(s) = &args.state {
        let state: Value = serde_json::from_str(s)
            .map_err(|e| CliError::Malformed(format!("--state is not JSON: {e}")))?;
        builder = builder.state(state);
    }
    if args.json {
        builder = builder.use_middleware(JsonTap);
    } else {
        let color = std::io::stdout().is_terminal();
        builder = builder.subscribe(TerminalRenderer::new(
            Box::new(std::io::stdout()),
            color,
            "agent",
        ));
    }
    let mut agent = builder.build();
    if let Some(m) = &args.message {
        agent.add_message(Message::user(uuid::Uuid::new_v4().to_string(), m.as_str()));
    }
    let interactive =
        std::io::stdin().is_terminal() && !args.json && args.input.as_deref() != Some("-");
    let mut params = first;
    loop {
        let result = agent.run_agent(params).await;
        match result {
            Ok(RunResult {
                outcome: RunOutcome::Interrupt { interrupts },
                ..
            }) if interactive => {
                let mut next = RunParams::new();
                for i in &interrupts {
                    next = next.resume(ask(i)?);
                }
                params = next;
            }
            Ok(r) => {
                if args.json {
                    print_final(&agent, outcome_json(&r.outcome));
                } else if let RunOutcome::Interrupt { interrupts } = &r.outcome {
                    for i in interrupts {
                        println!(
                            "interrupt {}: {}",
                            Escaped(&i.id),
                            Escaped(i.message.as_deref().unwrap_or(&i.reason))
                        );
                    }
                }
                return Ok(());
            }
            Err(e) => {
                if args.json {
                    let outcome = match &e {
                        ClientError::RunFailed { message, code } => {
                            json!({"type": "error", "message": message, "code": code})
                        }
                        other => json!({"type": "error", "message": other.to_string()}),
                    };
                    print_final(&agent, outcome);
                }
                // A malformed stream is malformed input (exit 2), as in every subcommand;
                // a failed run or transport is a verdict (exit 1).
                return Err(match e {
                    ClientError::Decode(_)
                    | ClientError::Inbound { .. }
                    | ClientError::ContentType { .. } => {
                        CliError::Malformed(Escaped(&e.to_string()).to_string())
                    }
                    ClientError::LimitExceeded { limit, .. } => CliError::Rejected(format!(
                        "{e} (--{} raises it; 0: no limit)",
                        limit.replace('_', "-")
                    )),
                    // What the agent wrote (a RUN_ERROR's message and code), on one line.
                    other => CliError::Rejected(Escaped(&other.to_string()).to_string()),
                });
            }
        }
    }
}

/// The `--json` summary line, written straight from the conversation (no copy of it).
fn print_final(agent: &Conversation, outcome: Value) {
    #[derive(serde::Serialize)]
    struct Final<'a> {
        messages: &'a [Message],
        state: &'a Value,
        outcome: Value,
    }
    let line = Final {
        messages: agent.messages(),
        state: agent.state(),
        outcome,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A closed stdout is the reader's choice; there is nothing left to report it to.
    let _ = agui_sdk_core::wire::write_canonical_to(&line, &mut out)
        .and_then(|()| std::io::Write::write_all(&mut out, b"\n"))
        .and_then(|()| std::io::Write::flush(&mut out));
}
