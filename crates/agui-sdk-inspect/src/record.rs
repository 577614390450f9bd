//! One run as the inspector sees it, with no I/O: bytes go in (a response body as it
//! arrives, or a recording file), and out come the timeline rows, the findings of the
//! inbound pipeline and the conversation the reducer builds.
//!
//! The pipeline is the one every consumer of this SDK uses (intake: compatibility,
//! enforcement, chunk expansion; then verification and reduction), with one difference
//! that suits an inspector: a lifecycle violation is a finding, not the end. After the
//! first one the verifier stops (the reference client ends the run there, and later
//! verdicts would only echo it), while the reducer goes on applying what arrives.

use agui_sdk_core::encoding::{DecoderLimits, Encoding, EventDecoder, Framing, RawBody};
use agui_sdk_core::event::EventFamily;
use agui_sdk_core::semantics::{InboundConfig, InboundError, Intake, Reducer, Verifier};
use agui_sdk_core::{Event, RunAgentInput};
use serde::Serialize;
use serde_json::Value;

use crate::Limits;

/// Which stage of the pipeline a [`Diagnostic`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The frame is not an event (framing, JSON syntax, a malformed field).
    Decode,
    /// Enforcement or compatibility changed or dropped material.
    Enforce,
    /// A lifecycle rule was broken.
    Verify,
    /// The reducer skipped an event or applied part of it.
    Apply,
    /// The connection: an HTTP error, a cut stream, a limit reached.
    Transport,
}

/// How serious a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The reference client would refuse the stream here.
    Error,
    /// Something was changed, dropped or only partly applied.
    Warning,
}

/// Something the pipeline reported about one raw event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// Index of the raw event it concerns (for a failure after the last event: the
    /// index the next one would have had).
    pub index: u64,
    /// How serious.
    pub severity: Severity,
    /// Where it was found.
    pub stage: Stage,
    /// What was wrong, in words.
    pub message: String,
}

/// One row of the timeline: a raw event as it arrived.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRow {
    /// The raw event's 0-based position in the stream.
    pub index: u64,
    /// Its `type` as sent (also an unknown one).
    #[serde(rename = "type")]
    pub event_type: String,
    /// Milliseconds since the run started.
    pub t: f64,
    /// Bytes of its frame on the wire.
    pub size: u64,
}

/// The latest event that changed the state, with the JSON Patch from the state before
/// it to the state after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateChange {
    /// Index of the raw event.
    pub index: u64,
    /// The change as JSON Patch operations.
    pub diff: Value,
}

/// How a run's byte stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The body ended.
    Completed,
    /// The user stopped the run.
    Stopped,
    /// The transport failed, or the answer was not an event stream.
    Failed(String),
}

/// What the last terminal event said.
#[derive(Debug, Clone, PartialEq)]
enum Terminal {
    Finished,
    Interrupted,
    Error(String),
}

/// The status shown for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Bytes may still come.
    Running,
    /// Ended with `RUN_FINISHED` (or stopped by the user).
    Finished,
    /// Ended with `RUN_ERROR`, or the stream failed or stopped short.
    Error,
    /// Ended with `RUN_FINISHED` leaving interrupts open.
    Interrupted,
}

enum Reader {
    /// Not known yet (the relay waits for the response's `Content-Type`).
    Pending,
    Decoder(Box<EventDecoder>),
    Lines(Vec<u8>),
    /// Stopped reading (a framing error or a limit).
    Closed,
}

/// One run being recorded and analysed. Sans-io: the caller pushes bytes with the
/// time they arrived, and reads the results.
pub struct Recording {
    framing: Reader,
    limits: Limits,
    intake: Intake,
    verifier: Option<Verifier>,
    reducer: Reducer,
    rows: Vec<EventRow>,
    raw: Vec<Box<[u8]>>,
    raw_bytes: u64,
    findings: Vec<Diagnostic>,
    findings_dropped: u64,
    bytes: u64,
    first_event_ms: Option<f64>,
    last_ms: f64,
    state_change: Option<StateChange>,
    terminal: Option<Terminal>,
    end: Option<End>,
    thread_id: Option<String>,
    started_input: Option<Value>,
    scratch: Vec<Event>,
    warnings: Vec<agui_sdk_core::semantics::InboundWarning>,
    seed: Option<RunAgentInput>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("events", &self.rows.len())
            .field("findings", &self.findings.len())
            .field("bytes", &self.bytes)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// A recording whose framing is set later with [`Recording::set_format`].
    pub fn new(limits: Limits) -> Self {
        Recording {
            framing: Reader::Pending,
            limits,
            intake: Intake::new(InboundConfig::default().verify(false)),
            verifier: Some(Verifier::new()),
            reducer: Reducer::default(),
            rows: Vec::new(),
            raw: Vec::new(),
            raw_bytes: 0,
            findings: Vec::new(),
            findings_dropped: 0,
            bytes: 0,
            first_event_ms: None,
            last_ms: 0.0,
            state_change: None,
            terminal: None,
            end: None,
            thread_id: None,
            started_input: None,
            scratch: Vec::new(),
            warnings: Vec::new(),
            seed: None,
        }
    }

