use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, IdentityCapabilities};

use super::{id, last_user_text, quote, trailing_tool_result, words};
use agui_sdk_server::{agent_fn, FnAgent};

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        let reply = match trailing_tool_result(&input) {
            Some(result) => format!(
                "Thanks, the tool returned: {}. Anything else?",
                quote(&result.to_text())
            ),
            None => match last_user_text(&input) {
                Some(text) if !text.trim().is_empty() => {
                    format!(
                        "You said: \"{}\". This is a deterministic demo reply.",
                        quote(text.trim())
                    )
                }
                _ => "Hello! I am a deterministic demo agent. Say something.".to_owned(),
            },
        };
        let message_id = id(&input, "reply");
        // Nothing below reads the input: free it before streaming, which may take long.
        drop(input);
        tx.text_message(&message_id, words(&reply), delay).await?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn long_messages_are_quoted_in_part() {
        let long = "word ".repeat(100_000);
        let q = crate::quote(&long);
        assert_eq!(q.chars().count(), crate::MAX_QUOTE_CHARS + 1);
        assert!(q.ends_with('…'));
        assert_eq!(crate::quote("short"), "short");
    }
}
