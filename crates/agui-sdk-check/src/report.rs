//! What a check found: a [`Report`] of [`ScenarioReport`]s, each with its
//! [`Finding`]s, and its three renderings (text for a person, JSON, JUnit XML).

use std::fmt::Write as _;

use agui_sdk_core::Escaped;
use serde_json::{json, Value};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// The server breaks a rule: a conforming client rejects or misreads what it sent.
    Error,
    /// The server sends something a client tolerates (unknown material it strips, a
    /// version it cannot vouch for).
    Warning,
}

impl Level {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

/// One thing a scenario found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's stable id (`lifecycle/run-started-first`; see `docs/check-rules.md`).
    pub rule: &'static str,
    /// Its level.
    pub level: Level,
    /// Which of the scenario's requests (0-based) it concerns.
    pub request: usize,
    /// The index (0-based) of the event it concerns in that response's stream, when it
    /// concerns one.
    pub event: Option<u64>,
    /// What was seen.
    pub message: String,
}

/// The result of one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioReport {
    /// The scenario's id (`chat`, `frontend-tool`, …).
    pub id: &'static str,
    /// Why it was skipped, when it did not apply.
    pub skipped: Option<String>,
    /// How many requests it made.
    pub requests: usize,
    /// What it found, in the order found.
    pub findings: Vec<Finding>,
}

impl ScenarioReport {
    /// Whether no finding is an error (a skipped scenario passes).
    pub fn passed(&self) -> bool {
        !self.findings.iter().any(|f| f.level == Level::Error)
    }

    /// The findings of `level`.
    pub fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }
}

/// The result of a whole check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The URL checked (with any password in it replaced by `***`).
    pub target: String,
    /// Every scenario run, in order.
    pub scenarios: Vec<ScenarioReport>,
}

impl Report {
    /// Whether no finding of any scenario is an error.
    pub fn passed(&self) -> bool {
        self.scenarios.iter().all(ScenarioReport::passed)
    }

    /// How many findings of `level` there are in all.
    pub fn count(&self, level: Level) -> usize {
        self.scenarios.iter().map(|s| s.count(level)).sum()
    }

    /// The scenario with this id, when it ran.
    pub fn scenario(&self, id: &str) -> Option<&ScenarioReport> {
        self.scenarios.iter().find(|s| s.id == id)
    }

    /// The report as one JSON object: `{"target", "passed", "scenarios": [{"id",
    /// "passed", "skipped", "reason"?, "findings": [{"rule", "level", "request"?,
    /// "event"?, "message"}]}], "summary": {"errors", "warnings"}}`. `request` is
    /// given when the scenario made several requests; `event` when the finding
    /// concerns an event.
    pub fn to_json(&self) -> Value {
        let scenarios: Vec<Value> = self
            .scenarios
            .iter()
            .map(|s| {
                let findings: Vec<Value> = s
                    .findings
                    .iter()
                    .map(|f| {
                        let mut o = serde_json::Map::new();
                        o.insert("rule".into(), json!(f.rule));
                        o.insert("level".into(), json!(f.level.as_str()));
                        if s.requests > 1 {
                            o.insert("request".into(), json!(f.request));
                        }
                        if let Some(e) = f.event {
                            o.insert("event".into(), json!(e));
                        }
                        o.insert("message".into(), json!(f.message));
                        Value::Object(o)
                    })
                    .collect();
                let mut o = serde_json::Map::new();
                o.insert("id".into(), json!(s.id));
                o.insert("passed".into(), json!(s.passed()));
                o.insert("skipped".into(), json!(s.skipped.is_some()));
                if let Some(r) = &s.skipped {
                    o.insert("reason".into(), json!(r));
                }
                o.insert("findings".into(), Value::Array(findings));
                Value::Object(o)
            })
            .collect();
        json!({
            "target": self.target,
            "passed": self.passed(),
            "scenarios": scenarios,
            "summary": {
                "errors": self.count(Level::Error),
                "warnings": self.count(Level::Warning),
            },
        })
    }

