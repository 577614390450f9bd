use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, IdentityCapabilities, PatchOperation, StateCapabilities};
use serde_json::{json, Value};

use super::{id, words};
use agui_sdk_server::StateTracker;
use agui_sdk_server::{agent_fn, FnAgent};

const STEPS: [&str; 4] = [
    "Research the topic",
    "Draft an outline",
    "Write the sections",
    "Review and publish",
];

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        let mut tracker = StateTracker::default();
        let state = json!({
            "steps": STEPS
                .iter()
                .map(|d| json!({ "description": d, "status": "pending" }))
                .collect::<Vec<Value>>(),
        });
        tx.state_snapshot(&mut tracker, state).await?;
        for i in 0..STEPS.len() {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let done = PatchOperation::replace(format!("/steps/{i}/status"), "completed".into());
            tx.patch_state(&mut tracker, vec![done]).await?;
        }
        tx.text_message(
            &id(&input, "reply"),
            words("All four steps are done."),
            delay,
        )
        .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some("Publishes a plan as state, then a delta per step.".into()),
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
