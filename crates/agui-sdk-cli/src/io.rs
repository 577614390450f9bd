//! Input and output plumbing shared by the subcommands.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// A failure of a subcommand, with the exit status it maps to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The input is not a valid stream (exit status 2).
    #[error("{0}")]
    Malformed(String),
    /// A protocol verdict against the input (exit status 1).
    #[allow(dead_code)] // the verdict of `agui verify`
    #[error("{0}")]
    Rejected(String),
    /// A bad option value or an unreachable service it names (exit status 2).
    #[error("{0}")]
    Usage(String),
    /// Reading or writing failed (exit status 1).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        source: io::Error,
    },
}

impl CliError {
    /// The process exit status for this error.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Malformed(_) | CliError::Usage(_) => 2,
            CliError::Rejected(_) | CliError::Io { .. } => 1,
        }
    }

    /// An I/O error with context.
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(io::Error) -> CliError {
        let context = context.into();
        move |source| CliError::Io { context, source }
    }
}

/// Opens FILE, or standard input when it is absent or `-`.
pub(crate) fn open_input(file: Option<&Path>) -> Result<Box<dyn BufRead + Send>, CliError> {
    match file {
        None => Ok(Box::new(BufReader::with_capacity(1 << 16, io::stdin()))),
        Some(p) if p == Path::new("-") => {
            Ok(Box::new(BufReader::with_capacity(1 << 16, io::stdin())))
        }
        Some(p) => {
            let f = File::open(p).map_err(CliError::io(format!("cannot open {}", p.display())))?;
            Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
        }
    }
}

/// Buffered standard output.
pub(crate) fn stdout() -> BufWriter<io::Stdout> {
    BufWriter::with_capacity(1 << 16, io::stdout())
}

/// Flushes `out`, treating a closed pipe as the end of the run.
pub(crate) fn flush(out: &mut impl Write) -> Result<(), CliError> {
    match out.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(CliError::io("writing standard output")),
    }
}

/// One event as read, before the inbound pipeline takes it in: where it stands in the
/// input (for error messages), and its body.
pub(crate) struct RawInput<'a> {
    /// The line, for JSON Lines.
    pub line: Option<u64>,
    /// Byte offset where the event starts.
    pub offset: u64,
    /// The JSON text, or the event decoded from protobuf.
    pub body: agui_sdk_core::encoding::RawBody<'a>,
}

/// `line L, byte offset O` for JSON Lines, `byte offset O` for streams.
pub(crate) fn position(line: Option<u64>, offset: u64) -> String {
    match line {
        Some(l) => format!("line {l}, byte offset {offset}"),
        None => format!("byte offset {offset}"),
    }
}
