//! The inbound pipeline: everything a consumer does to a stream it receives, in one
//! place and in the specification's order.
//!
//! ```text
//! raw frame ─► compatibility ─► enforcement ─► chunk expansion ─┬─► verification ─► reduction
//!  (JSON or    (THINKING_*,     (strip and warn,  (*_CHUNK into    │   (lifecycle      (messages,
//!   typed)      era shims,       or reject)        start/content/  │    rules)          state)
//!               peer version)                      end)            └ client middleware sits here
//! ```
//!
//! The pipeline is split where a client's middleware sits:
//!
//! - [`Intake`] takes raw frames (JSON bytes of an SSE event, a JSON value, or an event
//!   already typed by the protobuf decoder) through compatibility translation,
//!   enforcement and chunk expansion;
//! - [`Settle`] verifies the expanded events and, when it holds a [`Reducer`], applies
//!   them;
//! - [`Inbound`] is both in one, for consumers without middleware (`agui verify`,
//!   `agui apply`, a server checking what its agents emit).
//!
//! Every stage reports what it changed or dropped as an [`InboundWarning`] (also logged
//! through `tracing`), naming the raw event's index; every rejection is an
//! [`InboundError`] naming the stage, the event index and the rule.
//!
//! The common path is fast: a JSON frame is decoded straight into its typed event, and
//! only a frame that the typed decoder cannot take as it is (an unknown key, tag or
//! event type, a deprecated event) is parsed again as a JSON value for translation and
//! enforcement.
//!
//! ```
//! use agui_sdk_core::semantics::{Inbound, InboundConfig};
//!
//! let mut inbound = Inbound::new(InboundConfig::default());
//! let mut events = Vec::new();
//! let mut warnings = Vec::new();
//! for frame in [
//!     r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
//!     r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"Hi","futureProp":1}"#,
//!     r#"{"type":"FUTURE_EVENT"}"#,
//!     r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
//! ] {
//!     inbound.push_json(frame.as_bytes(), &mut events, &mut warnings)?;
//! }
//! // The chunk became start, content and end; the unknown event was dropped.
//! assert_eq!(events.len(), 5);
//! assert_eq!(warnings.len(), 2);
//! assert!(warnings[0].to_string().contains("/futureProp"));
//! assert!(warnings[1].to_string().contains("FUTURE_EVENT"));
//! # Ok::<(), agui_sdk_core::semantics::InboundError>(())
//! ```

mod era;
mod intake;
mod settle;

pub use era::{
    apply_outgoing_era, upgrade_legacy_content, ProtocolVersion, VersionWarning,
    CURRENT_PROTOCOL_VERSION,
};
pub use intake::Intake;
pub use settle::Settle;

use crate::compat::CompatWarning;
use crate::event::Event;
use crate::semantics::{
    Applied, ApplyError, ChunkError, EnforceError, EnforceWarning, Reducer, VerifyError, VerifyRule,
};

/// Which stages run, and for which peer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InboundConfig {
    /// Translate the deprecated `THINKING_*` events (on by default).
    pub compat: bool,
    /// Strip what the protocol does not describe, with a warning, and reject what it
    /// says is malformed (on by default). Off, frames are decoded strictly: an unknown
    /// key is kept in the event's `extra`, and an unknown event type or tag is an error.
    pub enforce: bool,
    /// Expand `*_CHUNK` events into start / content / end (on by default).
    pub expand_chunks: bool,
    /// Verify the lifecycle rules (on by default).
    pub verify: bool,
    /// The newest protocol version the peer is taken to speak (the current one by
    /// default). An older pin turns on the era shims for that peer: see
    /// [`apply_outgoing_era`] for the input, and [`Intake`] for the events.
    pub max_protocol_version: ProtocolVersion,
}

impl Default for InboundConfig {
    fn default() -> Self {
        InboundConfig {
            compat: true,
            enforce: true,
            expand_chunks: true,
            verify: true,
            max_protocol_version: ProtocolVersion::current(),
        }
    }
}

impl InboundConfig {
    /// Every stage on, for a current peer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets whether chunks are expanded.
    pub fn expand_chunks(mut self, on: bool) -> Self {
        self.expand_chunks = on;
        self
    }

    /// Sets whether the lifecycle is verified.
    pub fn verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Sets whether enforcement strips and warns (off: strict decoding).
    pub fn enforce(mut self, on: bool) -> Self {
        self.enforce = on;
        self
    }

    /// Sets whether `THINKING_*` events are translated.
    pub fn compat(mut self, on: bool) -> Self {
        self.compat = on;
        self
    }

    /// Pins the peer's protocol version (turns on the era shims older peers need).
    pub fn max_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.max_protocol_version = version;
        self
    }
}

