//! `agui`: the AG-UI command line.
//!
//! Exit status: 0 on success, 1 on a failure that is not the input's fault (I/O, a
//! protocol verdict such as an invalid stream for `verify`), 2 on malformed input.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod io;
mod log;
mod memory;
mod parallel;
mod render;

/// AG-UI 1.1 from the command line: decode, encode and check event streams.
#[derive(Debug, Parser)]
#[command(name = "agui", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More log lines on standard error: `-v` the warnings the commands report
    /// themselves too (as logs), `-vv` what they do; a server logs its runs without
    /// it, and `-v` adds debug lines. `AGUI_LOG` (a tracing filter, e.g. `debug` or
    /// `agui_sdk_server=trace`) overrides it.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
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
    // A server logs its runs by default. The other commands print each warning
    // themselves (`warning: event N: …`), once: their log shows only errors unless
    // asked for more.
    let server = matches!(cli.command, Command::Serve(_) | Command::Inspect(_));
    let default_level = match (server, cli.verbose) {
        (true, 0) => "info",
        (true, 1) => "debug",
        (true, _) => "trace",
        (false, 0) => "error",
        (false, 1) => "warn",
        (false, 2) => "info",
        (false, _) => "debug",
    };
    log::init(default_level);
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
            // An error may quote what a peer sent: no control character of it reaches
            // the terminal.
            eprintln!("agui: {}", agui_sdk_core::EscapedLines(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
    }
}