    /// The report as JUnit XML: one `<testsuite>`, one `<testcase>` per scenario, a
    /// `<failure>` per error finding, `<skipped>` for a scenario that did not apply;
    /// warnings go to the test case's `<system-out>`.
    pub fn to_junit(&self) -> String {
        let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let failures = self.scenarios.iter().filter(|s| !s.passed()).count();
        let skipped = self
            .scenarios
            .iter()
            .filter(|s| s.skipped.is_some())
            .count();
        let _ = writeln!(
            x,
            "<testsuite name=\"agui check {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
            xml(&self.target),
            self.scenarios.len()
        );
        for s in &self.scenarios {
            let _ = write!(
                x,
                "  <testcase classname=\"agui-sdk-check\" name=\"{}\">",
                xml(s.id)
            );
            if let Some(r) = &s.skipped {
                let _ = write!(x, "\n    <skipped message=\"{}\"/>", xml(r));
            }
            for f in s.findings.iter().filter(|f| f.level == Level::Error) {
                let _ = write!(
                    x,
                    "\n    <failure type=\"{}\" message=\"{}\">{}</failure>",
                    xml(f.rule),
                    xml(&f.message),
                    xml(&where_(s, f))
                );
            }
            let warnings: Vec<String> = s
                .findings
                .iter()
                .filter(|f| f.level == Level::Warning)
                .map(|f| format!("warning {}: {} ({})", f.rule, f.message, where_(s, f)))
                .collect();
            if !warnings.is_empty() {
                let _ = write!(
                    x,
                    "\n    <system-out>{}</system-out>",
                    xml(&warnings.join("\n"))
                );
            }
            let indent = if s.findings.is_empty() && s.skipped.is_none() {
                ""
            } else {
                "\n  "
            };
            let _ = writeln!(x, "{indent}</testcase>");
        }
        x.push_str("</testsuite>\n");
        x
    }

    /// The report for a person: one line per scenario (`PASS`, `FAIL`, `SKIP`), its
    /// findings under it with the request, the event index and the rule; colours when
    /// `color`. What the server sent (a finding's message, a reason) is written as
    /// [`Escaped`] writes it: no control character, newline or bidirectional override
    /// reaches the terminal, and each finding is one line.
    pub fn to_text(&self, color: bool) -> String {
        let paint = |code: &str, s: &str| {
            if color {
                format!("\x1b[{code}m{s}\x1b[0m")
            } else {
                s.to_owned()
            }
        };
        let mut out = format!("agui check {}\n", Escaped(&self.target));
        for s in &self.scenarios {
            let (tag, code) = match (&s.skipped, s.passed()) {
                (Some(_), _) => ("SKIP", "33"),
                (None, true) => ("PASS", "32"),
                (None, false) => ("FAIL", "31"),
            };
            let _ = write!(out, "{} {}", paint(code, tag), s.id);
            if let Some(r) = &s.skipped {
                let _ = write!(out, " ({})", Escaped(r));
            }
            out.push('\n');
            for f in &s.findings {
                let level = match f.level {
                    Level::Error => paint("31", "error"),
                    Level::Warning => paint("33", "warning"),
                };
                let _ = writeln!(
                    out,
                    "    {level} {} [{}]: {}",
                    where_(s, f),
                    f.rule,
                    Escaped(&f.message)
                );
            }
        }
        let _ = writeln!(
            out,
            "{} errors, {} warnings: {}",
            self.count(Level::Error),
            self.count(Level::Warning),
            if self.passed() {
                paint("32", "passed")
            } else {
                paint("31", "failed")
            }
        );
        out
    }
}

/// `request 1, event 4`, as much of it as applies.
fn where_(s: &ScenarioReport, f: &Finding) -> String {
    let mut parts = Vec::new();
    if s.requests > 1 {
        parts.push(format!("request {}", f.request));
    }
    if let Some(e) = f.event {
        parts.push(format!("event {e}"));
    }
    if parts.is_empty() {
        "response".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `s` escaped for XML text and attributes; characters XML 1.0 cannot carry are
/// replaced.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}
