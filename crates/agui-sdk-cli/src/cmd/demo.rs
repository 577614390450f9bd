//! `agui demo`: starts the demo server on a free loopback port and runs a scripted
//! conversation through every demo agent with the client, rendered in the terminal:
//! streamed text, tool calls (with a frontend tool answered automatically), state,
//! reasoning, subagents, and an interrupt answered automatically.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agui_sdk_client::{ClientError, Conversation, HttpAgent, RunParams};
use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::semantics::RunOutcome;
use agui_sdk_core::{Content, Message, ResumeEntry, Tool};
use clap::Args;
use serde_json::{json, Value};

use crate::io::CliError;
use crate::render::{message_text, short_json, TerminalRenderer};

/// Arguments of `agui demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Pause between streamed pieces, in milliseconds.
    #[arg(long, default_value_t = 8)]
    pub delay_ms: u64,
    /// Ask the agents for protobuf instead of SSE.
    #[arg(long)]
    pub proto: bool,
}

/// One step of the script: which agent, what the user says, what state to send, which
/// frontend tool to answer.
struct Step {
    agent: &'static str,
    say: &'static str,
    state: Option<Value>,
    tool: Option<(&'static str, Value)>,
}

fn script() -> Vec<Step> {
    let approve_all = json!({"steps": [
        {"description": "Preheat the oven", "status": "enabled"},
        {"description": "Mix the ingredients", "status": "enabled"},
        {"description": "Bake for 25 minutes", "status": "enabled"},
        {"description": "Let it cool", "status": "disabled"}
    ]});
    vec![
        Step {
            agent: "agentic_chat",
            say: "Hello! What can you do?",
            state: None,
            tool: None,
        },
        Step {
            agent: "backend_tool_rendering",
            say: "Berlin",
            state: None,
            tool: None,
        },
        Step {
            agent: "human_in_the_loop",
            say: "Plan a cake for me.",
            state: None,
            tool: Some(("generate_task_steps", approve_all)),
        },
        Step {
            agent: "agentic_generative_ui",
            say: "Show me your progress.",
            state: None,
            tool: None,
        },
        Step {
            agent: "tool_based_generative_ui",
            say: "Write me a haiku.",
            state: None,
            tool: Some(("generate_haiku", json!("rendered"))),
        },
        Step {
            agent: "shared_state",
            say: "Improve my recipe.",
            state: Some(
                json!({"title": "Pancakes", "ingredients": [{"name": "Flour", "amount": "200 g"}], "instructions": []}),
            ),
            tool: None,
        },
        Step {
            agent: "predictive_state_updates",
            say: "Write the document.",
            state: None,
            tool: None,
        },
        Step {
            agent: "reasoning",
            say: "Why is the sky blue?",
            state: None,
            tool: None,
        },
        Step {
            agent: "subagents",
            say: "Octopuses",
            state: None,
            tool: None,
        },
        Step {
            agent: "interrupt",
            say: "Send the email to the team.",
            state: None,
            tool: None,
        },
    ]
}

/// Output shared between the renderer and the script's own lines.
#[derive(Clone)]
struct Out(Arc<Mutex<Box<dyn Write + Send>>>);

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .flush()
    }
}

/// `agui demo`.
pub(crate) fn demo(args: DemoArgs) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::io("starting the async runtime"))?;
    let color = std::io::stdout().is_terminal();
    let out = Out(Arc::new(Mutex::new(Box::new(std::io::stdout()))));
    rt.block_on(run_demo(args, out, color))
}

async fn run_demo(args: DemoArgs, mut out: Out, color: bool) -> Result<(), CliError> {
    let started = Instant::now();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(CliError::io("binding a loopback port"))?;
    let addr = listener
        .local_addr()
        .map_err(CliError::io("reading the bound address"))?;
    let shutdown = agui_sdk_server::Shutdown::new();
    let app = agui_sdk_demo::router(Duration::from_millis(args.delay_ms))
        .shutdown(shutdown.clone())
        .into_router();
    let server = tokio::spawn(agui_sdk_server::serve(listener, app, shutdown.clone()));
    let bold = |s: &str| {
        if color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    };
    let _ = writeln!(
        out,
        "{}",
        bold(&format!(
            "AG-UI demo: ten agents served at http://{addr}, talked to by the Rust client"
        ))
    );

    let encoding = if args.proto {
        Encoding::Proto
    } else {
        Encoding::Sse
    };
    let mut total_runs = 0;
    let result: Result<(), CliError> = async {
        for step in script() {
            let url = format!("http://{addr}/{}", step.agent);
            let _ = writeln!(out, "\n{}", bold(&format!("── {} ──", step.agent)));
            let _ = writeln!(
                out,
                "{} {}",
                if color {
                    "\x1b[1;32myou:\x1b[0m"
                } else {
                    "you:"
                },
                step.say
            );
            let http = HttpAgent::builder(&url)
                .encoding(encoding)
                .build()
                .map_err(|e| CliError::Rejected(e.to_string()))?;
            let mut builder = Conversation::builder(http)
                .thread_id(format!("demo-{}", step.agent))
                .subscribe(TerminalRenderer::new(
                    Box::new(out.clone()),
                    color,
                    step.agent,
                ));
            if let Some(state) = step.state.clone() {
                builder = builder.state(state);
            }
            if let Some((name, answer)) = step.tool.clone() {
                let shown = out.clone();
                let tool = Tool::new(
                    name,
                    "A tool the demo application renders",
                    json!({"type": "object"}),
                );
                builder = builder
                    .tool(tool, move |args: Value| {
                        let answer = answer.clone();
                        let _ = writeln!(
                            shown.clone(),
                            "(the application renders {name} with {} and answers {})",
                            short_json(&args, 60),
                            short_json(&answer, 60)
                        );
                        async move { Ok(Content::from(answer.to_string())) }
                    })
                    .answer_tools(1);
            }
            let mut agent = builder.build();
            agent.add_message(Message::user(format!("{}-user", step.agent), step.say));
            let mut result = agent.run_agent(RunParams::new()).await.map_err(fail)?;
            total_runs += result.runs;
            if let RunOutcome::Interrupt { interrupts } = &result.outcome {
                let mut params = RunParams::new();
                for i in interrupts {
                    let _ = writeln!(
                        out,
                        "{} {} → approved automatically",
                        bold("interrupt:"),
                        i.message.as_deref().unwrap_or(&i.reason)
                    );
                    params = params.resume(ResumeEntry::resolved(&i.id, json!({"approved": true})));
                }
                result = agent.run_agent(params).await.map_err(fail)?;
                total_runs += result.runs;
            }
            if step.state.is_some() || !agent.state().as_object().is_some_and(|o| o.is_empty()) {
                let _ = writeln!(out, "final state: {}", short_json(agent.state(), 160));
            }
            if let Some(last) = agent.messages().last() {
                tracing::debug!(agent = step.agent, last = %message_text(last), "step done");
            }
        }
        Ok(())
    }
    .await;
    shutdown.trigger();
    let _ = server.await;
    result?;
    let _ = writeln!(
        out,
        "\n{}",
        bold(&format!(
            "Done: {total_runs} runs through 10 agents in {:.1} s.",
            started.elapsed().as_secs_f64()
        ))
    );
    Ok(())
}

fn fail(e: ClientError) -> CliError {
    CliError::Rejected(e.to_string())
}
