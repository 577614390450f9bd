use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, IdentityCapabilities, ToolsCapabilities};
use serde_json::json;

use super::{id, json_pieces, trailing_tool_result, words};
use agui_sdk_server::{agent_fn, FnAgent};

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        if trailing_tool_result(&input).is_some() {
            tx.text_message(&id(&input, "reply"), words("Glad you liked the haiku."), delay)
                .await?;
            return Ok(());
        }
        let haiku = json!({
            "japanese": ["古池や", "蛙飛び込む", "水の音"],
            "english": ["An old silent pond", "A frog jumps into the pond", "Splash! Silence again"],
        });
        tx.tool_call(
            &id(&input, "call-haiku"),
            "generate_haiku",
            Some(&id(&input, "assistant")),
            json_pieces(&haiku, 16),
            delay,
        )
        .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some("Calls a frontend tool the client renders as UI.".into()),
            ..Default::default()
        }),
        tools: Some(ToolsCapabilities {
            supported: Some(true),
            client_provided: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
}
