//! Outgoing events for a consumer that speaks a protocol older than 1.0.
//!
//! A producer answering a request that declares no `protocolVersion`, or one below
//! `1.0`, may be talking to a pre-1.0 client, such as `@ag-ui/client` 0.0.x. Such a
//! client validates each event against its own schemas, and a schema error ends its
//! stream without a word. [`Downgrade`] rewrites what a 0.0.x schema cannot read
//! (checked field by field against `@ag-ui/core` 0.0.48, whose event schemas let
//! unknown keys through but not unknown event types or content parts):
//!
//! | event | for a pre-1.0 consumer |
//! |---|---|
//! | `SUBAGENT_STARTED`, `SUBAGENT_FINISHED`, `SUBAGENT_ERROR`: every type introduced in 1.0 or later ([`EventType::since`]; unknown types there) | a `CUSTOM` event named after the type, whose `value` is the event's fields: nothing is lost |
//! | `TEXT_MESSAGE_CONTENT`, `REASONING_MESSAGE_CONTENT` with an empty `delta` (refused there) | dropped: it carries nothing |
//! | `RUN_STARTED` | no `protocolVersion` (the consumer did not declare one it knows) |
//! | `RUN_FINISHED` with outcome `cancelled` (refused by 0.0.59) | no `outcome`, and `result` `{"cancelled": true}` (the run's own result, if any, under `result` in it); logged as a warning, since the consumer now reads a success |
//! | `RUN_FINISHED` with outcome `success` and `pendingToolCallIds` (refused by 0.0.59) | outcome `{"type": "success"}`: the consumer finds the unanswered calls in its messages, as a 0.0.x client does anyway |
//! | user messages in `RUN_STARTED.input` and `MESSAGES_SNAPSHOT` with `image`, `audio`, `video` or `document` parts (unknown there) | each such part written as the older `binary` part: `mimeType`, and `data`, `url` or `id` from the source, `filename` from the metadata |
//!
//! Everything else is identical in both: the 1.0 fields the old schemas do not list
//! (`outcome`, `metadata`, `subagentRunId`, `encryptedValueType`, ...) pass through
//! them. The last rewrite has no typed form (a `binary` part is not a 1.x type), so
//! [`Downgrade::apply`] returns such an event as JSON ([`Outgoing::Json`]).

use serde_json::{json, Map, Value};

use crate::event::{Custom, Event, EventType, RunFinished, Since};
use crate::semantics::ProtocolVersion;
use crate::types::{Content, ContentPart, Message, PartSource, RunFinishedOutcome};
use crate::JsonText;

/// What [`Downgrade::apply_json`] makes of an event's canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonRewrite<'a> {
    /// The text goes to the consumer as it is.
    Unchanged(&'a [u8]),
    /// The consumer gets this text instead (a field taken out).
    Spliced(Vec<u8>),
    /// Only the decoded event can say: decode it and [`Downgrade::apply`] it.
    Decode,
}

/// The span of the top-level member `key` of the JSON object `json`, with the comma
/// that separates it from the next member (or the previous, for the last): what
/// removing the member removes. `None` when there is no such member.
fn top_level_member(json: &[u8], key: &[u8]) -> Option<(usize, usize)> {
    let skip_ws = |mut i: usize| {
        while json.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let mut i = skip_ws(0);
    if json.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut previous_end: Option<usize> = None;
    loop {
        i = skip_ws(i);
        if json.get(i) != Some(&b'"') {
            return None;
        }
        let start = i;
        let key_end = crate::wire::string_end(json, i);
        let this_key = json.get(start + 1..key_end.checked_sub(1)?)?;
        i = skip_ws(key_end);
        if json.get(i) != Some(&b':') {
            return None;
        }
        let value_end = crate::wire::value_end(json, i + 1);
        let after = skip_ws(value_end);
        let next_is_member = json.get(after) == Some(&b',');
        if this_key == key {
            return Some(match (next_is_member, previous_end) {
                (true, _) => (start, skip_ws(after + 1)),
                (false, Some(prev)) => (prev, value_end),
                (false, None) => (start, value_end),
            });
        }
        if !next_is_member {
            return None;
        }
        previous_end = Some(value_end);
        i = after + 1;
    }
}

/// One outgoing event after [`Downgrade::apply`].
// The large variant is the common one: boxing it would allocate once per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// A typed event, to be encoded as usual.
    Event(Event),
    /// An event that only exists as JSON for the consumer (written as one SSE `data:`
    /// frame).
    Json(Value),
}

