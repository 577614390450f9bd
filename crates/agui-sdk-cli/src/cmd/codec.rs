//! `agui decode` and `agui encode`.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use agui_sdk_core::encoding::{Encoding, EventDecoder, EventEncoder, Framing, RawBody};
use agui_sdk_core::Event;
use clap::Args;

use crate::io::{flush, open_input, position, stdout, CliError, RawInput};

/// The parser of `--from` and `--to`: a [`Framing`] by its name, each listed in `--help`.
pub(crate) fn framing() -> impl clap::builder::TypedValueParser<Value = Framing> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Framing::ALL.iter().map(|f| {
        PossibleValue::new(f.as_str()).help(match f {
            Framing::JsonLines => "JSON Lines: one event object per line",
            Framing::Sse => {
                "Server-Sent Events (`text/event-stream`), as the reference encoder writes them"
            }
            _ => "Length-prefixed protobuf (`application/vnd.ag-ui.event+proto`)",
        })
    }))
    .try_map(|s| s.parse::<Framing>())
}

/// Arguments of `agui decode`.
#[derive(Debug, Args)]
pub(crate) struct DecodeArgs {
    /// Format of the input.
    #[arg(long, value_parser = framing())]
    pub from: Framing,
    /// Input file (standard input when absent or `-`).
    pub file: Option<PathBuf>,
    /// Threads that read SSE events (the output is the same whatever the count).
    /// Default: the machine's cores (at most 8) for a file; 1 for a pipe or a terminal
    /// on standard input, so that a live stream's events come out as they arrive.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Arguments of `agui encode`.
#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    /// Format to write.
    #[arg(long, value_parser = framing())]
    pub to: Framing,
    /// JSON Lines input file (standard input when absent or `-`).
    pub file: Option<PathBuf>,
}

