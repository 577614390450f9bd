//! Replaying a recorded run's events to see the conversation at any one of them: the
//! state before and after the event, and the messages after it.

use agui_sdk_core::semantics::{InboundConfig, Intake, Reducer};
use agui_sdk_core::{Event, RunAgentInput};
use serde_json::Value;

/// A replay of a run's raw events through the same pipeline, kept between requests:
/// stepping forward from where it stands costs only the events in between (the page
/// walks a timeline event by event).
#[derive(Debug)]
pub struct Replay {
    intake: Intake,
    reducer: Reducer,
    next: usize,
    out: Vec<Event>,
    warnings: Vec<agui_sdk_core::semantics::InboundWarning>,
}

impl Replay {
    /// A replay from the run's start (from `seed`'s conversation, when given).
    pub fn new(seed: Option<&RunAgentInput>) -> Self {
        Replay {
            intake: Intake::new(InboundConfig::default().verify(false)),
            reducer: seed.map(Reducer::from_input).unwrap_or_default(),
            next: 0,
            out: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The index of the next raw event it would apply.
    pub fn next_index(&self) -> usize {
        self.next
    }

    /// Applies the next raw events, in order.
    pub fn advance(&mut self, raw: &[Box<[u8]>]) {
        for data in raw {
            self.apply(data);
        }
    }

    fn apply(&mut self, data: &[u8]) {
        self.out.clear();
        let _ = self
            .intake
            .push_json(data, &mut self.out, &mut self.warnings);
        self.warnings.clear();
        for e in &self.out {
            let _ = self.reducer.apply(e);
        }
        self.next += 1;
    }

    /// Applies the next raw event: `(state before, state after, messages after)`.
    pub fn step(&mut self, data: &[u8]) -> (Value, Value, Value) {
        let before = self.reducer.state().cloned().unwrap_or(Value::Null);
        self.apply(data);
        let after = self.reducer.state().cloned().unwrap_or(Value::Null);
        let messages = serde_json::to_value(self.reducer.messages()).unwrap_or(Value::Null);
        (before, after, messages)
    }
}

/// The conversation before and after raw event `index`, replayed from the start
/// through the same pipeline: `(state before, state after, messages after)`.
pub fn replay_at(
    raw: &[Box<[u8]>],
    index: usize,
    seed: Option<&RunAgentInput>,
) -> (Value, Value, Value) {
    let mut replay = Replay::new(seed);
    replay.advance(&raw[..index]);
    replay.step(&raw[index])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::lines;
    use crate::record::{End, Recording};
    use crate::Limits;
    use agui_sdk_core::encoding::Framing;

    #[test]
    fn a_kept_replay_steps_as_a_fresh_one_replays() {
        let body = lines(&[
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
            r#"{"type":"STATE_SNAPSHOT","snapshot":{"n":1}}"#,
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}"#,
            r#"{"type":"STATE_DELTA","delta":[{"op":"replace","path":"/n","value":2}]}"#,
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"b"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
        ]);
        let mut r = Recording::with_format(Framing::JsonLines, Limits::default());
        r.push(&body, 0.0);
        r.finish(End::Completed, 0.0);
        let raw = r.raw_events();
        let mut kept = Replay::new(None);
        for i in 0..raw.len() {
            assert_eq!(kept.next_index(), i);
            assert_eq!(kept.step(&raw[i]), replay_at(raw, i, None), "event {i}");
        }
        // Skipping ahead from where it stands.
        let mut kept = Replay::new(None);
        kept.advance(&raw[..2]);
        kept.advance(&raw[2..4]);
        assert_eq!(kept.step(&raw[4]), replay_at(raw, 4, None));
    }
}