/// The rewrite of outgoing events for the consumer's declared version. See the
/// [module docs](self).
///
/// ```
/// use agui_sdk_core::semantics::{Downgrade, Outgoing};
/// use agui_sdk_core::Event;
///
/// let old = Downgrade::for_declared(None);
/// assert!(old.is_active());
/// match old.apply(Event::subagent_started("s1", "helper")) {
///     Some(Outgoing::Event(Event::Custom(c))) => assert_eq!(c.name, "SUBAGENT_STARTED"),
///     other => panic!("{other:?}"),
/// }
/// assert!(!Downgrade::for_declared(Some("1.0")).is_active());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Downgrade {
    pre_1_0: bool,
}

impl Downgrade {
    /// For a consumer that declared `declared` (`None`: declared nothing). Versions
    /// that do not parse are taken as current (they are warned about elsewhere).
    pub fn for_declared(declared: Option<&str>) -> Self {
        let pre_1_0 = match declared {
            None => true,
            Some(v) => ProtocolVersion::parse(v).is_some_and(|p| p < ProtocolVersion::new(1, 0, 0)),
        };
        Downgrade { pre_1_0 }
    }

    /// No rewriting at all.
    pub fn none() -> Self {
        Downgrade { pre_1_0: false }
    }

    /// Whether events are rewritten.
    pub fn is_active(&self) -> bool {
        self.pre_1_0
    }

