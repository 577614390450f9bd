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
    /// Which of the scenario's requests (0-based) it concerns (the first, when the
    /// same finding came back on several).
    pub request: usize,
    /// The index (0-based) of the event it concerns in that response's stream, when it
    /// concerns one.
    pub event: Option<u64>,
    /// What was seen.
    pub message: String,
    /// The other scenarios the same finding (the same rule, level and message but for
    /// ids and numbers) broke: one root cause is reported once, in the first scenario
    /// that found it, naming the others. Empty when it was found in this one only.
    pub also_in: Vec<&'static str>,
}

/// A finding a scenario made that is reported under an earlier scenario, which found
/// it first (see [`Finding::also_in`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeated {
    /// The rule's stable id.
    pub rule: &'static str,
    /// Its level.
    pub level: Level,
    /// The scenario whose report holds the finding.
    pub reported_in: &'static str,
}

/// What became of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// It ran, reached what it tests, and found no error.
    Passed,
    /// It found an error (its own finding, or one reported under an earlier scenario).
    Failed,
    /// It ran, but the agent never did what the scenario tests (it did not pause, did
    /// not call the offered tool, …), so nothing of it was judged: neither passed nor
    /// failed. [`ScenarioReport::not_exercised`] says why.
    NotExercised,
    /// It did not apply to the agent (a capability it does not advertise) and made no
    /// request for it. [`ScenarioReport::skipped`] says why.
    Skipped,
}

impl Status {
    /// `passed`, `failed`, `not-exercised` or `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::NotExercised => "not-exercised",
            Status::Skipped => "skipped",
        }
    }
}

/// The result of one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioReport {
    /// The scenario's id (`chat`, `frontend-tool`, …).
    pub id: &'static str,
    /// Why it was skipped, when it did not apply.
    pub skipped: Option<String>,
    /// Why it was not exercised, when it ran but the agent never did what it tests
    /// (`the first run did not pause`).
    pub not_exercised: Option<String>,
    /// How many requests it made.
    pub requests: usize,
    /// What it found, in the order found, each once (a finding an earlier scenario
    /// made is in [`repeated`](ScenarioReport::repeated) instead).
    pub findings: Vec<Finding>,
    /// The findings it made that an earlier scenario reports.
    pub repeated: Vec<Repeated>,
}

impl ScenarioReport {
    /// What became of it: failed when any finding of it (its own or a repeated one) is
    /// an error, else skipped, not exercised or passed.
    pub fn status(&self) -> Status {
        let repeated_error = self.repeated.iter().any(|r| r.level == Level::Error);
        if self.count(Level::Error) > 0 || repeated_error {
            Status::Failed
        } else if self.skipped.is_some() {
            Status::Skipped
        } else if self.not_exercised.is_some() {
            Status::NotExercised
        } else {
            Status::Passed
        }
    }

    /// Whether it ran, reached what it tests and found no error (a skipped or not
    /// exercised scenario has not passed, nor failed).
    pub fn passed(&self) -> bool {
        self.status() == Status::Passed
    }

    /// Whether it found an error.
    pub fn failed(&self) -> bool {
        self.status() == Status::Failed
    }

