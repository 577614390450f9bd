//! The client against the demo server, in-process on loopback: every demo agent, over
//! SSE and protobuf, with verification on; tool round trips, shared state, interrupts,
//! headers and bearer auth.

use std::time::Duration;

use agui_sdk_client::{ClientError, Conversation, ConversationBuilder, HttpAgent, RunParams};
use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::semantics::RunOutcome;
use agui_sdk_core::{Content, Message, ResumeEntry, Tool};
use agui_sdk_testkit::server::{spawn, TestServer};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{json, Value};

async fn demo_server() -> TestServer {
    spawn(agui_sdk_demo::router(Duration::ZERO).into_router()).await
}

fn agent(base: &str, name: &str, enc: Encoding) -> Conversation {
    start(builder(base, name, enc))
}

fn builder(base: &str, name: &str, enc: Encoding) -> ConversationBuilder {
    let http = HttpAgent::builder(format!("{base}/{name}"))
        .encoding(enc)
        .build()
        .unwrap();
    Conversation::builder(http).thread_id(format!("t-{name}-{enc:?}"))
}

/// The conversation, with the user's first message.
fn start(b: ConversationBuilder) -> Conversation {
    let mut a = b.build();
    a.add_message(Message::user("u1", "hello"));
    a
}

#[tokio::test]
async fn every_demo_agent_completes_a_verified_run() {
    let srv = demo_server().await;
    let base = srv.base();
    for enc in [Encoding::Sse, Encoding::Proto] {
        for name in agui_sdk_demo::NAMES {
            let mut a = agent(&base, name, enc);
            let r = a
                .run_agent(RunParams::new())
                .await
                .unwrap_or_else(|e| panic!("{name} over {enc:?}: {e}"));
            assert!(
                !r.new_message_ids.is_empty() || a.state() != &json!({}),
                "{name} produced nothing"
            );
            match (name, &r.outcome) {
                ("interrupt", RunOutcome::Interrupt { interrupts }) => {
                    assert_eq!(interrupts.len(), 1)
                }
                ("interrupt", o) => panic!("interrupt demo ended with {o:?}"),
                (_, RunOutcome::Success { .. }) => {}
                (_, o) => panic!("{name} ended with {o:?}"),
            }
        }
    }
}

#[tokio::test]
async fn a_frontend_tool_round_trip() {
    let srv = demo_server().await;
    let base = srv.base();
    let tool = Tool::new(
        "generate_task_steps",
        "Review steps",
        json!({"type": "object"}),
    );
    let mut a = start(
        builder(&base, "human_in_the_loop", Encoding::Sse)
            .tool(tool, |args: Value| async move {
                // Disable the first step, keep the others.
                let mut steps = args["steps"].as_array().cloned().unwrap_or_default();
                steps[0]["status"] = json!("disabled");
                Ok(Content::from(json!({"steps": steps}).to_string()))
            })
            .answer_tools(2),
    );
    let r = a.run_agent(RunParams::new()).await.unwrap();
    assert_eq!(r.runs, 2);
    let last = a.messages().last().unwrap();
    match last {
        Message::Assistant(m) => assert_eq!(
            m.content.as_deref(),
            Some("Executing the 3 steps you approved.")
        ),
        other => panic!("{other:?}"),
    }
    // The tool's result is in the conversation, answering the call.
    assert!(a
        .messages()
        .iter()
        .any(|m| matches!(m, Message::Tool(t) if t.content.to_text().contains("disabled"))));
}

#[tokio::test]
async fn shared_state_goes_both_ways() {
    let srv = demo_server().await;
    let base = srv.base();
    let mut a = start(builder(&base, "shared_state", Encoding::Proto)
        .state(json!({"title": "Soup", "ingredients": [{"name": "Water", "amount": "1 l"}], "instructions": []})));
    a.run_agent(RunParams::new()).await.unwrap();
    assert_eq!(
        a.state()["title"],
        "Soup",
        "the agent read the state the client sent"
    );
    assert_eq!(a.state()["updatedBy"], "agent");
}

#[tokio::test]
async fn an_interrupt_is_answered_on_the_next_run() {
    let srv = demo_server().await;
    let base = srv.base();
    let mut a = agent(&base, "interrupt", Encoding::Sse);
    let r = a.run_agent(RunParams::new()).await.unwrap();
    let RunOutcome::Interrupt { interrupts } = r.outcome else {
        panic!("no interrupt")
    };
    // Leaving it unanswered is refused before sending.
    assert!(matches!(
        a.run_agent(RunParams::new()).await,
        Err(ClientError::Interrupts(_))
    ));
    let r = a
        .run_agent(RunParams::new().resume(ResumeEntry::resolved(
            &interrupts[0].id,
            json!({"approved": true}),
        )))
        .await
        .unwrap();
    assert!(matches!(r.outcome, RunOutcome::Success { .. }));
    assert!(a.pending_interrupts().is_empty());
    assert!(a.new_messages(&r).any(|m| matches!(m, Message::Assistant(x) if x.content.as_deref().unwrap_or("").contains("Approved"))));
}

#[tokio::test]
async fn the_server_refusal_is_a_typed_error() {
    let srv = demo_server().await;
    let base = srv.base();
    let mut a = agent(&base, "no_such_agent", Encoding::Sse);
    match a.run_agent(RunParams::new()).await {
        Err(ClientError::Http {
            status: 404,
            json: Some(body),
            ..
        }) => assert!(body.to_string().contains("no_such_agent"), "{body}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn headers_and_bearer_token_are_sent() {
    let app = axum::Router::new().route(
        "/",
        post(|headers: HeaderMap| async move {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let custom = headers
                .get("x-tenant")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let accept = headers
                .get("accept")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            (
                StatusCode::UNAUTHORIZED,
                format!("{auth}|{custom}|{accept}"),
            )
        }),
    );
    let srv = spawn(app).await;
    let http = HttpAgent::builder(srv.url("/"))
        .bearer_token("s3cret")
        .header("x-tenant", "acme")
        .encoding(Encoding::Proto)
        .build()
        .unwrap();
    let mut a = Conversation::new(http);
    match a.run_agent(RunParams::new()).await {
        Err(ClientError::Http {
            status: 401,
            body,
            json: None,
        }) => {
            assert_eq!(body, "Bearer s3cret|acme|application/vnd.ag-ui.event+proto")
        }
        other => panic!("{other:?}"),
    }
}
