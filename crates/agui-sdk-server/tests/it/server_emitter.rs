//! The emitter's helpers, end to end through the runtime (with verification on): every
//! stream they produce is a valid one, with fresh ids.

use crate::common;

use agui_sdk_core::event::StateDelta;
use agui_sdk_core::Event;
use agui_sdk_server::prelude::*;
use agui_sdk_server::Shutdown;
use common::{input, start, types, Client};

#[tokio::test]
async fn emitter_helpers_produce_valid_streams() {
    let agent = agent_fn(|input, _ctx, tx| async move {
        let (send, recv) = tokio::sync::mpsc::channel::<&'static str>(4);
        tokio::spawn(async move {
            for t in ["a", "", "b"] {
                let _ = send.send(t).await;
            }
        });
        let (_, all) = tx.text_channel(recv).await?;
        assert_eq!(all, "ab");
        let call = tx
            .call_tool("lookup", &json!({"q": input.last_user_text()}))
            .await?;
        tx.tool_result(&call, &json!({"found": 1})).await?;
        let mut state = StateTracker::from_input(&input);
        tx.update_state(&mut state, |s| s["n"] = json!(2)).await?;
        // Nothing changed: nothing sent.
        tx.update_state(&mut state, |s| s["n"] = json!(2)).await?;
        tx.text("done").await?;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("a", agent)
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut body = input("t", "r", "find it");
    body["state"] = json!({"n": 1});
    let mut c = Client::post_json(srv.addr, "/a", &body).await;
    let ev = c.events().await;
    assert_eq!(
        types(&ev),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "STATE_DELTA",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    match &ev[6] {
        Event::ToolCallArgs(a) => assert_eq!(a.delta, r#"{"q":"find it"}"#),
        other => panic!("{other:?}"),
    }
    match &ev[9] {
        Event::StateDelta(StateDelta { delta, .. }) => assert_eq!(
            serde_json::to_value(delta).unwrap(),
            json!([{"op": "replace", "path": "/n", "value": 2}])
        ),
        other => panic!("{other:?}"),
    }
    // Fresh ids: the two messages and the tool call differ, all derived from the run.
    let ids: Vec<String> = ev
        .iter()
        .filter_map(|e| match e {
            Event::TextMessageStart(s) => Some(s.message_id.clone()),
            Event::ToolCallStart(s) => Some(s.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|i| i.starts_with("r-")), "{ids:?}");
    assert_ne!(ids[0], ids[2]);
}

#[tokio::test]
async fn a_stream_shaped_agent_gets_its_lifecycle_added() {
    let echo = agent_stream(|input: RunAgentInput, _ctx| {
        let text = input.last_user_text().unwrap_or_default();
        let id = format!("{}-echo", input.run_id);
        agui_sdk_server::futures_util::stream::iter([
            Ok(Event::text_message_start(&id)),
            Ok(Event::text_message_content(&id, text)),
            Ok(Event::text_message_end(&id)),
        ])
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("echo", echo)
        .verify(true)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::post_json(srv.addr, "/echo", &input("t", "r", "ping")).await;
    let ev = c.events().await;
    assert_eq!(
        types(&ev),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    match &ev[2] {
        Event::TextMessageContent(c) => assert_eq!(c.delta, "ping"),
        other => panic!("{other:?}"),
    }
}