    /// Its own findings of `level` (repeated ones are counted where reported).
    pub fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }

    /// Why it did not run or was not exercised, when it was not.
    pub fn reason(&self) -> Option<&str> {
        self.skipped.as_deref().or(self.not_exercised.as_deref())
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
    /// Whether no scenario failed (no finding is an error). Skipped and not exercised
    /// scenarios do not fail a check; [`Report::scenarios_with`] counts them.
    pub fn passed(&self) -> bool {
        !self.scenarios.iter().any(ScenarioReport::failed)
    }

    /// How many findings of `level` there are in all, each root cause once.
    pub fn count(&self, level: Level) -> usize {
        self.scenarios.iter().map(|s| s.count(level)).sum()
    }

    /// How many scenarios ended with `status`.
    pub fn scenarios_with(&self, status: Status) -> usize {
        self.scenarios
            .iter()
            .filter(|s| s.status() == status)
            .count()
    }

    /// The scenario with this id, when it ran.
    pub fn scenario(&self, id: &str) -> Option<&ScenarioReport> {
        self.scenarios.iter().find(|s| s.id == id)
    }

    /// The summary: `3 errors, 1 warnings; 7 passed, 1 failed, 2 not exercised, 3 skipped`.
    fn summary(&self) -> String {
        format!(
            "{} errors, {} warnings; {} passed, {} failed, {} not exercised, {} skipped",
            self.count(Level::Error),
            self.count(Level::Warning),
            self.scenarios_with(Status::Passed),
            self.scenarios_with(Status::Failed),
            self.scenarios_with(Status::NotExercised),
            self.scenarios_with(Status::Skipped),
        )
    }

    /// The report as one JSON object: `{"target", "passed", "scenarios": [{"id",
    /// "status", "passed", "skipped", "reason"?, "findings": [{"rule", "level",
    /// "request"?, "event"?, "message", "alsoIn"?}], "repeated": [{"rule", "level",
    /// "reportedIn"}]}], "summary": {"errors", "warnings", "passed", "failed",
    /// "notExercised", "skipped"}}`. `status` is `passed`, `failed`, `not-exercised`
    /// or `skipped`; `reason` says why a scenario was skipped or not exercised;
    /// `request` is given when the scenario made several requests; `event` when the
    /// finding concerns an event; `alsoIn` names the other scenarios the same finding
    /// broke, whose `repeated` point back to it.
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
                        if !f.also_in.is_empty() {
                            o.insert("alsoIn".into(), json!(f.also_in));
                        }
                        Value::Object(o)
                    })
                    .collect();
                let repeated: Vec<Value> = s
                    .repeated
                    .iter()
                    .map(|r| {
                        json!({
                            "rule": r.rule,
                            "level": r.level.as_str(),
                            "reportedIn": r.reported_in,
                        })
                    })
                    .collect();
                let mut o = serde_json::Map::new();
                o.insert("id".into(), json!(s.id));
                o.insert("status".into(), json!(s.status().as_str()));
                o.insert("passed".into(), json!(s.passed()));
                o.insert("skipped".into(), json!(s.skipped.is_some()));
                if let Some(r) = s.reason() {
                    o.insert("reason".into(), json!(r));
                }
                o.insert("findings".into(), Value::Array(findings));
                o.insert("repeated".into(), Value::Array(repeated));
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
                "passed": self.scenarios_with(Status::Passed),
                "failed": self.scenarios_with(Status::Failed),
                "notExercised": self.scenarios_with(Status::NotExercised),
                "skipped": self.scenarios_with(Status::Skipped),
            },
        })
    }

    /// The report as JUnit XML: one `<testsuite>`, one `<testcase>` per scenario, a
    /// `<failure>` per error finding (one naming the scenario that reports a repeated
    /// one), `<skipped>` for a scenario that did not apply or was not exercised (its
    /// message says `not exercised: …`); warnings go to the test case's
    /// `<system-out>`.
    pub fn to_junit(&self) -> String {
        let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let failures = self.scenarios_with(Status::Failed);
        let skipped =
            self.scenarios_with(Status::Skipped) + self.scenarios_with(Status::NotExercised);
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
            let mut inner = false;
            match s.status() {
                Status::Skipped => {
                    let r = s.skipped.as_deref().unwrap_or_default();
                    let _ = write!(x, "\n    <skipped message=\"{}\"/>", xml(r));
                    inner = true;
                }
                Status::NotExercised => {
                    let r = s.not_exercised.as_deref().unwrap_or_default();
                    let _ = write!(x, "\n    <skipped message=\"not exercised: {}\"/>", xml(r));
                    inner = true;
                }
                Status::Passed | Status::Failed => {}
            }
            for f in s.findings.iter().filter(|f| f.level == Level::Error) {
                let _ = write!(
                    x,
                    "\n    <failure type=\"{}\" message=\"{}\">{}</failure>",
                    xml(f.rule),
                    xml(&f.message),
                    xml(&where_(s, f))
                );
                inner = true;
            }
            for r in s.repeated.iter().filter(|r| r.level == Level::Error) {
                let _ = write!(
                    x,
                    "\n    <failure type=\"{}\" message=\"the finding reported under {}\"/>",
                    xml(r.rule),
                    xml(r.reported_in)
                );
                inner = true;
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
                inner = true;
            }
            let indent = if inner { "\n  " } else { "" };
            let _ = writeln!(x, "{indent}</testcase>");
        }
        x.push_str("</testsuite>\n");
        x
    }

    /// The report for a person: one line per scenario (`PASS`, `FAIL`, `NOT EXERCISED`
    /// with its reason, `SKIP` with its reason), its findings under it with the
    /// request, the event index and the rule, a finding of several scenarios once
    /// (`also in …`; the others say where it is); then the counts of findings and of
    /// scenarios by outcome. Colours when `color`. What the server sent (a finding's
    /// message, a reason) is written as [`Escaped`] writes it: no control character,
    /// newline or bidirectional override reaches the terminal, and each finding is one
    /// line.
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
            let (tag, code) = match s.status() {
                Status::Skipped => ("SKIP", "33"),
                Status::NotExercised => ("NOT EXERCISED", "33"),
                Status::Passed => ("PASS", "32"),
                Status::Failed => ("FAIL", "31"),
            };
            let _ = write!(out, "{} {}", paint(code, tag), s.id);
            if let Some(r) = s.reason() {
                let _ = write!(out, " ({})", Escaped(r));
            }
            out.push('\n');
            for f in &s.findings {
                let level = match f.level {
                    Level::Error => paint("31", "error"),
                    Level::Warning => paint("33", "warning"),
                };
                let _ = write!(
                    out,
                    "    {level} {} [{}]: {}",
                    where_(s, f),
                    f.rule,
                    Escaped(&f.message)
                );
                if !f.also_in.is_empty() {
                    let _ = write!(out, " (also in {})", f.also_in.join(", "));
                }
                out.push('\n');
            }
            for r in &s.repeated {
                let level = match r.level {
                    Level::Error => paint("31", "error"),
                    Level::Warning => paint("33", "warning"),
                };
                let _ = writeln!(
                    out,
                    "    {level} [{}]: as in {} (reported there)",
                    r.rule, r.reported_in
                );
            }
        }
        let _ = writeln!(
            out,
            "{}: {}",
            self.summary(),
            if self.passed() {
                paint("32", "passed")
            } else {
                paint("31", "failed")
            }
        );
        out
    }
}

