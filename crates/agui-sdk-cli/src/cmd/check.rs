//! `agui check URL`: the conformance checker (`agui-sdk-check`) from the command line.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use agui_sdk_check::{CheckError, Checker, Level, Scenario};
use clap::{Args, ValueEnum};

use crate::io::CliError;

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    /// One line per scenario, its findings under it (colours on a terminal).
    Text,
    /// One JSON object.
    Json,
    /// JUnit XML, for CI systems.
    Junit,
}

/// Arguments of `agui check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The agent's endpoint (`http://127.0.0.1:8000/agentic_chat`).
    pub url: String,
    /// How to print the report.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// The longest wait for the next byte of any one response, in seconds (a silent
    /// response is an error finding; the check goes on). It also sets the deadlines:
    /// each response must end within 6 × this from its request, each scenario within
    /// 20 × this (past them: an error finding, and the check goes on), so that a check
    /// ends within (2 + 20 × scenarios) × this at most.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_timeout)]
    pub timeout: f64,
    /// Run only this scenario (repeatable): chat, frontend-tool, state, interrupts,
    /// interrupts-unknown, interrupts-replay, interrupts-no-resume, invalid-input,
    /// content-negotiation, hang-up, protocol-version, capabilities, resumable.
    #[arg(long = "scenario", value_name = "NAME", value_parser = parse_scenario)]
    pub scenarios: Vec<Scenario>,
    /// An HTTP header to send with every request, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// A bearer token (`Authorization: Bearer TOKEN`).
    #[arg(long, value_name = "TOKEN")]
    pub bearer: Option<String>,
}

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    Scenario::from_id(s).ok_or_else(|| {
        let ids: Vec<&str> = Scenario::ALL.iter().map(|s| s.id()).collect();
        format!("unknown scenario {s:?} (known: {})", ids.join(", "))
    })
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 3600.0 => Ok(t),
        _ => Err(format!(
            "{s:?} is not a number of seconds above 0 and at most 3600"
        )),
    }
}

/// `agui check`: prints the report; exit 0 when no finding is an error (skipped and
/// not exercised scenarios do not fail a check), 1 when one is, 2 on a usage error or
/// when nothing answers at the URL.
pub(crate) fn check(args: CheckArgs) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::io("starting the runtime"))?;
    rt.block_on(check_async(args))
}

async fn check_async(args: CheckArgs) -> Result<(), CliError> {
    let mut checker = Checker::new(&args.url).timeout(Duration::from_secs_f64(args.timeout));
    if !args.scenarios.is_empty() {
        checker = checker.scenarios(args.scenarios.iter().copied());
    }
    for h in &args.headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(CliError::Usage(format!(
                "--header {h:?}: expected `Name: value`"
            )));
        };
        checker = checker.header(name, value);
    }
    if let Some(token) = &args.bearer {
        checker = checker.bearer(token);
    }
    let report = checker.run().await.map_err(|e| match e {
        CheckError::Unreachable { .. }
        | CheckError::InvalidHeader(_)
        | CheckError::InvalidUrl(_) => CliError::Usage(e.to_string()),
        other => CliError::Usage(other.to_string()),
    })?;
    let text = match args.format {
        ReportFormat::Text => {
            let color = std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            report.to_text(color)
        }
        ReportFormat::Json => format!("{}\n", report.to_json()),
        ReportFormat::Junit => report.to_junit(),
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(CliError::Io {
                context: "writing standard output".into(),
                source: e,
            })
        }
        _ => {}
    }
    if report.passed() {
        Ok(())
    } else {
        Err(CliError::Rejected(format!(
            "{} failed the check: {} errors, {} warnings",
            report.target,
            report.count(Level::Error),
            report.count(Level::Warning)
        )))
    }
}
