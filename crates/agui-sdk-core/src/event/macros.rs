//! Adds the base fields every event carries (`timestamp`, `rawEvent`, `metadata`) and,
//! for events that can belong to a subagent, the optional `subagentRunId`. The kind
//! (`attributable`, `run_scoped`, `subagent`) also gives the struct its `attribution`
//! accessors, from which [`Event::subagent_run_id`](super::Event::subagent_run_id) and
//! [`EventType::is_run_scoped`](super::EventType::is_run_scoped) are generated.

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

        impl $name {
            /// Whether the event is run-scoped (it has no `subagentRunId`).
            pub(crate) const RUN_SCOPED: bool = false;
            /// The optional attribution tag.
            #[inline]
            pub(crate) fn attribution(&self) -> Option<&str> {
                self.subagent_run_id.as_deref()
            }
            /// The optional attribution tag, mutably.
            #[inline]
            pub(crate) fn attribution_mut(&mut self) -> Option<&mut Option<String>> {
                Some(&mut self.subagent_run_id)
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

        impl $name {
            /// Whether the event is run-scoped (it has no `subagentRunId`).
            pub(crate) const RUN_SCOPED: bool = true;
            /// No attribution: the event belongs to the run.
            #[inline]
            pub(crate) fn attribution(&self) -> Option<&str> {
                None
            }
            /// No attribution tag to set.
            #[inline]
            pub(crate) fn attribution_mut(&mut self) -> Option<&mut Option<String>> {
                None
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

        impl $name {
            /// Whether the event is run-scoped (it has no `subagentRunId`).
            pub(crate) const RUN_SCOPED: bool = false;
            /// The invocation's identity.
            #[inline]
            pub(crate) fn attribution(&self) -> Option<&str> {
                Some(&self.subagent_run_id)
            }
            /// None: the id is the event's identity, not a tag.
            #[inline]
            pub(crate) fn attribution_mut(&mut self) -> Option<&mut Option<String>> {
                None
            }
        }
    };
}
