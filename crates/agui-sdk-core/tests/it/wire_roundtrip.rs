//! Property tests: every protocol type survives JSON encode → decode unchanged, and the
//! encoded form never holds `null` for an absent optional field.

use crate::common;

use agui_sdk_core::types::*;
use agui_sdk_core::Event;
use common::arb::*;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::Value;

fn has_optional_null(v: &Value, e: &Event) -> bool {
    // Base optional fields are never written as null.
    ["timestamp", "rawEvent", "metadata"]
        .iter()
        .any(|k| v.get(*k) == Some(&Value::Null))
        || (e.subagent_run_id().is_none() && v.get("subagentRunId").is_some())
}

/// On a large stack (`common::codec::check`): the full event strategy nests deeply
/// enough to overflow a test thread's default stack in a debug build.
#[test]
fn every_event_round_trips() {
    common::codec::check(512, event, |e| {
        // Exact: serde_json's own spelling loses nothing.
        let exact = serde_json::to_string(&e).unwrap();
        let back = Event::from_json_str(&exact)
            .map_err(|err| TestCaseError::fail(format!("{err}: {exact}")))?;
        prop_assert_eq!(&back, &e);
        // Canonical (numbers as ECMAScript spells them): reading it back and writing it
        // again gives the same bytes, and the same values as JavaScript compares them.
        let json = e.to_json_string();
        let again = Event::from_json_str(&json)
            .map_err(|err| TestCaseError::fail(format!("{err}: {json}")))?;
        prop_assert_eq!(again.to_json_string(), json.clone());
        let (mut a, mut b): (Value, Value) = (
            serde_json::from_str(&json).unwrap(),
            serde_json::from_str(&exact).unwrap(),
        );
        common::codec::renumber(&mut a);
        common::codec::renumber(&mut b);
        prop_assert_eq!(a, b);
        let v: Value = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(v["type"].as_str(), Some(e.event_type().as_str()));
        prop_assert!(
            !has_optional_null(&v, &e),
            "optional null written: {}",
            json
        );
        Ok(())
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_message_round_trips(m in message()) {
        let json = serde_json::to_string(&m).unwrap();
        let back: Message = agui_sdk_core::wire::from_json_str(&json).map_err(|err| TestCaseError::fail(format!("{err}: {json}")))?;
        prop_assert_eq!(back, m);
    }

    #[test]
    fn every_run_agent_input_round_trips(i in input()) {
        let json = serde_json::to_string(&i).unwrap();
        let back: RunAgentInput = agui_sdk_core::wire::from_json_str(&json).map_err(|err| TestCaseError::fail(format!("{err}: {json}")))?;
        prop_assert_eq!(back, i);
    }

    #[test]
    fn capabilities_round_trip(name in option::of(text()), streaming in option::of(any::<bool>()), max in count(), custom in option::of(object())) {
        let caps = AgentCapabilities {
            identity: name.map(|n| IdentityCapabilities { name: Some(n), ..Default::default() }),
            transport: Some(TransportCapabilities { streaming, http_binary: Some(true), ..Default::default() }),
            execution: Some(ExecutionCapabilities { max_iterations: max, ..Default::default() }),
            custom,
            ..Default::default()
        };
        let json = serde_json::to_string(&caps).unwrap();
        let back: AgentCapabilities = agui_sdk_core::wire::from_json_str(&json).unwrap();
        prop_assert_eq!(back, caps);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        let _ = Event::from_json_slice(&bytes);
    }
}
