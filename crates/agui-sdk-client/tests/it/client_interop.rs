//! Our client against servers built on the reference SDKs (the TypeScript encoder on
//! Node, the Python SDK on uvicorn), over SSE and protobuf: the conversation it holds
//! after each run equals what the reference `HttpAgent` holds for the same server.

use agui_sdk_client::{Conversation, HttpAgent, RunParams};
use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::semantics::RunOutcome;
use agui_sdk_core::{Message, ResumeEntry};
use agui_sdk_testkit::interop as interop_gate;
use agui_sdk_testkit::reference::{self, RefServer};
use serde_json::{json, Value};

/// Runs the plan with our client; one `{messages, state, outcome}` per run.
async fn ours(url: &str, plan: &Value, encoding: Encoding) -> Vec<Value> {
    let http = HttpAgent::builder(url).encoding(encoding).build().unwrap();
    let messages: Vec<Message> =
        serde_json::from_value(plan["messages"].clone()).unwrap_or_default();
    let mut agent = Conversation::builder(http)
        .thread_id(plan["threadId"].as_str().unwrap())
        .messages(messages)
        .state(plan.get("state").cloned().unwrap_or(json!({})))
        .build();
    let mut out = Vec::new();
    for run in plan["runs"].as_array().unwrap() {
        let mut params = RunParams::new().run_id(run["runId"].as_str().unwrap());
        for r in run
            .get("resume")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            params = params.resume(serde_json::from_value::<ResumeEntry>(r.clone()).unwrap());
        }
        let result = agent
            .run_agent(params)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let (outcome, result_value) = match &result.outcome {
            RunOutcome::Success { result, .. } => {
                ("success", result.clone().unwrap_or(Value::Null))
            }
            RunOutcome::Interrupt { .. } => ("interrupt", Value::Null),
            RunOutcome::Cancelled => ("cancelled", Value::Null),
        };
        out.push(json!({
            "messages": agent.messages(),
            "state": agent.state(),
            "outcome": outcome,
            "result": result_value,
            "pendingInterrupts": agent.pending_interrupts(),
        }));
    }
    out
}

fn plans() -> Vec<(&'static str, Value)> {
    let user = json!([{"id": "u1", "role": "user", "content": "hello"}]);
    vec![
        (
            "chat",
            json!({"threadId": "t-chat", "messages": user, "runs": [{"runId": "r1"}, {"runId": "r2"}]}),
        ),
        (
            "tools",
            json!({"threadId": "t-tools", "messages": user, "runs": [{"runId": "r1"}]}),
        ),
        (
            "state",
            json!({"threadId": "t-state", "messages": user, "state": {"seed": true}, "runs": [{"runId": "r1"}]}),
        ),
        (
            "reasoning",
            json!({"threadId": "t-reason", "messages": user, "runs": [{"runId": "r1"}]}),
        ),
        (
            "interrupt",
            json!({"threadId": "t-int", "messages": user, "runs": [
                {"runId": "r1"},
                {"runId": "r2", "resume": [{"interruptId": "approve-1", "status": "resolved", "payload": {"approved": true}}]}
            ]}),
        ),
    ]
}

async fn compare(server: &RefServer, encodings: &[Encoding]) -> usize {
    let mut compared = 0;
    for (scenario, plan) in plans() {
        let url = format!("{}/{scenario}", server.base);
        for &enc in encodings {
            let reference = reference::reference_client(&url, &plan, enc == Encoding::Proto);
            let ours = ours(&url, &plan, enc).await;
            assert_eq!(ours.len(), reference.len());
            for (i, (o, r)) in ours.iter().zip(&reference).enumerate() {
                assert_eq!(o, r, "{scenario} over {enc:?}, run {i}");
                compared += 1;
            }
        }
    }
    compared
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_conversation_as_the_reference_client_against_the_node_encoder() {
    if !interop_gate::ready("same_conversation_as_the_reference_client_against_the_node_encoder") {
        return;
    }
    let server = reference::node_server();
    let n = compare(&server, &[Encoding::Sse, Encoding::Proto]).await;
    assert_eq!(n, 2 * 7);
    println!(
        "compared {n} runs against the reference HttpAgent (Node encoder server, SSE and protobuf)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_conversation_as_the_reference_client_against_the_python_sdk() {
    if !interop_gate::ready("same_conversation_as_the_reference_client_against_the_python_sdk") {
        return;
    }
    let server = reference::python_server();
    let n = compare(&server, &[Encoding::Sse]).await;
    assert_eq!(n, 7);
    println!("compared {n} runs against the reference HttpAgent (Python SDK server, SSE)");
}