/// Reads JSON Lines events, validating each; calls `sink` for every event. On a bad
/// line, the events before it have been passed to `sink` and the error names the event
/// index, line, byte offset and field.
pub(crate) fn read_jsonl(
    input: &mut dyn BufRead,
    live: bool,
    mut sink: impl FnMut(Option<Event>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let mut index: u64 = 0;
    read_raw(Framing::JsonLines, input, |raw| {
        let RawBody::Json(text) = raw.body else {
            unreachable!("JSON Lines are JSON")
        };
        let ev = Event::from_json_slice(text).map_err(|e| {
            CliError::Malformed(format!(
                "event {index} ({}): {e}",
                position(raw.line, raw.offset)
            ))
        })?;
        index += 1;
        sink(Some(ev))?;
        if live {
            sink(None)?;
        }
        Ok(())
    })
}

/// Reads events in `format` from `input`, calling `sink` with each (the single entry
/// point the semantic subcommands read through), and with `None` where the input may
/// have nothing more ready: a sink that writes flushes there, so that the output of a
/// live stream keeps up with it. That is after each chunk read from an SSE or protobuf
/// stream, and after each line of JSON Lines when `live` (the input is not a file).
pub(crate) fn read_events(
    format: Framing,
    input: &mut dyn BufRead,
    live: bool,
    sink: impl FnMut(Option<Event>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    match format.encoding() {
        None => read_jsonl(input, live, sink),
        Some(encoding) => read_stream(input, encoding, sink),
    }
}

/// Whether `file` (standard input when absent or `-`) may be a live stream: anything but
/// a regular file.
pub(crate) fn live_input(file: Option<&std::path::Path>) -> bool {
    match file {
        Some(p) if p != std::path::Path::new("-") => {
            std::fs::metadata(p).map_or(true, |m| !m.is_file())
        }
        _ => !stdin_is_a_file(),
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let mut l = line;
    if let [rest @ .., b'\n'] = l {
        l = rest;
    }
    if let [rest @ .., b'\r'] = l {
        l = rest;
    }
    l
}

pub(crate) fn write_jsonl(
    out: &mut impl Write,
    ev: &Event,
    buf: &mut Vec<u8>,
) -> Result<(), CliError> {
    buf.clear();
    ev.write_json(buf);
    buf.push(b'\n');
    out.write_all(buf)
        .map_err(CliError::io("writing standard output"))
}

/// Decodes an SSE or protobuf stream as it is read, calling `sink` for every event, and
/// with `None` once the events of each chunk read are out (see [`read_events`]).
/// Memory stays bounded (one input buffer and at most one event, up to the decoder's
/// limit) whatever the input's size. Events of unknown types are skipped with a warning,
/// as the reference client drops them. On malformed input the events before it have
/// been passed to `sink`, and the error names the event index and byte offset.
pub(crate) fn read_stream(
    input: &mut dyn BufRead,
    encoding: Encoding,
    mut sink: impl FnMut(Option<Event>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let mut dec = EventDecoder::new(encoding);
    loop {
        let chunk = input.fill_buf().map_err(CliError::io("reading input"))?;
        let eof = chunk.is_empty();
        if eof {
            dec.finish();
        } else {
            dec.push(chunk);
            let n = chunk.len();
            input.consume(n);
        }
        while let Some(ev) = dec.next() {
            sink(Some(ev.map_err(|e| CliError::Malformed(e.to_string()))?))?;
        }
        if eof {
            return Ok(());
        }
        sink(None)?;
    }
}

/// Reads the events of `input` in `format` without interpreting them, calling `sink`
/// for each (what `agui verify` and `agui apply` feed the inbound pipeline). Memory stays
/// bounded as in [`read_stream`]; framing errors name the event index and byte offset.
pub(crate) fn read_raw(
    format: Framing,
    input: &mut dyn BufRead,
    mut sink: impl FnMut(RawInput<'_>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let Some(encoding) = format.encoding() else {
        let mut line = Vec::with_capacity(4096);
        let (mut offset, mut line_no) = (0u64, 0u64);
        loop {
            line.clear();
            // One line is one event: no longer than an event may be (plus its newline).
            let max = agui_sdk_core::encoding::DecoderLimits::DEFAULT_MAX_EVENT_SIZE;
            let n = std::io::Read::take(&mut *input, max as u64 + 2)
                .read_until(b'\n', &mut line)
                .map_err(CliError::io("reading input"))?;
            if n == 0 {
                return Ok(());
            }
            line_no += 1;
            if n > max + 1 && line.last() != Some(&b'\n') || trim_line(&line).len() > max {
                return Err(CliError::Malformed(format!(
                    "line {line_no} (byte offset {offset}) is longer than the {max} bytes an event may have"
                )));
            }
            let start = offset;
            offset += n as u64;
            let text = trim_line(&line);
            if text.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            sink(RawInput {
                line: Some(line_no),
                offset: start,
                body: RawBody::Json(text),
            })?;
        }
    };
    let mut dec = EventDecoder::new(encoding);
    loop {
        let chunk = input.fill_buf().map_err(CliError::io("reading input"))?;
        let eof = chunk.is_empty();
        if eof {
            dec.finish();
        } else {
            dec.push(chunk);
            let n = chunk.len();
            input.consume(n);
        }
        while let Some(raw) = dec.next_raw() {
            let raw = match raw {
                Ok(raw) => raw,
                Err(e) => return Err(CliError::Malformed(e.to_string())),
            };
            sink(RawInput {
                line: None,
                offset: raw.offset,
                body: raw.body,
            })?;
        }
        if eof {
            return Ok(());
        }
    }
}

/// The threads a command reads SSE events with: as asked; else the machine's cores (at
/// most 8) for a file, and one for a pipe or a terminal, where events may be arriving
/// live (several threads read ahead in pieces, which would hold each event back until
/// a piece is full).
pub(crate) fn threads(asked: Option<u16>, file: Option<&std::path::Path>) -> usize {
    if let Some(n) = asked {
        return usize::from(n);
    }
    if live_input(file) {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Whether standard input is a regular file (`< FILE`), not a pipe or a terminal.
fn stdin_is_a_file() -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .and_then(|fd| std::fs::File::from(fd).metadata().ok())
            .is_some_and(|m| m.is_file())
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// `agui decode`.
pub(crate) fn decode(args: DecodeArgs) -> Result<(), CliError> {
    let mut input = open_input(args.file.as_deref())?;
    let threads = threads(args.threads, args.file.as_deref());
    if args.from == Framing::Sse && threads > 1 {
        return crate::parallel::decode_sse(&mut input, threads);
    }
    let mut out = stdout();
    let mut buf = Vec::with_capacity(4096);
    let live = live_input(args.file.as_deref());
    let result = read_events(args.from, &mut input, live, |ev| match ev {
        Some(ev) => write_jsonl(&mut out, &ev, &mut buf),
        None => flush(&mut out),
    });
    flush(&mut out)?;
    result
}

/// `agui encode`.
pub(crate) fn encode(args: EncodeArgs) -> Result<(), CliError> {
    let mut input = open_input(args.file.as_deref())?;
    let mut out = stdout();
    let mut buf = Vec::with_capacity(4096);
    let live = live_input(args.file.as_deref());
    let result = match args.to.encoding() {
        None => read_jsonl(&mut input, live, |ev| match ev {
            Some(ev) => write_jsonl(&mut out, &ev, &mut buf),
            None => flush(&mut out),
        }),
        Some(encoding) => {
            let encoder = EventEncoder::new(encoding);
            read_jsonl(&mut input, live, |ev| {
                let Some(ev) = ev else {
                    return flush(&mut out);
                };
                buf.clear();
                encoder.encode(&ev, &mut buf);
                out.write_all(&buf)
                    .map_err(CliError::io("writing standard output"))
            })
        }
    };
    flush(&mut out)?;
    result
}
