use std::time::Duration;

use agui_sdk_core::event::{EncryptedValueSubtype, ReasoningEncryptedValue};
use agui_sdk_core::{AgentCapabilities, Event, IdentityCapabilities, ReasoningCapabilities};

use super::{id, words};
use agui_sdk_server::{agent_fn, FnAgent};

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        let span = id(&input, "reasoning");
        let thought = id(&input, "thought");
        tx.emit(Event::reasoning_start(&span)).await?;
        let mut events = vec![Event::reasoning_message_start(&thought)];
        for w in words("The user wants an answer. Think step by step, then answer briefly.") {
            events.push(Event::reasoning_message_content(&thought, w));
        }
        events.push(Event::reasoning_message_end(&thought));
        tx.emit_paced(events, delay).await?;
        tx.emit(ReasoningEncryptedValue::new(
            EncryptedValueSubtype::Message,
            &thought,
            "ZGVtby1lbmNyeXB0ZWQtcmVhc29uaW5n",
        ))
        .await?;
        tx.emit(Event::reasoning_end(&span)).await?;
        tx.text_message(&id(&input, "reply"), words("After thinking: 42."), delay)
            .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some("Streams its reasoning, with an encrypted value.".into()),
            ..Default::default()
        }),
        reasoning: Some(ReasoningCapabilities {
            supported: Some(true),
            streaming: Some(true),
            encrypted: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
}
