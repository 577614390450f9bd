//! Activity messages: `ACTIVITY_SNAPSHOT`, `ACTIVITY_DELTA`.

use crate::types::JsonPatch;
use crate::JsonObject;

event_struct! {
    /// `ACTIVITY_SNAPSHOT`: creates or replaces an activity message.
    pub struct ActivitySnapshot : attributable {
        /// Activity message id.
        req message_id: String = "messageId",
        /// Open vocabulary naming the activity.
        req activity_type: String = "activityType",
        /// The content (a JSON object).
        req content: JsonObject = "content",
        /// Whether to replace an existing message (absent means `true`).
        opt replace: bool = "replace",
    }
}

impl ActivitySnapshot {
    /// An `ACTIVITY_SNAPSHOT`.
    pub fn new(
        message_id: impl Into<String>,
        activity_type: impl Into<String>,
        content: JsonObject,
    ) -> Self {
        ActivitySnapshot {
            message_id: message_id.into(),
            activity_type: activity_type.into(),
            content,
            ..ActivitySnapshot::wire_blank()
        }
    }
}

event_struct! {
    /// `ACTIVITY_DELTA`: patches an activity message's content.
    pub struct ActivityDelta : attributable {
        /// Activity message id.
        req message_id: String = "messageId",
        /// Open vocabulary naming the activity.
        req activity_type: String = "activityType",
        /// The patch applied to `content`.
        req patch: JsonPatch = "patch",
    }
}

impl ActivityDelta {
    /// An `ACTIVITY_DELTA`.
    pub fn new(
        message_id: impl Into<String>,
        activity_type: impl Into<String>,
        patch: JsonPatch,
    ) -> Self {
        ActivityDelta {
            message_id: message_id.into(),
            activity_type: activity_type.into(),
            patch,
            ..ActivityDelta::wire_blank()
        }
    }
}

impl ActivitySnapshot {
    /// Whether to replace an existing message, with the protocol's meaning of an absent
    /// `replace` (`true`). The parser keeps the field as it came, as the 1.0 reference does.
    pub fn replace_or_default(&self) -> bool {
        self.replace.unwrap_or(true)
    }
}
