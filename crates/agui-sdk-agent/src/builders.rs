//! Builders for the common event shapes: a streamed text message, a tool call, state
//! published as a snapshot or as a JSON Patch diff, and a run finished with interrupts.
//!
//! These return plain events, so they serve stream-based agents as well as the
//! [`Emitter`](crate::Emitter) methods built on them.

use agui_sdk_core::event::{RunFinished, ToolCallStart};
use agui_sdk_core::{Event, Interrupt, JsonPatch, RunFinishedOutcome};
use serde_json::Value;

/// `TEXT_MESSAGE_START` (role `assistant`), one `TEXT_MESSAGE_CONTENT` per piece,
/// `TEXT_MESSAGE_END`. Empty pieces are skipped.
pub fn text_message<S: Into<String>>(
    message_id: &str,
    pieces: impl IntoIterator<Item = S>,
) -> Vec<Event> {
    text_message_lazy(message_id, pieces.into_iter().map(Into::into).collect()).collect()
}

/// [`text_message`]'s events, each made when it is pulled (a paced message then holds
/// its text pieces only, not every event at once).
pub(crate) fn text_message_lazy(
    message_id: &str,
    pieces: Vec<String>,
) -> impl Iterator<Item = Event> + Send + '_ {
    let content = pieces
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(move |p| Event::text_message_content(message_id, p));
    std::iter::once_with(move || Event::text_message_start(message_id))
        .chain(content)
        .chain(std::iter::once_with(move || {
            Event::text_message_end(message_id)
        }))
}

/// `TOOL_CALL_START` (with `parentMessageId` when given), one `TOOL_CALL_ARGS` per
/// argument piece, `TOOL_CALL_END`.
pub fn tool_call<S: Into<String>>(
    tool_call_id: &str,
    tool_name: &str,
    parent_message_id: Option<&str>,
    arg_pieces: impl IntoIterator<Item = S>,
) -> Vec<Event> {
    let pieces = arg_pieces.into_iter().map(Into::into).collect();
    tool_call_lazy(tool_call_id, tool_name, parent_message_id, pieces).collect()
}

/// [`tool_call`]'s events, each made when it is pulled.
pub(crate) fn tool_call_lazy<'a>(
    tool_call_id: &'a str,
    tool_name: &'a str,
    parent_message_id: Option<&'a str>,
    pieces: Vec<String>,
) -> impl Iterator<Item = Event> + Send + 'a {
    let args = pieces
        .into_iter()
        .map(move |p| Event::tool_call_args(tool_call_id, p));
    std::iter::once_with(move || {
        let mut start = ToolCallStart::new(tool_call_id, tool_name);
        start.parent_message_id = parent_message_id.map(str::to_owned);
        Event::from(start)
    })
    .chain(args)
    .chain(std::iter::once_with(move || {
        Event::tool_call_end(tool_call_id)
    }))
}

