//! State and conversation snapshots: `STATE_SNAPSHOT`, `STATE_DELTA`,
//! `MESSAGES_SNAPSHOT`.

use serde_json::Value;

use crate::types::{JsonPatch, Message};

event_struct! {
    /// `STATE_SNAPSHOT`: replaces the agent state wholesale.
    pub struct StateSnapshot : attributable {
        /// The new state (any JSON, `null` included).
        req snapshot: Value = "snapshot",
    }
}

impl StateSnapshot {
    /// A `STATE_SNAPSHOT`.
    pub fn new(snapshot: Value) -> Self {
        StateSnapshot {
            snapshot,
            ..StateSnapshot::wire_blank()
        }
    }
}

event_struct! {
    /// `STATE_DELTA`: changes the state with a JSON Patch.
    pub struct StateDelta : attributable {
        /// The patch (`[]` is a no-op).
        req delta: JsonPatch = "delta",
    }
}

impl StateDelta {
    /// A `STATE_DELTA`.
    pub fn new(delta: JsonPatch) -> Self {
        StateDelta {
            delta,
            ..StateDelta::wire_blank()
        }
    }
}

event_struct! {
    /// `MESSAGES_SNAPSHOT`: the complete set of messages the producer owns.
    pub struct MessagesSnapshot : run_scoped {
        /// The messages, in order.
        req messages: Vec<Message> = "messages",
    }
}

impl MessagesSnapshot {
    /// A `MESSAGES_SNAPSHOT`.
    pub fn new(messages: Vec<Message>) -> Self {
        MessagesSnapshot {
            messages,
            ..MessagesSnapshot::wire_blank()
        }
    }
}
