//! Adds the base fields every event carries (`timestamp`, `rawEvent`, `metadata`) and,
//! for events that can belong to a subagent, the optional `subagentRunId`.

macro_rules! event_struct {
    ($(#[$meta:meta])* pub struct $name:ident : attributable { $($body:tt)* }) => {
        wire_struct! {
            $(#[$meta])*
            pub struct $name {
                /// When the event was produced (milliseconds since the Unix epoch by convention).
                opt timestamp: i64 = "timestamp" via $crate::wire::de::Timestamp,
                /// The provider-native event this one was translated from (any JSON but `null`).
                opt raw_event: Box<::serde_json::Value> = "rawEvent" via $crate::wire::de::NotNullValue,
                /// Extra information.
                opt metadata: Box<$crate::JsonObject> = "metadata",
                /// The subagent invocation that produced the event (absent: the parent agent).
                opt subagent_run_id: String = "subagentRunId",
                $($body)*
            }
        }
    };
    ($(#[$meta:meta])* pub struct $name:ident : run_scoped { $($body:tt)* }) => {
        wire_struct! {
            $(#[$meta])*
            pub struct $name {
                /// When the event was produced (milliseconds since the Unix epoch by convention).
                opt timestamp: i64 = "timestamp" via $crate::wire::de::Timestamp,
                /// The provider-native event this one was translated from (any JSON but `null`).
                opt raw_event: Box<::serde_json::Value> = "rawEvent" via $crate::wire::de::NotNullValue,
                /// Extra information.
                opt metadata: Box<$crate::JsonObject> = "metadata",
                $($body)*
            }
        }
    };
    ($(#[$meta:meta])* pub struct $name:ident : subagent { $($body:tt)* }) => {
        wire_struct! {
            $(#[$meta])*
            pub struct $name {
                /// When the event was produced (milliseconds since the Unix epoch by convention).
                opt timestamp: i64 = "timestamp" via $crate::wire::de::Timestamp,
                /// The provider-native event this one was translated from (any JSON but `null`).
                opt raw_event: Box<::serde_json::Value> = "rawEvent" via $crate::wire::de::NotNullValue,
                /// Extra information.
                opt metadata: Box<$crate::JsonObject> = "metadata",
                /// Identity of this subagent invocation.
                req subagent_run_id: String = "subagentRunId",
                $($body)*
            }
        }
    };
}