    /// The event whose canonical JSON (as this crate writes it: `{"type":"…",` first)
    /// is `json`, as [`apply`](Self::apply) would give it, found from the text when the
    /// text can say: a writer holding events as JSON need not decode most of them. Text
    /// in another form is answered [`JsonRewrite::Decode`].
    ///
    /// ```
    /// use agui_sdk_core::semantics::{Downgrade, JsonRewrite};
    /// use agui_sdk_core::Event;
    ///
    /// let old = Downgrade::for_declared(None);
    /// let json = |e: Event| { let mut v = Vec::new(); e.write_json(&mut v); v };
    /// let text = json(Event::text_message_content("m", "hi"));
    /// assert!(matches!(old.apply_json(&text), JsonRewrite::Unchanged(_)));
    /// let mut started = Event::run_started("t", "r");
    /// if let Event::RunStarted(s) = &mut started { s.protocol_version = Some("1.1".into()); }
    /// match old.apply_json(&json(started)) {
    ///     JsonRewrite::Spliced(v) => assert_eq!(v, br#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#),
    ///     _ => panic!("the version is taken out of the text"),
    /// }
    /// assert!(matches!(old.apply_json(&json(Event::subagent_started("s", "h"))), JsonRewrite::Decode));
    /// ```
    pub fn apply_json<'a>(&self, json: &'a [u8]) -> JsonRewrite<'a> {
        use JsonRewrite::{Decode, Unchanged};
        if !self.pre_1_0 {
            return Unchanged(json);
        }
        let contains = |needle: &[u8]| memchr::memmem::find(json, needle).is_some();
        let Some(rest) = json.strip_prefix(b"{\"type\":\"") else {
            return Decode;
        };
        let Some(end) = rest.iter().position(|b| *b == b'"') else {
            return Decode;
        };
        match &rest[..end] {
            name if UNKNOWN_BEFORE_1_0.iter().any(|t| t.as_bytes() == name) => Decode,
            // Rewritten only with an outcome 0.0.59 refuses.
            b"RUN_FINISHED"
                if contains(b"\"cancelled\"") || contains(b"\"pendingToolCallIds\"") =>
            {
                Decode
            }
            // Content parts (perhaps media) in the messages: decoded.
            b"RUN_STARTED" | b"MESSAGES_SNAPSHOT" if contains(b"\"content\":[") => Decode,
            b"RUN_STARTED" => match top_level_member(json, b"protocolVersion") {
                Some((from, to)) => {
                    let mut out = Vec::with_capacity(json.len());
                    out.extend_from_slice(&json[..from]);
                    out.extend_from_slice(&json[to..]);
                    JsonRewrite::Spliced(out)
                }
                None => Unchanged(json),
            },
            // Dropped when empty: the canonical text of an empty delta.
            b"TEXT_MESSAGE_CONTENT" | b"REASONING_MESSAGE_CONTENT"
                if contains(b"\"delta\":\"\"") =>
            {
                Decode
            }
            _ => Unchanged(json),
        }
    }

    /// The event as the consumer must get it; `None` when it is dropped.
    pub fn apply(&self, event: Event) -> Option<Outgoing> {
        if !self.pre_1_0 {
            return Some(Outgoing::Event(event));
        }
        let event = match event {
            // A type a 0.0.x schema does not know (`SUBAGENT_*`).
            _ if event.event_type().since() > Since::V0_0 => {
                let name = event.event_type().as_str();
                let mut value = serde_json::to_value(&event).unwrap_or(Value::Null);
                if let Value::Object(o) = &mut value {
                    o.remove("type");
                }
                Event::from(Custom::new(name, value))
            }
            Event::TextMessageContent(ref e) if e.delta.is_empty() => return None,
            Event::ReasoningMessageContent(ref e) if e.delta.is_empty() => return None,
            Event::RunStarted(mut e) => {
                e.protocol_version = None;
                let media = e
                    .input
                    .as_ref()
                    .is_some_and(|i| i.messages.iter().any(has_media));
                let event = Event::RunStarted(e);
                if media {
                    return Some(Outgoing::Json(with_binary_parts(&event)));
                }
                event
            }
            Event::RunFinished(e) => Event::RunFinished(finished_for_pre_1_0(e)),
            Event::MessagesSnapshot(ref e) if e.messages.iter().any(has_media) => {
                return Some(Outgoing::Json(with_binary_parts(&event)));
            }
            other => other,
        };
        Some(Outgoing::Event(event))
    }
}

