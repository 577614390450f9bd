use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, IdentityCapabilities, StateCapabilities};
use serde_json::{json, Value};

use super::{client_state, id, words};
use agui_sdk_server::StateTracker;
use agui_sdk_server::{agent_fn, FnAgent};

/// The recipe the agent starts from when the client sent none.
fn default_recipe() -> Value {
    json!({
        "title": "Pancakes",
        "ingredients": [{ "name": "Flour", "amount": "200 g" }, { "name": "Milk", "amount": "300 ml" }],
        "instructions": ["Mix everything"],
    })
}

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        // Read the client's state; keep its other keys untouched.
        let client_state = client_state(&input)?;
        let mut tracker = StateTracker::new(client_state.clone());
        let mut state = match client_state {
            Value::Object(o) if o.contains_key("ingredients") => Value::Object(o),
            Value::Object(mut o) => {
                // No recipe yet: establish one (keeping the client's other keys).
                if let Value::Object(r) = default_recipe() {
                    for (k, v) in r {
                        o.entry(k).or_insert(v);
                    }
                }
                tx.state_snapshot(&mut tracker, Value::Object(o.clone()))
                    .await?;
                Value::Object(o)
            }
            _ => {
                tx.state_snapshot(&mut tracker, default_recipe()).await?;
                default_recipe()
            }
        };
        let n = state
            .get("instructions")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if let Some(obj) = state.as_object_mut() {
            match obj.get_mut("instructions") {
                Some(Value::Array(list)) => {
                    list.push(Value::from(format!("Step {}: taste and adjust", n + 1)))
                }
                _ => {
                    obj.insert("instructions".into(), json!(["Step 1: taste and adjust"]));
                }
            }
            obj.insert("updatedBy".into(), Value::from("agent"));
        }
        tx.state_delta(&mut tracker, state).await?;
        tx.text_message(
            &id(&input, "reply"),
            words("I added a step to the recipe in the shared state."),
            delay,
        )
        .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some("Reads the client's state and publishes its update.".into()),
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
