//! The shapes enforcement walks, read from the protocol objects' own declarations
//! ([`WireShape`], implemented by `wire_struct!` and `wire_union!`): there is no second
//! description of the protocol to keep in step with the types.

pub(crate) use crate::wire::shape::{Obj, Shape};
use crate::wire::shape::{Union, WireShape};

/// The union of all events, by `type`.
const EVENTS: &Union = match <crate::Event as WireShape>::SHAPE {
    Shape::Union(u) => u,
    _ => panic!("Event is a union"),
};

/// `RunAgentInput`.
pub(crate) const RUN_AGENT_INPUT: &Obj = match <crate::RunAgentInput as WireShape>::SHAPE {
    Shape::Obj(o) => o,
    _ => panic!("RunAgentInput is an object"),
};

/// The schema of an event type (its object without the `type` tag), `None` for a type
/// the protocol does not describe.
pub(crate) fn event_schema(ty: &str) -> Option<&'static Obj> {
    EVENTS.member(ty)
}

/// The tag key of the events' union (kept by enforcement, never listed as a field).
pub(crate) const EVENT_TAG: &str = "type";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventType;

    fn keys(o: &Obj) -> Vec<&'static str> {
        o.fields.iter().map(|f| f.key).collect()
    }

    /// Every event type has a schema, with exactly its declaration's keys in order.
    #[test]
    fn every_event_has_its_declared_keys() {
        for ty in EventType::ALL {
            assert!(event_schema(ty.as_str()).is_some(), "{ty}");
        }
        assert_eq!(
            keys(event_schema("TEXT_MESSAGE_START").unwrap()),
            crate::event::TextMessageStart::WIRE_KEYS
        );
        assert_eq!(keys(RUN_AGENT_INPUT), crate::RunAgentInput::WIRE_KEYS);
        assert!(event_schema("THINKING_START").is_none());
    }

    /// The shapes nest: a tool call result's content is text or parts; a patch is an
    /// array of open operations; a snapshot's messages are a union by role.
    #[test]
    fn nested_shapes() {
        let result = event_schema("TOOL_CALL_RESULT").unwrap();
        assert!(matches!(
            result.field("content").unwrap().shape,
            Shape::TextOr(_)
        ));
        let delta = event_schema("STATE_DELTA").unwrap().field("delta").unwrap();
        let Shape::Arr(Shape::Union(ops)) = delta.shape else {
            panic!("{delta:?}")
        };
        assert_eq!(ops.tag, "op");
        assert!(ops.members.iter().all(|(_, o)| o.spec_open));
        let snap = event_schema("MESSAGES_SNAPSHOT")
            .unwrap()
            .field("messages")
            .unwrap();
        let Shape::Arr(Shape::Union(roles)) = snap.shape else {
            panic!("{snap:?}")
        };
        assert_eq!(roles.tag, "role");
        assert_eq!(roles.members.len(), 7);
        let started = event_schema("RUN_STARTED").unwrap();
        assert!(started.field("input").unwrap().optional);
        assert!(!started.field("threadId").unwrap().optional);
    }
}