/// Something the pipeline changed, dropped or could not fully apply, with the index of
/// the raw event it concerns. Displayed as `event N: …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {index}: {kind}")]
#[non_exhaustive]
pub struct InboundWarning {
    /// Index of the raw event (0-based, dropped events included) at the stage that
    /// raised the warning.
    pub index: u64,
    /// What happened.
    pub kind: WarningKind,
}

/// What an [`InboundWarning`] is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WarningKind {
    /// A deprecated event was translated.
    #[error("{}: {}", .0.from, .0.message)]
    Compat(CompatWarning),
    /// Enforcement removed material or dropped an event.
    #[error("{0}")]
    Enforce(EnforceWarning),
    /// The producer declared a protocol version this client cannot vouch for.
    #[error("{0}")]
    Version(VersionWarning),
    /// An era shim dropped or changed something for an older peer.
    #[error("{0}")]
    Era(String),
    /// The reducer skipped an event or applied part of it (a state patch that does not
    /// apply, a delta for an activity that does not exist).
    #[error("{0}")]
    Apply(String),
}

impl InboundWarning {
    pub(crate) fn new(index: u64, kind: WarningKind) -> Self {
        #[cfg(feature = "tracing")]
        match &kind {
            WarningKind::Compat(c) => {
                log_warn!(event_index = index, from = c.from, message = %c.message, "translated a deprecated event")
            }
            WarningKind::Enforce(w) => log_warn!(event_index = index, "{w}"),
            WarningKind::Version(w) => log_warn!(event_index = index, "{w}"),
            WarningKind::Era(w) => log_warn!(event_index = index, "{w}"),
            WarningKind::Apply(w) => log_warn!(event_index = index, "{w}"),
        }
        InboundWarning { index, kind }
    }

    /// The JSON-Pointer-like path of removed material, when the warning is about some.
    pub fn path(&self) -> Option<&str> {
        match &self.kind {
            WarningKind::Enforce(w) => w.path(),
            _ => None,
        }
    }
}

/// Why the pipeline rejected the stream, by stage. Each names the index of the raw
/// event at that stage.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InboundError {
    /// The frame is not a valid event even after enforcement (a malformed known field,
    /// or, without enforcement, any unknown material).
    #[error("event {index}: {source}")]
    Malformed {
        /// Index of the raw event.
        index: u64,
        /// The validation failure, naming the event type and the field.
        source: Box<EnforceError>,
    },
    /// Chunk expansion failed.
    #[error("event {index}: {}", .source.rule)]
    Chunk {
        /// Index of the raw event.
        index: u64,
        /// The expansion failure.
        source: Box<ChunkError>,
    },
    /// The expanded stream broke a lifecycle rule.
    #[error("event {}: {}", .source.index, .source.rule)]
    Verify {
        /// The verification failure (its index counts the events verification saw).
        source: Box<VerifyError>,
    },
    /// The reducer refused an event (a chunk that reached it unexpanded).
    #[error("{source}")]
    Apply {
        /// The reducer's error.
        source: Box<ApplyError>,
    },
    /// The stream ended while a run was open ([`VerifyRule::EndedWithoutTerminal`]).
    #[error("after event {}: {rule}", .events.saturating_sub(1))]
    Unterminated {
        /// Events verified before the end.
        events: u64,
        /// The rule (always [`VerifyRule::EndedWithoutTerminal`]).
        rule: Box<VerifyRule>,
    },
}

impl InboundError {
    /// The stable id of the rule the stream broke (see [`VerifyRule::id`]):
    /// `events/valid-fields` for a malformed event, `chunks/…` for a chunk that cannot
    /// be expanded, the verifier's rule otherwise.
    pub fn rule_id(&self) -> &'static str {
        match self {
            InboundError::Malformed { .. } => "events/valid-fields",
            InboundError::Chunk { source, .. } => source.rule.id(),
            InboundError::Verify { source } => source.rule.id(),
            InboundError::Apply { .. } => "chunks/expanded-before-apply",
            InboundError::Unterminated { rule, .. } => rule.id(),
        }
    }

    /// The index of the event it concerns: the raw event's for a malformed event or a
    /// chunk, the verified event's for a lifecycle rule; `None` for the end of the
    /// stream and the reducer.
    pub fn event_index(&self) -> Option<u64> {
        match self {
            InboundError::Malformed { index, .. } | InboundError::Chunk { index, .. } => {
                Some(*index)
            }
            InboundError::Verify { source } => Some(source.index as u64),
            InboundError::Apply { .. } | InboundError::Unterminated { .. } => None,
        }
    }
}

