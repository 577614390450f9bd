use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, Event, IdentityCapabilities, Tool, ToolsCapabilities};
use serde_json::json;

use super::{id, json_pieces, last_user_text, words};
use agui_sdk_server::{agent_fn, FnAgent};

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        let location = last_user_text(&input)
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty() && t.len() <= 64)
            .unwrap_or_else(|| "Paris".to_owned());
        let call = id(&input, "call-weather");
        let holder = id(&input, "assistant");
        tx.tool_call(
            &call,
            "get_weather",
            Some(&holder),
            json_pieces(&json!({ "location": location }), 8),
            delay,
        )
        .await?;
        let result = json!({
            "location": location,
            "temperature": 21,
            "conditions": "sunny",
            "humidity": 40,
        });
        tx.emit(Event::tool_call_result(
            id(&input, "result-weather"),
            &call,
            result.to_string(),
        ))
        .await?;
        let reply = format!("It is 21°C and sunny in {location}.");
        tx.text_message(&id(&input, "reply"), words(&reply), delay)
            .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some("Calls a backend tool and streams its result.".into()),
            ..Default::default()
        }),
        tools: Some(ToolsCapabilities {
            supported: Some(true),
            items: Some(vec![Tool::new(
                "get_weather",
                "Current weather for a location.",
                json!({"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}),
            )]),
            ..Default::default()
        }),
        ..Default::default()
    })
}
