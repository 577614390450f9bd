//! `agui verify`, `agui apply` and `agui transform`.

use std::path::PathBuf;

use agui_sdk_core::encoding::RawBody;
use agui_sdk_core::semantics::{
    ChunkExpander, Compactor, Inbound, InboundConfig, InboundError, Reducer,
};
use agui_sdk_core::{Event, RunAgentInput};
use clap::{ArgGroup, Args};

use super::codec::{framing, read_events, read_raw, write_jsonl};
use crate::io::{flush, open_input, stdout, CliError};
use crate::io::{position, RawInput};
use agui_sdk_core::encoding::Framing;

/// Arguments of `agui verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Format of the input.
    #[arg(long, value_parser = framing())]
    pub from: Framing,
    /// Expand chunk events first, as a client does before verifying what it receives
    /// (without it, chunk events pass the verifier untouched, as in the reference).
    #[arg(long)]
    pub expand_chunks: bool,
    /// Input file (standard input when absent or `-`).
    pub file: Option<PathBuf>,
    /// Threads that read SSE events ahead (the events still go through the pipeline in
    /// order; the result is the same whatever the count). Default: the machine's cores
    /// (at most 8) for a file; 1 for a pipe or a terminal on standard input, so that a
    /// live stream's events are taken in as they arrive.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Arguments of `agui apply`.
#[derive(Debug, Args)]
pub(crate) struct ApplyArgs {
    /// A `RunAgentInput` JSON file whose messages and state the events apply to
    /// (default: no messages and the state `{}`).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Format of the event stream.
    #[arg(long, value_parser = framing())]
    pub from: Framing,
    /// Verify the lifecycle too (off by default, so that a fragment of a stream can be
    /// applied).
    #[arg(long)]
    pub verify: bool,
    /// Event stream file (standard input when absent or `-`).
    pub file: Option<PathBuf>,
    /// Threads that read SSE events ahead (the events still go through the pipeline in
    /// order; the result is the same whatever the count). Default: the machine's cores
    /// (at most 8) for a file; 1 for a pipe or a terminal on standard input, so that a
    /// live stream's events are taken in as they arrive.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Arguments of `agui transform`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").required(true).args(["expand_chunks", "compact"])))]
pub(crate) struct TransformArgs {
    /// Rewrite `*_CHUNK` events into start / content / end events.
    #[arg(long)]
    pub expand_chunks: bool,
    /// Compact a recorded stream (collapse deltas and state windows).
    #[arg(long)]
    pub compact: bool,
    /// Format of the input.
    #[arg(long, value_parser = framing())]
    pub from: Framing,
    /// Input file (standard input when absent or `-`).
    pub file: Option<PathBuf>,
}

/// Feeds every event of the input through `inbound`; prints its warnings to standard
/// error as `warning: …` lines. A malformed event exits with status 2, a rejected stream
/// with 1; both name the event index and where it stands in the input.
fn take_in(
    inbound: &mut Inbound,
    from: Framing,
    file: Option<&std::path::Path>,
    threads: Option<u16>,
) -> Result<(), CliError> {
    let mut input = open_input(file)?;
    let mut warnings = Vec::new();
    let applying = inbound.reducer().is_some();
    // `out` takes the events verified, which the caller frees (on the thread that read
    // them, when there are several).
    let mut sink = |raw: RawInput<'_>, out: &mut Vec<Event>| {
        let (line, offset) = (raw.line, raw.offset);
        let r = if applying {
            // The events move into the reducer: nothing is copied.
            inbound.consume(raw.body, &mut warnings)
        } else {
            // Verified in place, then dropped.
            match raw.body {
                RawBody::Json(data) => inbound.push_json(data, out, &mut warnings),
                RawBody::Event(event) => inbound.push_event(event, out, &mut warnings),
            }
        };
        for w in warnings.drain(..) {
            eprintln!("warning: {w}");
        }
        r.map_err(|e| match e {
            InboundError::Malformed { .. } => {
                CliError::Malformed(format!("{e} ({})", position(line, offset)))
            }
            e => CliError::Rejected(format!("{e} [rule {}]", e.rule_id())),
        })
    };
    let threads = super::codec::threads(threads, file);
    if from == Framing::Sse && threads > 1 {
        crate::parallel::read_sse(&mut input, threads, sink)
    } else {
        let mut out = Vec::new();
        read_raw(from, &mut input, |raw| {
            let r = sink(raw, &mut out);
            out.clear();
            r
        })
    }
}