/// Reports each root cause once: findings of the same rule and level whose messages
/// differ only in ids and numbers (see [`shape`]) are one finding, kept where first
/// found (its first request), naming the other scenarios in
/// [`Finding::also_in`]; those scenarios list it in [`ScenarioReport::repeated`].
pub(crate) fn group(scenarios: &mut [ScenarioReport]) {
    // (rule, level, shape) → (scenario index, finding index) of the kept finding.
    let mut first: Vec<((&'static str, Level, String), usize, usize)> = Vec::new();
    for si in 0..scenarios.len() {
        let findings = std::mem::take(&mut scenarios[si].findings);
        let id = scenarios[si].id;
        let mut kept = Vec::with_capacity(findings.len());
        for f in findings {
            let key = (f.rule, f.level, shape(&f.message));
            match first.iter().find(|(k, _, _)| *k == key) {
                Some(&(_, s, _)) if s == si => {}
                Some(&(_, s, fi)) => {
                    let owner = scenarios[s].id;
                    let target = &mut scenarios[s].findings[fi];
                    if !target.also_in.contains(&id) {
                        target.also_in.push(id);
                    }
                    let repeat = Repeated {
                        rule: f.rule,
                        level: f.level,
                        reported_in: owner,
                    };
                    if !scenarios[si].repeated.contains(&repeat) {
                        scenarios[si].repeated.push(repeat);
                    }
                }
                None => {
                    first.push((key, si, kept.len()));
                    kept.push(f);
                }
            }
        }
        scenarios[si].findings = kept;
    }
}

/// A message without what changes from one request to the next: every word holding
/// a digit (an id, a count, a byte offset) is `#`.
fn shape(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.bytes().any(|b| b.is_ascii_digit()) {
            out.push('#');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':') {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
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