impl WarningKind {
    /// The stable id of the rule behind the warning: `events/unknown-event`,
    /// `events/unknown-field`, `input/unknown-field`, `compat/deprecated-event`,
    /// `versioning/protocol-version`, `versioning/era`, `apply/tolerated`.
    pub fn rule_id(&self) -> &'static str {
        match self {
            WarningKind::Compat(_) => "compat/deprecated-event",
            WarningKind::Enforce(EnforceWarning::UnrecognisedEvent { .. }) => {
                "events/unknown-event"
            }
            WarningKind::Enforce(EnforceWarning::RemovedFromInput { .. }) => "input/unknown-field",
            WarningKind::Enforce(_) => "events/unknown-field",
            WarningKind::Version(_) => "versioning/protocol-version",
            WarningKind::Era(_) => "versioning/era",
            WarningKind::Apply(_) => "apply/tolerated",
        }
    }
}

impl From<VerifyError> for InboundError {
    fn from(source: VerifyError) -> Self {
        InboundError::Verify {
            source: Box::new(source),
        }
    }
}

impl From<ApplyError> for InboundError {
    fn from(source: ApplyError) -> Self {
        InboundError::Apply {
            source: Box::new(source),
        }
    }
}

/// The whole pipeline, for consumers without middleware: [`Intake`] then [`Settle`].
#[derive(Debug)]
pub struct Inbound {
    intake: Intake,
    settle: Settle,
    /// Events between the stages when they are consumed rather than delivered.
    scratch: Vec<Event>,
}

impl Default for Inbound {
    fn default() -> Self {
        Self::new(InboundConfig::default())
    }
}

impl Inbound {
    /// A pipeline without reduction.
    pub fn new(config: InboundConfig) -> Self {
        Inbound {
            settle: Settle::new(config.verify, None),
            intake: Intake::new(config),
            scratch: Vec::new(),
        }
    }

    /// A pipeline that also applies every event to `reducer`.
    pub fn with_reducer(config: InboundConfig, reducer: Reducer) -> Self {
        Inbound {
            settle: Settle::new(config.verify, Some(reducer)),
            intake: Intake::new(config),
            scratch: Vec::new(),
        }
    }

    /// The reducer, when the pipeline has one.
    pub fn reducer(&self) -> Option<&Reducer> {
        self.settle.reducer()
    }

    /// Takes the reducer out of the pipeline.
    pub fn into_reducer(self) -> Option<Reducer> {
        self.settle.into_reducer()
    }

    /// Every run on the stream must be on `thread_id` (see [`Settle::expect_thread`]).
    pub fn expect_thread(mut self, thread_id: impl Into<String>) -> Self {
        self.settle = self.settle.expect_thread(thread_id);
        self
    }

    /// The end of the stream: an error when a run is still open (see
    /// [`Settle::finish`]).
    pub fn finish(&self) -> Result<(), InboundError> {
        self.settle.finish()
    }

    /// Events that reached verification so far.
    pub fn events_settled(&self) -> u64 {
        self.settle.events_seen()
    }

    /// Processes one event's JSON (the data of an SSE event, one JSON line); the events
    /// it yields, verified (and applied), are appended to `out`. On an error, `out` holds
    /// the events that passed before it.
    #[inline]
    pub fn push_json(
        &mut self,
        data: &[u8],
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        let start = out.len();
        self.intake.push_json(data, out, warnings)?;
        self.settle_from(start, out, warnings)
    }

    /// Processes one event given as a JSON value.
    #[inline]
    pub fn push_value(
        &mut self,
        value: serde_json::Value,
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        let start = out.len();
        self.intake.push_value(value, out, warnings)?;
        self.settle_from(start, out, warnings)
    }

    /// Processes one event already typed (decoded from protobuf, or produced in process).
    #[inline]
    pub fn push_event(
        &mut self,
        event: Event,
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        let start = out.len();
        self.intake.push_event(event, out, warnings)?;
        self.settle_from(start, out, warnings)
    }

    /// Takes one event in and applies what it yields to the reducer, moving the events
    /// into it instead of delivering them (no copy: for a consumer that only wants the
    /// conversation, such as `agui apply`). The frame is JSON or a typed event.
    pub fn consume(
        &mut self,
        frame: crate::encoding::RawBody<'_>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        self.scratch.clear();
        match frame {
            crate::encoding::RawBody::Json(data) => {
                self.intake.push_json(data, &mut self.scratch, warnings)?
            }
            crate::encoding::RawBody::Event(event) => {
                self.intake.push_event(event, &mut self.scratch, warnings)?
            }
        }
        for e in self.scratch.drain(..) {
            self.settle.push_owned(e, warnings)?;
        }
        Ok(())
    }

    /// Settles `out[start..]` in place (no copy), keeping only what passed.
    #[inline]
    fn settle_from(
        &mut self,
        start: usize,
        out: &mut Vec<Event>,
        warnings: &mut Vec<InboundWarning>,
    ) -> Result<(), InboundError> {
        for i in start..out.len() {
            if let Err(e) = self.settle.push(&out[i], warnings) {
                out.truncate(i);
                return Err(e);
            }
        }
        Ok(())
    }
}

/// What [`Settle::push`] did with an event.
pub type Settled = Option<Applied>;
