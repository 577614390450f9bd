use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, Event, IdentityCapabilities, StateCapabilities};
use serde_json::{json, Value};

use super::{client_state, id, json_pieces, words};
use agui_sdk_server::StateTracker;
use agui_sdk_server::{agent_fn, FnAgent};

const DOCUMENT: &str = "Once upon a time, a small agent wrote a story one piece at a time.";

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        let client_state = match client_state(&input)? {
            v @ Value::Object(_) => v,
            _ => json!({}),
        };
        let mut tracker = StateTracker::new(client_state.clone());
        if input.state.as_ref().is_none_or(|s| *s != client_state) {
            tx.state_snapshot(&mut tracker, client_state.clone()).await?;
        }
        // Tell the client which tool argument predicts which state key.
        tx.emit(Event::custom(
            "PredictState",
            json!([{ "state_key": "document", "tool": "write_document", "tool_argument": "document" }]),
        ))
        .await?;
        let call = id(&input, "call-document");
        tx.tool_call(
            &call,
            "write_document",
            Some(&id(&input, "assistant")),
            json_pieces(&json!({ "document": DOCUMENT }), 10),
            delay,
        )
        .await?;
        // Confirm the predicted state.
        let mut state = client_state;
        if let Some(o) = state.as_object_mut() {
            o.insert("document".into(), Value::from(DOCUMENT));
        }
        tx.state_delta(&mut tracker, state).await?;
        tx.emit(Event::tool_call_result(
            id(&input, "result-document"),
            &call,
            "document written",
        ))
        .await?;
        tx.text_message(&id(&input, "reply"), words("The document is written."), delay)
            .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some(
                "Streams tool arguments the client previews as state, then confirms it.".into(),
            ),
            ..Default::default()
        }),
        state: Some(StateCapabilities {
            snapshots: Some(true),
            deltas: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
}
