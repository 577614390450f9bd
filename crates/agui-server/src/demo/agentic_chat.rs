use std::time::Duration;

use agui_core::{AgentCapabilities, IdentityCapabilities};

use super::{id, last_user_text, trailing_tool_result, words};
use crate::agent::{agent_fn, FnAgent};

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        let reply = match trailing_tool_result(&input) {
            Some(result) => format!(
                "Thanks, the tool returned: {}. Anything else?",
                result.to_text()
            ),
            None => match last_user_text(&input) {
                Some(text) if !text.trim().is_empty() => {
                    format!(
                        "You said: \"{}\". This is a deterministic demo reply.",
                        text.trim()
                    )
                }
                _ => "Hello! I am a deterministic demo agent. Say something.".to_owned(),
            },
        };
        tx.text_message(&id(&input, "reply"), words(&reply), delay)
            .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some("Streams a text reply; answers a tool result.".into()),
            ..Default::default()
        }),
        ..Default::default()
    })
}