/// Splits `text` into pieces of about `size` characters (never inside a character), for
/// streaming a complete string.
pub fn split_pieces(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, c) in text.chars().enumerate() {
        if i > 0 && i % size == 0 {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `RUN_FINISHED` with an interrupt outcome.
pub fn interrupt_finished(thread_id: &str, run_id: &str, interrupts: Vec<Interrupt>) -> Event {
    let mut e = RunFinished::new(thread_id, run_id);
    e.outcome = Some(RunFinishedOutcome::interrupt(interrupts));
    e.into()
}

/// Remembers the last state an agent published, so the next change can be sent as a
/// JSON Patch (`STATE_DELTA`).
///
/// Two ways to publish a change: [`patch`](Self::patch) applies a patch the agent wrote
/// and costs what the patch touches; [`update`](Self::update) and
/// [`delta`](Self::delta) compute the patch by diffing, which walks (and, for
/// `update`, copies) the whole state: simple, and fine for small states.
///
/// The default tracker holds `null` and a client that has no state: its first change is
/// published as a `STATE_SNAPSHOT`.
#[derive(Debug, Clone, Default)]
pub struct StateTracker {
    state: Value,
    patcher: agui_sdk_core::semantics::patch::Patcher,
    /// Whether the client has the tracked state (else the next change is a snapshot).
    published: bool,
}

impl StateTracker {
    /// A tracker starting from `state`, which the client already has.
    pub fn new(state: Value) -> Self {
        StateTracker {
            state,
            patcher: Default::default(),
            published: true,
        }
    }

    /// A tracker starting from the state the client sent. When it sent none, the
    /// tracker starts from `{}` but the client has *no* state (a `STATE_DELTA` would not
    /// apply to it), so the first change it publishes is a `STATE_SNAPSHOT`.
    pub fn from_input(input: &agui_sdk_core::RunAgentInput) -> Self {
        let mut tracker = Self::new(input.state_or_empty());
        tracker.published = input.state.is_some();
        tracker
    }

    /// Whether the client has the tracked state; when not, the next change is published
    /// as a `STATE_SNAPSHOT`.
    pub fn is_published(&self) -> bool {
        self.published
    }

    /// Applies `patch` to the state (atomically: on failure the state is unchanged) and
    /// returns the `STATE_DELTA` that publishes it. It costs what the patch touches,
    /// whatever the state's size. (The first change of a state the client does not have
    /// yet, see [`from_input`](Self::from_input), is published as a `STATE_SNAPSHOT`.)
    ///
    /// # Errors
    /// The patch does not apply to the state (the failure names the operation).
    pub fn patch(
        &mut self,
        patch: JsonPatch,
    ) -> Result<Event, agui_sdk_core::semantics::patch::PatchFailure> {
        if !self.published {
            self.patcher.apply(&mut self.state, patch)?;
            self.published = true;
            return Ok(Event::state_snapshot(self.state.clone()));
        }
        self.patcher.apply(&mut self.state, patch.clone())?;
        Ok(Event::state_delta(patch))
    }

    /// Changes the state in place with `change` and returns the `STATE_DELTA` that
    /// publishes it (`None` when nothing changed). It copies and diffs the whole state:
    /// for a large state, prefer [`patch`](Self::patch).
    pub fn update(&mut self, change: impl FnOnce(&mut Value)) -> Option<Event> {
        let mut next = self.state.clone();
        change(&mut next);
        self.delta(next)
    }

    /// The last published state.
    pub fn state(&self) -> &Value {
        &self.state
    }

    /// Publishes `state` whole: a `STATE_SNAPSHOT`.
    pub fn snapshot(&mut self, state: Value) -> Event {
        self.state = state;
        self.published = true;
        self.patcher.reset();
        Event::state_snapshot(self.state.clone())
    }

    /// The JSON Patch from the last published state to `state`, remembering `state`.
    /// `None` only if the computed patch could not be represented (not expected). The
    /// patch is for a client that has the tracked state: see
    /// [`is_published`](Self::is_published).
    pub fn diff(&mut self, state: Value) -> Option<JsonPatch> {
        let patch = json_patch::diff(&self.state, &state);
        self.state = state;
        self.patcher.reset();
        // json-patch's operations have the RFC 6902 JSON form, which ours read.
        let converted = serde_json::to_value(&patch)
            .map_err(|e| e.to_string())
            .and_then(|v| {
                agui_sdk_core::wire::from_json_value::<JsonPatch>(&v).map_err(|e| e.to_string())
            });
        match converted {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::error!(error = %e, "cannot convert a computed JSON Patch");
                None
            }
        }
    }

    /// Publishes the change to `state` as a `STATE_DELTA`; `None` when nothing changed.
    /// (A `STATE_SNAPSHOT` when the client has no state yet, see
    /// [`from_input`](Self::from_input), or if the patch cannot be represented.)
    pub fn delta(&mut self, state: Value) -> Option<Event> {
        if !self.published {
            return Some(self.snapshot(state));
        }
        match self.diff(state) {
            Some(p) if p.is_empty() => None,
            Some(p) => Some(Event::state_delta(p)),
            None => Some(Event::state_snapshot(self.state.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn state_tracker_applies_and_publishes_a_patch() {
        let mut t = StateTracker::new(json!({"a": 1, "list": [1, 2]}));
        let e = t
            .patch(vec![agui_sdk_core::PatchOperation::add(
                "/list/-",
                json!(3),
            )])
            .unwrap();
        assert_eq!(t.state(), &json!({"a": 1, "list": [1, 2, 3]}));
        let Event::StateDelta(d) = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            d.delta,
            vec![agui_sdk_core::PatchOperation::add("/list/-", json!(3))]
        );
        let err = t
            .patch(vec![
                agui_sdk_core::PatchOperation::remove("/a"),
                agui_sdk_core::PatchOperation::remove("/missing"),
            ])
            .unwrap_err();
        assert_eq!(err.operation, 1);
        assert_eq!(t.state(), &json!({"a": 1, "list": [1, 2, 3]}), "unchanged");
    }

    #[test]
    fn state_tracker_publishes_diffs_that_rebuild_the_state() {
        let mut t = StateTracker::new(json!({"a": 1, "list": [1, 2]}));
        let next = json!({"a": 2, "list": [1, 2, 3], "b": {"c": null}});
        let Some(Event::StateDelta(d)) = t.delta(next.clone()) else {
            panic!("expected a delta")
        };
        let mut rebuilt = json!({"a": 1, "list": [1, 2]});
        let patch: json_patch::Patch =
            serde_json::from_value(serde_json::to_value(&d.delta).unwrap()).unwrap();
        json_patch::patch(&mut rebuilt, &patch).unwrap();
        assert_eq!(rebuilt, next);
        assert_eq!(t.state(), &next);
        assert!(t.delta(next).is_none(), "no change, no event");
        assert!(matches!(t.snapshot(json!(5)), Event::StateSnapshot(s) if s.snapshot == json!(5)));
    }

    fn input(state: Option<&str>) -> agui_sdk_core::RunAgentInput {
        let state = state
            .map(|s| format!(r#","state":{s}"#))
            .unwrap_or_default();
        serde_json::from_str(&format!(
            r#"{{"threadId":"t","runId":"r","messages":[]{state}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn without_a_state_in_the_input_the_first_change_is_a_snapshot() {
        for null in [None, Some("null")] {
            let mut t = StateTracker::from_input(&input(null));
            assert!(!t.is_published());
            let e = t.update(|s| s["count"] = json!(1)).unwrap();
            assert!(
                matches!(&e, Event::StateSnapshot(s) if s.snapshot == json!({"count": 1})),
                "{e:?}"
            );
            assert!(t.is_published());
            assert!(matches!(
                t.update(|s| s["count"] = json!(2)),
                Some(Event::StateDelta(_))
            ));
        }
        let mut t = StateTracker::from_input(&input(None));
        let e = t
            .patch(vec![agui_sdk_core::PatchOperation::add("/a", json!(1))])
            .unwrap();
        assert!(
            matches!(&e, Event::StateSnapshot(s) if s.snapshot == json!({"a": 1})),
            "{e:?}"
        );
        let mut t = StateTracker::from_input(&input(None));
        assert!(
            matches!(t.delta(json!({})), Some(Event::StateSnapshot(_))),
            "even unchanged"
        );

        // A client that sent a state gets deltas from the start.
        let mut t = StateTracker::from_input(&input(Some(r#"{"count":0}"#)));
        assert!(t.is_published());
        assert!(matches!(
            t.update(|s| s["count"] = json!(1)),
            Some(Event::StateDelta(_))
        ));
    }

    #[test]
    fn text_and_tool_call_shapes() {
        let ev = text_message("m", ["a", "", "b"]);
        let names: Vec<_> = ev.iter().map(|e| e.event_type().as_str()).collect();
        assert_eq!(
            names,
            [
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END"
            ]
        );
        let ev = tool_call("c", "f", Some("m"), ["{\"x\":", "1}"]);
        assert!(
            matches!(&ev[0], Event::ToolCallStart(s) if s.parent_message_id.as_deref() == Some("m"))
        );
        assert_eq!(ev.len(), 4);
        assert_eq!(split_pieces("héllo wörld", 4), ["héll", "o wö", "rld"]);
        let fin = interrupt_finished("t", "r", vec![Interrupt::new("i", "why")]);
        assert!(fin
            .to_json_string()
            .contains("\"outcome\":{\"type\":\"interrupt\""));
    }
}
