//! Pass-through events: `RAW` and `CUSTOM`.

use serde_json::Value;

event_struct! {
    /// `RAW`: a provider-native event passed through untranslated.
    pub struct Raw : attributable {
        /// The native event (any JSON, `null` included).
        req event: Value = "event",
        /// Where it came from.
        opt source: String = "source",
    }
}

impl Raw {
    /// A `RAW` event.
    pub fn new(event: Value) -> Self {
        Raw {
            event,
            ..Raw::wire_blank()
        }
    }
}

event_struct! {
    /// `CUSTOM`: an application's own event.
    pub struct Custom : attributable {
        /// Event name.
        req name: String = "name",
        /// Payload (any JSON, `null` included).
        req value: Value = "value",
    }
}

impl Custom {
    /// A `CUSTOM` event.
    pub fn new(name: impl Into<String>, value: Value) -> Self {
        Custom {
            name: name.into(),
            value,
            ..Custom::wire_blank()
        }
    }
}
