use std::time::Duration;

use agui_sdk_core::{
    AgentCapabilities, HumanInTheLoopCapabilities, IdentityCapabilities, ToolsCapabilities,
};
use serde_json::{json, Value};

use super::{id, json_pieces, quote, trailing_tool_result, words, MAX_ECHO_BYTES};
use agui_sdk_server::{agent_fn, FnAgent};

const STEPS: [&str; 4] = [
    "Preheat the oven",
    "Mix the ingredients",
    "Bake for 25 minutes",
    "Let it cool",
];

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        if let Some(result) = trailing_tool_result(&input) {
            // The user reviewed the steps: count the ones they kept.
            let text = result.to_text();
            // A result too large to be the reviewed steps is not parsed, only quoted.
            let parsed = (text.len() <= MAX_ECHO_BYTES)
                .then(|| serde_json::from_str::<Value>(&text).ok())
                .flatten();
            let kept = parsed.and_then(|v| {
                let steps = v.get("steps")?.as_array()?.clone();
                Some(
                    steps
                        .iter()
                        .filter(|s| s.get("status").and_then(Value::as_str) != Some("disabled"))
                        .count(),
                )
            });
            let reply = match kept {
                Some(n) => format!("Executing the {n} steps you approved."),
                None => format!("Understood: {}", quote(&text)),
            };
            tx.text_message(&id(&input, "reply"), words(&reply), delay)
                .await?;
            return Ok(());
        }
        let intro = id(&input, "intro");
        tx.text_message(
            &intro,
            words("Here is a plan. Please review the steps."),
            delay,
        )
        .await?;
        let steps: Vec<Value> = STEPS
            .iter()
            .map(|d| json!({ "description": d, "status": "enabled" }))
            .collect();
        // Small pieces: the client sees partial JSON arguments as they stream.
        tx.tool_call(
            &id(&input, "call-steps"),
            "generate_task_steps",
            Some(&intro),
            json_pieces(&json!({ "steps": steps }), 6),
            delay,
        )
        .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some(
                "Proposes steps through a frontend tool, then answers the user's review.".into(),
            ),
            ..Default::default()
        }),
        tools: Some(ToolsCapabilities {
            supported: Some(true),
            client_provided: Some(true),
            ..Default::default()
        }),
        human_in_the_loop: Some(HumanInTheLoopCapabilities {
            supported: Some(true),
            approvals: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
}