    /// Starts the conversation from what the run was sent (its messages and state), as
    /// a client does. Returns `false`, changing nothing, when `input` is not a
    /// `RunAgentInput`.
    pub fn seed(&mut self, input: &Value) -> bool {
        match agui_sdk_core::wire::from_json_value::<RunAgentInput>(input) {
            Ok(input) => {
                self.reducer = Reducer::from_input(&input);
                self.seed = Some(input);
                true
            }
            Err(_) => false,
        }
    }

    /// The input the conversation started from.
    pub fn seed_input(&self) -> Option<&RunAgentInput> {
        self.seed.as_ref()
    }

    /// A recording of a stream in `format`.
    pub fn with_format(format: Framing, limits: Limits) -> Self {
        let mut r = Recording::new(limits);
        r.set_format(format);
        r
    }

    /// Sets how the bytes are framed (once, before the first [`Recording::push`]).
    pub fn set_format(&mut self, format: Framing) {
        let decoder_limits = DecoderLimits::default();
        self.framing = match format {
            Framing::Sse => Reader::Decoder(Box::new(EventDecoder::with_limits(
                Encoding::Sse,
                decoder_limits,
            ))),
            Framing::Proto => Reader::Decoder(Box::new(EventDecoder::with_limits(
                Encoding::Proto,
                decoder_limits,
            ))),
            Framing::JsonLines => Reader::Lines(Vec::new()),
        };
    }

    /// Takes the next bytes of the stream, which arrived `t_ms` after the run started.
    /// Returns `false` once the recording takes nothing more (a framing error, or the
    /// inspector's limits reached): the caller should stop reading.
    pub fn push(&mut self, bytes: &[u8], t_ms: f64) -> bool {
        self.bytes += bytes.len() as u64;
        self.last_ms = t_ms;
        match &mut self.framing {
            Reader::Pending | Reader::Closed => return false,
            Reader::Decoder(d) => d.push(bytes),
            Reader::Lines(buf) => buf.extend_from_slice(bytes),
        }
        self.drain(t_ms, false);
        !matches!(self.framing, Reader::Closed)
    }

    /// Ends the recording. Whatever the decoder still holds is read first.
    pub fn finish(&mut self, end: End, t_ms: f64) {
        if self.end.is_some() {
            return;
        }
        self.last_ms = t_ms;
        if let Reader::Decoder(d) = &mut self.framing {
            d.finish();
        }
        if end != End::Stopped {
            self.drain(t_ms, true);
        }
        let next = self.rows.len() as u64;
        match &end {
            End::Failed(why) => self.finding(next, Severity::Error, Stage::Transport, why.clone()),
            End::Completed if self.terminal.is_none() && !self.rows.is_empty() => self.finding(
                next,
                Severity::Error,
                Stage::Transport,
                "the stream ended without a terminal event (RUN_FINISHED or RUN_ERROR)".into(),
            ),
            End::Completed if self.rows.is_empty() => self.finding(
                0,
                Severity::Error,
                Stage::Transport,
                "the stream ended without any event".into(),
            ),
            _ => {}
        }
        self.framing = Reader::Closed;
        self.end = Some(end);
    }

    fn drain(&mut self, t_ms: f64, at_end: bool) {
        let mut framing = std::mem::replace(&mut self.framing, Reader::Closed);
        let keep = match &mut framing {
            Reader::Decoder(d) => self.drain_decoder(d, t_ms),
            Reader::Lines(buf) => self.drain_lines(buf, t_ms, at_end),
            Reader::Pending | Reader::Closed => false,
        };
        if keep {
            self.framing = framing;
        }
    }

    fn drain_decoder(&mut self, d: &mut EventDecoder, t_ms: f64) -> bool {
        loop {
            let before = d.offset();
            let Some(next) = d.next_raw() else {
                return true;
            };
            match next {
                Ok(raw) => {
                    let ok = match raw.body {
                        RawBody::Json(data) => {
                            let size = data.len() as u64 + 8;
                            let data = data.to_vec();
                            self.take_json(data, size, t_ms)
                        }
                        RawBody::Event(event) => {
                            let size = d.offset().saturating_sub(before);
                            self.take_event(event, size, t_ms)
                        }
                    };
                    if !ok {
                        return false;
                    }
                }
                Err(e) => {
                    let index = self.rows.len() as u64;
                    self.finding(
                        index,
                        Severity::Error,
                        Stage::Decode,
                        format!("{e}; the rest of the stream is not read"),
                    );
                    return false;
                }
            }
        }
    }

