//! The command line's log: plain text on stderr, filtered by `AGUI_LOG`.
//!
//! `AGUI_LOG` takes `tracing-subscriber`'s `EnvFilter` directives. The common ones
//! (a level, or targets with levels: `info`, `agui_sdk_server=debug,hyper=warn`) are
//! served by a [`Targets`] filter instead: it decides each span and event from its
//! target and level alone, where `EnvFilter` also tracks every span it sees (a lock
//! per span created, entered, left and closed) in case a directive names span fields.
//! `agui serve` logs two lines and enters its run's span for each run, so this is on
//! every run's path. Directives that name spans or fields (`[run{run_id=r1}]=debug`)
//! still get `EnvFilter`.
//!
//! Each line is `tracing-subscriber`'s default format, byte for byte. Without colours
//! it is written by [`Line`], part by part: the default formatter paints each part (the
//! time, the level, the spans' names, the target) with an empty style and formats the
//! time field by field through `core::fmt`. The two lines of a served run cost about
//! 17,000 instructions this way, against 25,000 (`bench/load/instructions.py`). The
//! fields are formatted as before, by `tracing-subscriber`, through [`EscapedFields`]:
//! every field's value and every message is written with the characters a terminal or
//! a line-based reader acts on spelled out ([`agui_sdk_core::Escaped`]), since many
//! carry what a client sent (a thread id, an agent's name, an upstream's error).

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::format::{DefaultFields, Format, FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::{FmtContext, FormattedFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// The filter for the directives in `AGUI_LOG`, or for `default_level` when it is unset
/// or not valid.
#[derive(Debug)]
// Built once, as the program starts.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Filter {
    /// Targets and levels only.
    Targets(Targets),
    /// Directives that name spans or fields.
    Env(EnvFilter),
}

impl Filter {
    /// The filter for `directives` (`None`: unset), falling back to `default_level`.
    /// The MCP client (`rmcp`) logs at `warn` and above unless a directive names it:
    /// its debug lines carry whole protocol messages (tool arguments and results, what
    /// an MCP server says), which a general `debug` should not pour into a server's log.
    pub(crate) fn parse(directives: Option<&str>, default_level: &str) -> Filter {
        let quiet_mcp = |d: &str| {
            if d.contains("rmcp") {
                d.to_owned()
            } else {
                format!("{d},rmcp=warn")
            }
        };
        let directives = directives.map(quiet_mcp);
        let default_level = &quiet_mcp(default_level);
        let plain = |d: &str| {
            // `Targets` would read `[run]` as a target's name: span and field
            // directives are `EnvFilter`'s. A bare word that is not a level is a
            // target for both ("everything in it").
            if d.contains(['[', ']', '{', '}']) {
                return None;
            }
            Targets::from_str(d).ok().map(Filter::Targets)
        };
        if let Some(d) = directives.as_deref() {
            if let Some(f) = plain(d) {
                return f;
            }
            if let Ok(f) = EnvFilter::try_new(d) {
                return Filter::Env(f);
            }
        }
        plain(default_level).unwrap_or_else(|| Filter::Env(EnvFilter::new(default_level)))
    }

    /// The filter as two layers, one of them absent.
    fn into_layers(self) -> (Option<Targets>, Option<EnvFilter>) {
        match self {
            Filter::Targets(t) => (Some(t), None),
            Filter::Env(e) => (None, Some(e)),
        }
    }
}

/// Installs the log: `AGUI_LOG`'s filter (else `default_level`), plain text on stderr,
/// colours only for a person at a terminal.
pub(crate) fn init(default_level: &str) {
    let directives = std::env::var("AGUI_LOG").ok();
    let filter = Filter::parse(directives.as_deref(), default_level);
    // A log file or a pipe gets plain text (and a server logging runs spends less on
    // each line).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = tracing_subscriber::fmt::layer()
        .fmt_fields(EscapedFields::default())
        .event_format(Line::default())
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let (targets, env) = filter.into_layers();
    tracing_subscriber::registry()
        .with(targets)
        .with(env)
        .with(text)
        .init();
}

/// The default fields' format (`message name=value …`), with each control character,
/// newline and bidirectional override spelled out as [`agui_sdk_core::Escaped`] writes
/// it: no field can move the cursor, retitle or clear a terminal, or begin a line of
/// its own. Field names are not set in italics at a terminal (the escapes that would
/// do it are written by the same formatter whose output is escaped).
#[derive(Debug, Default)]
pub(crate) struct EscapedFields {
    fields: DefaultFields,
}

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, mut w: Writer<'writer>, fields: R) -> fmt::Result {
        let mut escaping = agui_sdk_core::EscapingWriter(&mut w);
        self.fields
            .format_fields(Writer::new(&mut escaping), fields)
    }
}

