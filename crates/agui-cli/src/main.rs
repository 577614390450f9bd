//! `agui`: the AG-UI command line.
//!
//! Exit status: 0 on success, 1 on a failure that is not the input's fault (I/O, a
//! protocol verdict such as an invalid stream for `verify`), 2 on malformed input.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod io;
mod memory;
mod parallel;
mod render;

/// AG-UI 1.0 from the command line: decode, encode and check event streams.
#[derive(Debug, Parser)]
#[command(name = "agui", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode an event stream (JSON Lines, SSE or protobuf) into canonical JSON Lines.
    Decode(cmd::codec::DecodeArgs),
    /// Encode JSON Lines events into a wire format.
    Encode(cmd::codec::EncodeArgs),
    /// Check that an event stream obeys the protocol's lifecycle rules.
    Verify(cmd::semantics::VerifyArgs),
    /// Apply events to a conversation and print the resulting messages and state.
    Apply(cmd::semantics::ApplyArgs),
    /// Rewrite a stream: expand chunk events or compact a recording.
    Transform(cmd::semantics::TransformArgs),
    /// Serve the demo agents over HTTP (SSE and protobuf), and through the CopilotKit
    /// runtime at /copilotkit.
    Serve(cmd::serve::ServeArgs),
    /// Run an agent at a URL and show (or print as JSON) what it does.
    Run(cmd::run::RunArgs),
    /// Check that the AG-UI server at a URL conforms: drive it through scenarios and
    /// judge every response (exit 1 when a finding is an error).
    Check(cmd::check::CheckArgs),
    /// Start the demo agents and run a scripted conversation through each of them.
    Demo(cmd::demo::DemoArgs),
    /// Open the web inspector: run any agent from a page (through a relay in this
    /// process) and see its timeline, messages, state diffs and findings; record and
    /// replay runs; with --proxy, watch a real front end's runs live.
    Inspect(cmd::inspect::InspectArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A server logs its runs by default; the other commands only warnings.
    let default_level = match cli.command {
        Command::Serve(_) | Command::Inspect(_) => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGUI_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: a log file or a pipe gets plain
        // text (and a server logging runs spends less on each line).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    let result = match cli.command {
        Command::Decode(args) => cmd::codec::decode(args),
        Command::Encode(args) => cmd::codec::encode(args),
        Command::Verify(args) => cmd::semantics::verify(args),
        Command::Apply(args) => cmd::semantics::apply(args),
        Command::Transform(args) => cmd::semantics::transform(args),
        Command::Serve(args) => cmd::serve::serve(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Check(args) => cmd::check::check(args),
        Command::Demo(args) => cmd::demo::demo(args),
        Command::Inspect(args) => cmd::inspect::inspect(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agui: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