/// How many event types a 0.0.x schema does not know (introduced in 1.0 or later).
const fn unknown_before_1_0() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < EventType::ALL.len() {
        if !matches!(EventType::ALL[i].since(), Since::V0_0) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The wire names of the event types a 0.0.x schema does not know, which
/// [`Downgrade::apply`] turns into `CUSTOM` events.
const UNKNOWN_BEFORE_1_0: [&str; unknown_before_1_0()] = {
    let mut out = [""; unknown_before_1_0()];
    let (mut i, mut n) = (0, 0);
    while i < EventType::ALL.len() {
        if !matches!(EventType::ALL[i].since(), Since::V0_0) {
            out[n] = EventType::ALL[i].as_str();
            n += 1;
        }
        i += 1;
    }
    out
};

/// `RUN_FINISHED` with an outcome a 0.0.x schema reads (see the module docs).
fn finished_for_pre_1_0(mut e: Box<RunFinished>) -> Box<RunFinished> {
    match e.outcome.take() {
        Some(RunFinishedOutcome::Cancelled(_)) => {
            log_warn!(
                thread_id = %e.thread_id,
                run_id = %e.run_id,
                "the client declared no protocol version (pre-1.0), which has no `cancelled` outcome: \
                 RUN_FINISHED goes without one, with result {{\"cancelled\": true}}"
            );
            let mut stand_in = Map::new();
            stand_in.insert("cancelled".into(), Value::Bool(true));
            if let Some(result) = e.result.take() {
                stand_in.insert("result".into(), result);
            }
            e.result = Some(Value::Object(stand_in));
        }
        Some(RunFinishedOutcome::Success(mut s)) => {
            s.pending_tool_call_ids = None;
            e.outcome = Some(RunFinishedOutcome::Success(s));
        }
        other => e.outcome = other,
    }
    e
}

fn has_media(m: &Message) -> bool {
    match m {
        Message::User(u) => match &u.content {
            Content::Parts(parts) => parts.iter().any(|p| !matches!(p, ContentPart::Text(_))),
            Content::Text(_) => false,
        },
        _ => false,
    }
}

/// The event's JSON with every media part of a user message written as a `binary` part.
fn with_binary_parts(event: &Event) -> Value {
    let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
    let messages = match event {
        Event::RunStarted(_) => value.pointer_mut("/input/messages"),
        _ => value.pointer_mut("/messages"),
    };
    if let Some(Value::Array(messages)) = messages {
        for m in messages {
            if m.get("role").and_then(Value::as_str) != Some("user") {
                continue;
            }
            if let Some(Value::Array(parts)) = m.get_mut("content") {
                for p in parts {
                    if let Some(b) = binary_part(p) {
                        *p = b;
                    }
                }
            }
        }
    }
    value
}

fn binary_part(part: &Value) -> Option<Value> {
    let typed: ContentPart = serde_json::from_value(part.clone()).ok()?;
    let media = match &typed {
        ContentPart::Text(_) => return None,
        ContentPart::Image(m)
        | ContentPart::Audio(m)
        | ContentPart::Video(m)
        | ContentPart::Document(m) => m,
    };
    let mut out = Map::new();
    out.insert("type".into(), json!("binary"));
    let (key, value, mime) = match &media.source {
        PartSource::Data(d) => ("data", &d.value, Some(&d.mime_type)),
        PartSource::Url(u) => ("url", &u.value, u.mime_type.as_ref()),
        PartSource::File(f) => ("id", &f.value, f.mime_type.as_ref()),
    };
    out.insert(
        "mimeType".into(),
        json!(mime.map_or("application/octet-stream", String::as_str)),
    );
    if let (Some(id), false) = (&media.id, key == "id") {
        out.insert("id".into(), json!(id));
    }
    out.insert(key.into(), json!(value));
    let metadata = media.metadata.as_ref().map(JsonText::to_value);
    if let Some(name) = metadata
        .as_ref()
        .and_then(|m| m.get("filename"))
        .and_then(Value::as_str)
    {
        out.insert("filename".into(), json!(name));
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::{RunAgentInput, UserMessage};

    fn old() -> Downgrade {
        Downgrade::for_declared(None)
    }

    #[test]
    fn versions() {
        assert!(Downgrade::for_declared(Some("0.0.48")).is_active());
        assert!(!Downgrade::for_declared(Some("1.0")).is_active());
        assert!(!Downgrade::for_declared(Some("1.1.0")).is_active());
        assert!(!Downgrade::for_declared(Some("garbage")).is_active());
        let e = Event::subagent_started("s", "n");
        assert_eq!(
            Downgrade::none().apply(e.clone()),
            Some(Outgoing::Event(e.clone()))
        );
        assert_eq!(
            Downgrade::for_declared(Some("1.0")).apply(e.clone()),
            Some(Outgoing::Event(e))
        );
    }

    fn finished(outcome: Option<RunFinishedOutcome>, result: Option<Value>) -> Event {
        let mut e = RunFinished::new("t", "r");
        e.outcome = outcome;
        e.result = result;
        Event::from(e)
    }

    fn json_of(o: Option<Outgoing>) -> Value {
        match o {
            Some(Outgoing::Event(e)) => serde_json::to_value(&e).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cancelled_run_finishes_without_an_outcome_for_a_pre_1_0_consumer() {
        let cancelled = || {
            Some(RunFinishedOutcome::Cancelled(
                crate::types::CancelledOutcome::wire_blank(),
            ))
        };
        assert_eq!(
            json_of(old().apply(finished(cancelled(), None))),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": {"cancelled": true}})
        );
        assert_eq!(
            json_of(old().apply(finished(cancelled(), Some(json!([1]))))),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": {"cancelled": true, "result": [1]}})
        );
        // A 1.x consumer gets the outcome.
        let current = Downgrade::for_declared(Some("1.1")).apply(finished(cancelled(), None));
        assert_eq!(json_of(current)["outcome"], json!({"type": "cancelled"}));
    }

    #[test]
    fn success_and_interrupt_outcomes_keep_what_0_0_59_reads() {
        let mut success = crate::types::SuccessOutcome::wire_blank();
        success.pending_tool_call_ids = Some(vec!["c1".into()]);
        assert_eq!(
            json_of(old().apply(finished(Some(RunFinishedOutcome::Success(success)), None))),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}})
        );
        let interrupt =
            RunFinishedOutcome::interrupt(vec![crate::types::Interrupt::new("i1", "approval")]);
        let e = finished(Some(interrupt), None);
        assert_eq!(
            json_of(old().apply(e.clone())),
            serde_json::to_value(&e).unwrap()
        );
    }

    #[test]
    fn subagent_events_become_custom_events_with_every_field() {
        for (e, name) in [
            (Event::subagent_started("s1", "helper"), "SUBAGENT_STARTED"),
            (Event::subagent_finished("s1"), "SUBAGENT_FINISHED"),
            (Event::subagent_error("s1", "boom"), "SUBAGENT_ERROR"),
        ] {
            let mut fields = serde_json::to_value(&e).unwrap();
            fields.as_object_mut().unwrap().remove("type");
            match old().apply(e) {
                Some(Outgoing::Event(Event::Custom(c))) => {
                    assert_eq!(c.name, name);
                    assert_eq!(c.value, fields);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn empty_deltas_are_dropped_and_others_kept() {
        assert_eq!(old().apply(Event::text_message_content("m", "")), None);
        assert_eq!(old().apply(Event::reasoning_message_content("m", "")), None);
        let e = Event::text_message_content("m", "x");
        assert_eq!(old().apply(e.clone()), Some(Outgoing::Event(e)));
    }

    #[test]
    fn run_started_loses_its_version_and_media_parts_become_binary() {
        let mut e = Event::run_started("t", "r");
        if let Event::RunStarted(s) = &mut e {
            s.protocol_version = Some("1.1".into());
        }
        match old().apply(e) {
            Some(Outgoing::Event(Event::RunStarted(s))) => assert_eq!(s.protocol_version, None),
            other => panic!("{other:?}"),
        }

        let parts = vec![
            ContentPart::text("look"),
            serde_json::from_value(json!({"type":"image","id":"p1","source":{"type":"url","value":"https://e/x.png","mimeType":"image/png"}})).unwrap(),
            serde_json::from_value(json!({"type":"document","source":{"type":"data","value":"QUJD","mimeType":"application/pdf"},"metadata":{"filename":"a.pdf"}})).unwrap(),
            serde_json::from_value(json!({"type":"audio","source":{"type":"file","value":"file-9"}})).unwrap(),
        ];
        let user = Message::User(UserMessage::new("u1", Content::Parts(parts)));
        let input = RunAgentInput::new("t", "r", vec![user.clone()]);
        let mut e = Event::run_started("t", "r");
        if let Event::RunStarted(s) = &mut e {
            s.input = Some(Box::new(input));
        }
        let Some(Outgoing::Json(v)) = old().apply(e) else {
            panic!("expected JSON")
        };
        assert_eq!(
            v["input"]["messages"][0]["content"],
            json!([
                {"type":"text","text":"look"},
                {"type":"binary","mimeType":"image/png","id":"p1","url":"https://e/x.png"},
                {"type":"binary","mimeType":"application/pdf","data":"QUJD","filename":"a.pdf"},
                {"type":"binary","mimeType":"application/octet-stream","id":"file-9"},
            ])
        );
        let Some(Outgoing::Json(v)) = old().apply(Event::messages_snapshot(vec![user])) else {
            panic!("expected JSON")
        };
        assert_eq!(v["messages"][0]["content"][1]["type"], "binary");
        assert_eq!(v["type"], "MESSAGES_SNAPSHOT");
    }
}