/// The default format's line (time, level, spans, target, fields), written part by
/// part. With colours, or for a record of the `log` crate (whose metadata the default
/// formatter rewrites), the default formatter writes it.
#[derive(Debug, Default)]
pub(crate) struct Line {
    full: Format,
}

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        if w.has_ansi_escapes() || meta.target() == "log" {
            return self.full.format_event(ctx, w, event);
        }
        time(&mut w, SystemTime::now())?;
        w.write_char(' ')?;
        w.write_str(level(meta.level()))?;
        w.write_char(' ')?;
        if let Some(scope) = ctx.event_scope() {
            let mut seen = false;
            for span in scope.from_root() {
                w.write_str(span.metadata().name())?;
                seen = true;
                let ext = span.extensions();
                if let Some(fields) = ext.get::<FormattedFields<N>>() {
                    if !fields.is_empty() {
                        w.write_char('{')?;
                        w.write_str(fields)?;
                        w.write_char('}')?;
                    }
                }
                w.write_char(':')?;
            }
            if seen {
                w.write_char(' ')?;
            }
        }
        w.write_str(meta.target())?;
        w.write_str(": ")?;
        ctx.format_fields(w.by_ref(), event)?;
        w.write_char('\n')
    }
}

/// The level as the default format writes it, five characters wide.
fn level(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "TRACE",
        Level::DEBUG => "DEBUG",
        Level::INFO => " INFO",
        Level::WARN => " WARN",
        Level::ERROR => "ERROR",
    }
}

/// The first second RFC 3339 cannot write (year 10000).
const YEAR_10000: u64 = 253_402_300_800;