/// `agui verify`: exit 0 when the stream is valid, 1 with `event N: reason [rule ID]`
/// when not (a stream that ends with its run open included). The stream goes through
/// the inbound pipeline a client runs (compatibility, enforcement, chunk expansion when
/// asked, verification).
pub(crate) fn verify(args: VerifyArgs) -> Result<(), CliError> {
    let config = InboundConfig::default().expand_chunks(args.expand_chunks);
    let mut inbound = Inbound::new(config);
    take_in(&mut inbound, args.from, args.file.as_deref(), args.threads)?;
    inbound
        .finish()
        .map_err(|e| CliError::Rejected(format!("{e} [rule {}]", e.rule_id())))
}

/// `agui apply`: prints `{"messages":[...],"state":...}`, after the inbound pipeline
/// (compatibility, enforcement, chunk expansion, verification with `--verify`, then the
/// reducer).
pub(crate) fn apply(args: ApplyArgs) -> Result<(), CliError> {
    let reducer = match &args.input {
        None => Reducer::new(
            Vec::new(),
            Some(serde_json::Value::Object(Default::default())),
        ),
        Some(p) => {
            let bytes =
                std::fs::read(p).map_err(CliError::io(format!("cannot read {}", p.display())))?;
            let input: RunAgentInput = agui_sdk_core::wire::from_json_slice(&bytes)
                .map_err(|e| CliError::Malformed(format!("{}: {e}", p.display())))?;
            Reducer::from_input(&input)
        }
    };
    let config = InboundConfig::default().verify(args.verify);
    let mut inbound = Inbound::with_reducer(config, reducer);
    take_in(&mut inbound, args.from, args.file.as_deref(), args.threads)?;
    let reducer = inbound.into_reducer().unwrap_or_default();
    let mut out = stdout();
    write_conversation(&reducer, &mut out).map_err(CliError::io("writing standard output"))?;
    flush(&mut out)
}

/// Writes `{"messages":[...],"state":...}` (`state` `null` when never set) as
/// [`Reducer::to_json`] would give it, one message at a time: no copy of the
/// conversation is built, whatever its size.
fn write_conversation(reducer: &Reducer, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(4096);
    out.write_all(b"{\"messages\":[")?;
    for (i, m) in reducer.messages().iter().enumerate() {
        buf.clear();
        if i > 0 {
            buf.push(b',');
        }
        agui_sdk_core::wire::write_canonical(m, &mut buf);
        out.write_all(&buf)?;
    }
    buf.clear();
    buf.extend_from_slice(b"],\"state\":");
    match reducer.state() {
        Some(s) => agui_sdk_core::wire::write_canonical(s, &mut buf),
        None => buf.extend_from_slice(b"null"),
    }
    buf.extend_from_slice(b"}\n");
    out.write_all(&buf)
}

/// `agui transform`: JSON Lines out.
pub(crate) fn transform(args: TransformArgs) -> Result<(), CliError> {
    let mut input = open_input(args.file.as_deref())?;
    let mut out = stdout();
    let mut line = Vec::with_capacity(4096);
    let mut produced: Vec<Event> = Vec::new();
    let live = super::codec::live_input(args.file.as_deref());
    let result = if args.compact {
        let mut c = Compactor::new();
        let r = read_events(args.from, &mut input, live, |ev| {
            // A compaction is only known at the end: nothing to flush before.
            let Some(ev) = ev else { return Ok(()) };
            c.push(ev, &mut produced);
            for w in c.take_warnings() {
                eprintln!("warning: {w}");
            }
            for e in produced.drain(..) {
                write_jsonl(&mut out, &e, &mut line)?;
            }
            Ok(())
        });
        if r.is_ok() {
            // A patch that did not apply, as `apply` reports one.
            for w in c.finish_with_warnings(&mut produced) {
                eprintln!("warning: {w}");
            }
            for e in produced.drain(..) {
                write_jsonl(&mut out, &e, &mut line)?;
            }
        }
        r
    } else {
        let mut x = ChunkExpander::new();
        read_events(args.from, &mut input, live, |ev| {
            let Some(ev) = ev else {
                return flush(&mut out);
            };
            x.push(ev, &mut produced)
                .map_err(|e| CliError::Rejected(e.to_string()))?;
            for e in produced.drain(..) {
                write_jsonl(&mut out, &e, &mut line)?;
            }
            Ok(())
        })
    };
    flush(&mut out)?;
    result
}