    fn drain_lines(&mut self, buf: &mut Vec<u8>, t_ms: f64, at_end: bool) -> bool {
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + nl];
            start += nl + 1;
            if !self.take_line(line, t_ms) {
                return false;
            }
        }
        buf.drain(..start);
        if buf.len() > self.limits.max_event_bytes {
            let index = self.rows.len() as u64;
            self.finding(
                index,
                Severity::Error,
                Stage::Decode,
                format!(
                    "a line is longer than {} bytes; the rest of the recording is not read",
                    self.limits.max_event_bytes
                ),
            );
            return false;
        }
        if at_end && !buf.is_empty() {
            let line = std::mem::take(buf);
            return self.take_line(&line, t_ms);
        }
        true
    }

    fn take_line(&mut self, line: &[u8], t_ms: f64) -> bool {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return true;
        }
        self.take_json(line.to_vec(), line.len() as u64 + 1, t_ms)
    }

    /// Room for one more event under the limits; a finding when there is none.
    fn room(&mut self, size: usize) -> bool {
        let index = self.rows.len() as u64;
        if self.rows.len() >= self.limits.max_events {
            let max = self.limits.max_events;
            self.finding(
                index,
                Severity::Error,
                Stage::Transport,
                format!("the run passed the inspector's limit of {max} events; the rest is not recorded"),
            );
            return false;
        }
        if self.raw_bytes + size as u64 > self.limits.max_run_bytes {
            let max = self.limits.max_run_bytes;
            self.finding(
                index,
                Severity::Error,
                Stage::Transport,
                format!("the run passed the inspector's limit of {max} bytes of events; the rest is not recorded"),
            );
            return false;
        }
        true
    }

    fn take_json(&mut self, data: Vec<u8>, size: u64, t_ms: f64) -> bool {
        if !self.room(data.len()) {
            return false;
        }
        let index = self.rows.len() as u64;
        let event_type = type_of(&data);
        self.scratch.clear();
        let result = self
            .intake
            .push_json(&data, &mut self.scratch, &mut self.warnings);
        self.record_row(index, event_type, t_ms, size, data.into_boxed_slice());
        self.settle(index, result);
        true
    }

    fn take_event(&mut self, event: Event, size: u64, t_ms: f64) -> bool {
        let mut json = Vec::with_capacity(128);
        event.write_json(&mut json);
        if !self.room(json.len()) {
            return false;
        }
        let index = self.rows.len() as u64;
        let event_type = event.event_type().as_str().to_owned();
        self.scratch.clear();
        let result = self
            .intake
            .push_event(event, &mut self.scratch, &mut self.warnings);
        self.record_row(index, event_type, t_ms, size, json.into_boxed_slice());
        self.settle(index, result);
        true
    }

    fn record_row(&mut self, index: u64, event_type: String, t: f64, size: u64, raw: Box<[u8]>) {
        self.first_event_ms.get_or_insert(t);
        self.raw_bytes += raw.len() as u64;
        self.raw.push(raw);
        self.rows.push(EventRow {
            index,
            event_type,
            t,
            size,
        });
    }

    /// Verifies and applies what the intake yielded for raw event `index`.
    fn settle(&mut self, index: u64, intake: Result<(), InboundError>) {
        for w in std::mem::take(&mut self.warnings) {
            self.finding(index, Severity::Warning, Stage::Enforce, w.kind.to_string());
        }
        if let Err(e) = intake {
            let stage = match e {
                InboundError::Chunk { .. } | InboundError::Verify { .. } => Stage::Verify,
                _ => Stage::Decode,
            };
            self.finding(index, Severity::Error, stage, inbound_message(&e));
        }
        let events = std::mem::take(&mut self.scratch);
        for event in &events {
            self.observe(index, event);
        }
        self.scratch = events;
    }

    fn observe(&mut self, index: u64, event: &Event) {
        if let Some(v) = &mut self.verifier {
            if let Err(e) = v.push(event) {
                self.verifier = None;
                self.finding(
                    index,
                    Severity::Error,
                    Stage::Verify,
                    format!(
                        "{} (the reference client ends the run here; later events are not verified)",
                        e.rule
                    ),
                );
            }
        }
        match event {
            Event::RunStarted(s) => {
                self.thread_id = Some(s.thread_id.clone());
                if let Some(input) = &s.input {
                    self.started_input = serde_json::to_value(input).ok();
                }
                self.terminal = None;
            }
            Event::RunError(e) => self.terminal = Some(Terminal::Error(e.message.clone())),
            _ => {}
        }
        let touches_state = event.family() == EventFamily::State;
        let before = if touches_state {
            Some(self.reducer.state().cloned().unwrap_or(Value::Null))
        } else {
            None
        };
        match self.reducer.apply(event) {
            Ok(applied) => {
                if let Some(w) = applied.warning {
                    self.finding(index, Severity::Warning, Stage::Apply, w);
                }
                if let (Some(before), true) = (before, applied.state_changed) {
                    let after = self.reducer.state().cloned().unwrap_or(Value::Null);
                    let diff = serde_json::to_value(json_patch::diff(&before, &after))
                        .unwrap_or(Value::Null);
                    self.state_change = Some(StateChange { index, diff });
                }
                if matches!(event, Event::RunFinished(_)) {
                    self.terminal = Some(if self.reducer.pending_interrupts().is_empty() {
                        Terminal::Finished
                    } else {
                        Terminal::Interrupted
                    });
                }
            }
            Err(e) => self.finding(index, Severity::Error, Stage::Apply, e.to_string()),
        }
    }

    fn finding(&mut self, index: u64, severity: Severity, stage: Stage, message: String) {
        if self.findings.len() >= self.limits.max_findings {
            self.findings_dropped += 1;
            return;
        }
        self.findings.push(Diagnostic {
            index,
            severity,
            stage,
            message,
        });
    }

    /// The timeline so far.
    pub fn rows(&self) -> &[EventRow] {
        &self.rows
    }

    /// The findings so far (at most [`Limits::max_findings`]).
    pub fn findings(&self) -> &[Diagnostic] {
        &self.findings
    }

    /// Findings not kept because of [`Limits::max_findings`].
    pub fn findings_dropped(&self) -> u64 {
        self.findings_dropped
    }

    /// The JSON of each raw event as received (protobuf events as canonical JSON).
    pub fn raw_events(&self) -> &[Box<[u8]>] {
        &self.raw
    }

    /// The conversation as the reducer has it now.
    pub fn reducer(&self) -> &Reducer {
        &self.reducer
    }

    /// The latest event that changed the state.
    pub fn state_change(&self) -> Option<&StateChange> {
        self.state_change.as_ref()
    }

    /// The thread named by the last `RUN_STARTED`.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The input the last `RUN_STARTED` carried.
    pub fn started_input(&self) -> Option<&Value> {
        self.started_input.as_ref()
    }

    /// Bytes received.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes of event JSON kept (what [`Limits::max_run_bytes`](crate::Limits) bounds).
    pub fn kept_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// Records a transport error finding saying why nothing more of the run is kept
    /// (the caller stops pushing).
    pub fn refuse_more(&mut self, why: String) {
        let index = self.rows.len() as u64;
        self.finding(index, Severity::Error, Stage::Transport, why);
    }

    /// Milliseconds from the start to the first event.
    pub fn first_event_ms(&self) -> Option<f64> {
        self.first_event_ms
    }

    /// Milliseconds from the start to the last bytes (or to the end).
    pub fn last_ms(&self) -> f64 {
        self.last_ms
    }

    /// How the stream ended, once it has.
    pub fn end(&self) -> Option<&End> {
        self.end.as_ref()
    }

    /// The status to show, and the error behind an `error` status.
    pub fn status(&self) -> (Status, Option<String>) {
        let Some(end) = &self.end else {
            return (Status::Running, None);
        };
        match (end, &self.terminal) {
            (End::Stopped, _) => (Status::Finished, None),
            (End::Failed(why), _) => (Status::Error, Some(why.clone())),
            (End::Completed, Some(Terminal::Finished)) => (Status::Finished, None),
            (End::Completed, Some(Terminal::Interrupted)) => (Status::Interrupted, None),
            (End::Completed, Some(Terminal::Error(m))) => (Status::Error, Some(m.clone())),
            (End::Completed, None) => (
                Status::Error,
                Some(
                    "the stream ended without a terminal event (RUN_FINISHED or RUN_ERROR)".into(),
                ),
            ),
        }
    }
}

/// A finding's text for a pipeline error, without the `event N:` prefix the finding's
/// index already gives.
fn inbound_message(e: &InboundError) -> String {
    let text = e.to_string();
    match text.strip_prefix("event ") {
        Some(rest) => match rest.split_once(": ") {
            Some((n, msg)) if n.bytes().all(|b| b.is_ascii_digit()) => msg.to_owned(),
            _ => text,
        },
        None => text,
    }
}

/// The `type` an event's JSON names, read without building the event (`?` when there
/// is none, or the text is not a JSON object).
pub fn type_of(data: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        ty: Option<std::borrow::Cow<'a, str>>,
    }
    match serde_json::from_slice::<Tag<'_>>(data) {
        Ok(Tag { ty: Some(t) }) => t.into_owned(),
        _ => "?".to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