/// Writes `t` as `YYYY-MM-DDTHH:MM:SS.ffffffZ`, UTC, as the default format does. A time
/// before 1970 or after 9999, which that form cannot hold, is left to the default
/// format's own timer.
fn time(w: &mut Writer<'_>, t: SystemTime) -> fmt::Result {
    match t.duration_since(UNIX_EPOCH) {
        Ok(since) if since.as_secs() < YEAR_10000 => {
            write!(w, "{}", humantime::format_rfc3339_micros(t))
        }
        _ => tracing_subscriber::fmt::time::SystemTime
            .format_time(w)
            .or_else(|_| w.write_str("<unknown time>")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    /// What `filter` lets through, for a few targets and levels.
    fn verdicts(filter: Filter) -> Vec<bool> {
        let (targets, env) = filter.into_layers();
        let subscriber = tracing_subscriber::registry().with(targets).with(env);
        tracing::subscriber::with_default(subscriber, || {
            vec![
                tracing::event_enabled!(target: "agui_sdk_server::router", Level::INFO),
                tracing::event_enabled!(target: "agui_sdk_server::router", Level::DEBUG),
                tracing::event_enabled!(target: "agui_sdk_server", Level::TRACE),
                tracing::event_enabled!(target: "hyper::proto::h1", Level::INFO),
                tracing::event_enabled!(target: "hyper::proto::h1", Level::WARN),
                tracing::event_enabled!(target: "agui", Level::ERROR),
                tracing::span_enabled!(target: "agui_sdk_server::router", Level::INFO),
                tracing::span_enabled!(target: "tower_http", Level::DEBUG),
            ]
        })
    }

    #[test]
    fn plain_directives_are_read_as_env_filter_reads_them() {
        for d in [
            "info",
            "warn",
            "off",
            "trace",
            "agui_sdk_server=debug",
            "info,hyper=warn",
            "debug,agui_sdk_server::router=info,hyper=off",
            "agui_sdk_server",
            "ERROR,tower_http=DEBUG",
        ] {
            let ours = Filter::parse(Some(d), "error");
            assert!(matches!(ours, Filter::Targets(_)), "{d}: {ours:?}");
            let env = Filter::Env(EnvFilter::try_new(d).unwrap());
            assert_eq!(verdicts(ours), verdicts(env), "directives {d:?}");
        }
    }

    #[test]
    fn directives_naming_spans_or_fields_keep_env_filter() {
        for d in [
            "[run]=debug",
            "info,[run{run_id=r1}]=trace",
            "agui_sdk_server[run]=debug",
        ] {
            assert!(
                matches!(Filter::parse(Some(d), "info"), Filter::Env(_)),
                "{d}"
            );
        }
    }

    #[test]
    fn unset_or_invalid_directives_fall_back_to_the_default_level() {
        let expected = verdicts(Filter::Env(EnvFilter::new("info")));
        for d in [None, Some("=="), Some("agui=notalevel")] {
            let f = Filter::parse(d, "info");
            assert!(matches!(f, Filter::Targets(_)), "{d:?}: {f:?}");
            assert_eq!(verdicts(f), expected, "{d:?}");
        }
    }

    #[test]
    fn the_mcp_client_logs_warnings_only_unless_a_directive_names_it() {
        let enabled = |f: Filter, level: Level| match f {
            Filter::Targets(t) => (
                t.would_enable("agui_sdk_model::mcp", &level),
                t.would_enable("rmcp::transport::streamable_http_client", &level),
            ),
            Filter::Env(_) => panic!("plain directives"),
        };
        assert_eq!(
            enabled(Filter::parse(Some("debug"), "info"), Level::DEBUG),
            (true, false)
        );
        assert_eq!(
            enabled(Filter::parse(Some("debug"), "info"), Level::WARN),
            (true, true)
        );
        assert_eq!(
            enabled(Filter::parse(None, "info"), Level::INFO),
            (true, false)
        );
        assert_eq!(
            enabled(
                Filter::parse(Some("debug,rmcp=debug"), "info"),
                Level::DEBUG
            ),
            (true, true)
        );
    }

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// Events of every level, with and without fields, spans and targets.
    fn emit() {
        tracing::info!("plain message");
        tracing::warn!(count = 3, name = "quoted \"x\"", flag = true, "with fields");
        tracing::error!(target: "custom::target", value = ?vec![1, 2], shown = %"display", "targeted");
        let outer = tracing::info_span!("run", agent = %"agentic_chat", thread_id = %"t1");
        let _o = outer.enter();
        tracing::debug!(events = 13u64, "run ended");
        let inner = tracing::trace_span!("step");
        let _i = inner.enter();
        tracing::trace!(x = 1.5, "nested");
        tracing::info!(message = "message as a field", other = -4i64);
        let fields_later = tracing::info_span!("late", n = tracing::field::Empty);
        fields_later.record("n", 7);
        let _l = fields_later.enter();
        tracing::warn!("in three spans");
    }

    /// The lines `emit` gives through the fmt layer with `line` as its formatter (else
    /// the default one), without colours.
    fn lines(line: bool) -> String {
        let out = Captured::default();
        let writer = {
            let out = out.clone();
            move || out.clone()
        };
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(writer);
        let all = tracing_subscriber::filter::LevelFilter::TRACE;
        if line {
            let layer = layer
                .fmt_fields(EscapedFields::default())
                .event_format(Line::default());
            let subscriber = tracing_subscriber::registry().with(all).with(layer);
            tracing::subscriber::with_default(subscriber, emit);
        } else {
            let subscriber = tracing_subscriber::registry().with(all).with(layer);
            tracing::subscriber::with_default(subscriber, emit);
        }
        out.text()
    }

    #[test]
    fn a_line_is_the_default_format_byte_for_byte() {
        let before = written(SystemTime::now());
        let (ours, theirs) = (lines(true), lines(false));
        let after = written(SystemTime::now());
        let (ours, theirs): (Vec<&str>, Vec<&str>) =
            (ours.lines().collect(), theirs.lines().collect());
        assert_eq!(ours.len(), 7, "{ours:#?}");
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            // Both begin with the time (27 bytes) then a space; the rest is the same.
            assert_eq!(a.as_bytes()[27], b' ', "{a}");
            assert_eq!(a[28..], b[28..]);
            if before[..19] == after[..19] {
                assert_eq!(a[..19], b[..19], "the time to the second");
                assert_eq!(a[..19], before[..19]);
            }
        }
        assert!(ours[3].ends_with(
            "DEBUG run{agent=agentic_chat thread_id=t1}: agui::log::tests: run ended events=13"
        ));
    }

    /// Events whose message, field values and span fields hold what a hostile client
    /// could send.
    fn emit_hostile() {
        let thread = "t\u{1b}]0;pwned\u{7}\u{1b}[2J\nFORGED 2026-01-01 INFO fake line";
        let span = tracing::info_span!("run", thread_id = %thread, agent = %"a\u{9b}31m");
        let _s = span.enter();
        tracing::info!(run_id = %"r\r\u{202e}x", "started {thread}");
        tracing::warn!(thread_id = ?thread, "debug-formatted");
    }

    #[test]
    fn client_strings_in_fields_and_messages_are_escaped() {
        let out = Captured::default();
        let writer = {
            let out = out.clone();
            move || out.clone()
        };
        for ansi in [false, true] {
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(ansi)
                .with_writer(writer.clone())
                .fmt_fields(EscapedFields::default())
                .event_format(Line::default());
            let subscriber = tracing_subscriber::registry().with(layer);
            tracing::subscriber::with_default(subscriber, emit_hostile);
        }
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        for l in &lines {
            assert!(!l.starts_with("FORGED"), "{l}");
            assert!(l.contains(r"\u{1b}]0;pwned\u{7}\u{1b}[2J\nFORGED"), "{l}");
        }
        // The plain lines hold no control nor override at all; the coloured ones only
        // the formatter's own colour escapes.
        for l in &lines[..2] {
            assert!(!l.chars().any(agui_sdk_core::needs_escape), "{l:?}");
        }
        for l in &lines {
            assert!(!l.contains(['\u{7}', '\u{9b}', '\u{202e}', '\r']), "{l:?}");
            assert!(!l.contains("\u{1b}]") && !l.contains("\u{1b}[2J"), "{l:?}");
        }
        assert!(lines[0].contains(r"agent=a\u{9b}31m"), "{}", lines[0]);
        assert!(lines[0].contains(r"run_id=r\r\u{202e}x"), "{}", lines[0]);
    }

    /// What [`time`] writes for `t`.
    fn written(t: SystemTime) -> String {
        let mut out = String::new();
        time(&mut Writer::new(&mut out), t).unwrap();
        out
    }

    #[test]
    fn times_are_written_as_the_default_format_writes_them() {
        use std::time::Duration;
        let at =
            |secs: u64, micros: u32| written(UNIX_EPOCH + Duration::new(secs, micros * 1000 + 999));
        for (secs, micros, text) in [
            (0, 0, "1970-01-01T00:00:00.000000Z"),
            (951_782_400, 1, "2000-02-29T00:00:00.000001Z"),
            (4_107_542_399, 999_999, "2100-02-28T23:59:59.999999Z"),
            (4_107_542_400, 0, "2100-03-01T00:00:00.000000Z"),
            (1_000_000_000, 123_456, "2001-09-09T01:46:40.123456Z"),
            (1_709_164_800, 42, "2024-02-29T00:00:00.000042Z"),
            (253_402_300_799, 0, "9999-12-31T23:59:59.000000Z"),
        ] {
            assert_eq!(at(secs, micros), text, "{secs}");
        }
        // Year 10000 and 1969 have no such form: the default timer writes the time
        // now, as it does for every line.
        let year = |t: &str| t[..5].to_owned();
        let now = written(SystemTime::now());
        for t in [
            at(YEAR_10000, 0),
            written(UNIX_EPOCH - Duration::from_secs(1)),
        ] {
            assert_eq!(t.len(), 27, "{t}");
            assert_eq!(year(&t), year(&now), "{t}");
        }
    }
}
