use std::time::Duration;

use agui_sdk_core::event::{SubagentFinished, SubagentStarted};
use agui_sdk_core::{
    AgentCapabilities, Event, IdentityCapabilities, MultiAgentCapabilities, SubagentInfo,
};
use serde_json::json;

use super::{attribute, id, json_pieces, last_user_text, words};
use agui_sdk_server::agui_sdk_agent::builders;
use agui_sdk_server::{agent_fn, FnAgent};

pub(super) fn agent(delay: Duration) -> FnAgent {
    agent_fn(move |input, _ctx, tx| async move {
        let topic = last_user_text(&input)
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty() && t.len() <= 64)
            .unwrap_or_else(|| "otters".to_owned());
        let intro = id(&input, "intro");
        tx.text_message(&intro, words("Let me ask the researcher."), delay)
            .await?;
        let call = id(&input, "call-research");
        tx.tool_call(
            &call,
            "research",
            Some(&intro),
            json_pieces(&json!({ "topic": topic }), 12),
            delay,
        )
        .await?;
        let sub = id(&input, "researcher");
        let mut started = SubagentStarted::new(&sub, "researcher");
        started.description = Some("Looks things up.".into());
        started.parent_tool_call_id = Some(call.clone());
        started.parent_message_id = Some(intro.clone());
        tx.emit(started).await?;
        let finding = format!("Researcher: {topic} are fascinating.");
        let events = builders::text_message(&id(&input, "finding"), words(&finding))
            .into_iter()
            .map(|e| attribute(e, &sub));
        tx.emit_paced(events, delay).await?;
        let mut finished = SubagentFinished::new(&sub);
        finished.result = Some(json!({ "summary": finding }));
        tx.emit(finished).await?;
        tx.emit(Event::tool_call_result(
            id(&input, "result-research"),
            &call,
            finding.clone(),
        ))
        .await?;
        tx.text_message(
            &id(&input, "reply"),
            words(&format!("The researcher says: {topic} are fascinating.")),
            delay,
        )
        .await?;
        Ok(())
    })
    .with_capabilities(AgentCapabilities {
        identity: Some(IdentityCapabilities {
            description: Some("Delegates to a subagent whose events are attributed.".into()),
            ..Default::default()
        }),
        multi_agent: Some(MultiAgentCapabilities {
            supported: Some(true),
            delegation: Some(true),
            subagents: Some(vec![SubagentInfo {
                description: Some("Looks things up.".into()),
                ..SubagentInfo::new("researcher")
            }]),
            ..Default::default()
        }),
        ..Default::default()
    })
}
