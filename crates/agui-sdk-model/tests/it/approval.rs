//! Approvals of server-side tools, the agent run behind the runtime's interrupt rules
//! (`Interrupts::run` over an in-memory ledger) against a fake chat-completions
//! upstream: a call that needs approval is not run and the run pauses; the resumed run
//! runs it (at most once, with the edited arguments if any) or tells the model it was
//! declined, and the model gets one result per call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agui_sdk_agent::lifecycle::{default_verifier, GuardFlow};
use agui_sdk_agent::runs::{InMemoryLedger, InterruptKey, InterruptPolicy, Interrupts};
use agui_sdk_agent::{Agent, LifecycleGuard, RunContext};
use agui_sdk_core::{Event, RunAgentInput, RunFinishedOutcome};
use agui_sdk_model::{Approval, ModelAgentBuilder, OpenAiAgent, ToolContext, ToolResult};
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::common::Add;
use crate::fake::{delta, finish, tool_delta};
use crate::fake_server::{self, Server};

/// The arguments of the `send` tool, which needs approval.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Send {
    /// Who gets it.
    to: String,
    /// How much.
    amount: f64,
}

const SEND_ARGS: &str = r#"{"to":"bob","amount":5}"#;

/// The model's turn for scenario `model`: its tool calls until the request carries a
/// result for each, then a text quoting the results. `flaky` fails its second request.
fn answer(model: &str, n: usize, body: &Value) -> Option<Vec<Value>> {
    if model == "flaky" && n == 1 {
        return None;
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let results: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    if !results.is_empty() {
        return Some(vec![
            delta(json!({ "role": "assistant", "content": "" })),
            delta(json!({ "content": format!("Results: {}", results.join("; ")) })),
            finish("stop"),
        ]);
    }
    let mut chunks = vec![delta(json!({ "role": "assistant", "content": null }))];
    match model {
        "big" => chunks.push(tool_delta(
            0,
            Some("call_send"),
            Some("send"),
            r#"{"to":"bob","amount":500}"#,
        )),
        "mixed" => {
            chunks.push(tool_delta(
                0,
                Some("call_add"),
                Some("add"),
                r#"{"a":2,"b":3}"#,
            ));
            chunks.push(tool_delta(1, Some("call_send"), Some("send"), SEND_ARGS));
        }
        "mcp" => chunks.push(tool_delta(0, Some("call_send"), Some("box__add"), "{}")),
        _ => chunks.push(tool_delta(0, Some("call_send"), Some("send"), SEND_ARGS)),
    }
    chunks.push(finish("tool_calls"));
    Some(chunks)
}

async fn serve(mut sock: TcpStream, server: Server) -> std::io::Result<()> {
    let Some(req) = server.take(&mut sock).await else {
        return Ok(());
    };
    match answer(&req.model, req.n, &req.body) {
        None => {
            fake_server::write_status(&mut sock, 400, None, r#"{"error":{"message":"no"}}"#).await?
        }
        Some(chunks) => {
            fake_server::write_stream_head(&mut sock, "text/event-stream").await?;
            for c in chunks {
                fake_server::write_pieces(&mut sock, format!("data: {c}\n\n").as_bytes()).await;
            }
            fake_server::write_pieces(&mut sock, b"data: [DONE]\n\n").await;
        }
    }
    sock.shutdown().await
}

/// One thread of the agent over scenario `model`, behind the interrupt rules; `sent`
/// records every run of `send` (the arguments it got).
struct Thread {
    server: Server,
    model: &'static str,
    agent: Arc<dyn Agent>,
    interrupts: Interrupts,
    sent: Arc<Mutex<Vec<Value>>>,
    /// While set, `send` never returns (after recording its run).
    hang: Arc<AtomicBool>,
}

impl Thread {
    async fn new(model: &'static str, approval: Approval) -> Thread {
        Thread::with(model, |b| b.approve_tool("send", approval)).await
    }

    /// A thread of the agent `configure` finishes.
    async fn with(
        model: &'static str,
        configure: impl FnOnce(ModelAgentBuilder) -> ModelAgentBuilder,
    ) -> Thread {
        let server = fake_server::start(serve).await;
        let sent: Arc<Mutex<Vec<Value>>> = Arc::default();
        let log = sent.clone();
        let hang: Arc<AtomicBool> = Arc::default();
        let hangs = hang.clone();
        let builder =
            OpenAiAgent::builder(server.url(), model)
                .retries(0, Duration::from_millis(1))
                .tool(
                    "add",
                    "Adds two numbers.",
                    |x: Add, _: ToolContext| async move {
                        Ok(ToolResult::text((x.a + x.b).to_string()))
                    },
                )
                .tool("send", "Sends money.", move |x: Send, _: ToolContext| {
                    let log = log.clone();
                    let hangs = hangs.load(Ordering::SeqCst);
                    async move {
                        log.lock()
                            .unwrap()
                            .push(json!({ "to": x.to, "amount": x.amount }));
                        if hangs {
                            std::future::pending::<()>().await;
                        }
                        Ok(ToolResult::text(format!("sent {} to {}", x.amount, x.to)))
                    }
                });
        let agent = configure(builder).build().unwrap();
        Thread {
            server,
            model,
            agent: Arc::new(agent),
            interrupts: Interrupts::new(
                Arc::new(InMemoryLedger::default()),
                InterruptPolicy::default(),
            ),
            sent,
            hang,
        }
    }

    /// Runs `input` on the thread: the events as a client reads them (the lifecycle
    /// guard adds `RUN_STARTED` and verifies the stream).
    async fn run(&self, input: RunAgentInput) -> Vec<Event> {
        let ctx = RunContext::detached(&input.thread_id, &input.run_id);
        let mut guard =
            LifecycleGuard::new(&input.thread_id, &input.run_id, Some(default_verifier()));
        let key = InterruptKey::derive("owner", "agent", "thread");
        let mut stream = self.interrupts.run(self.agent.clone(), key, input, ctx);
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => {
                    if guard.on_event(e, &mut out) == GuardFlow::End {
                        break;
                    }
                }
                Err(e) => {
                    guard.on_error(e, &mut out);
                    break;
                }
            }
        }
        guard.on_end(&mut out);
        if matches!(out.last(), Some(Event::RunError(_))) {
            // The runtime releases a failed run's claim in the background: the answer
            // can be sent again once it has.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        out
    }

    /// The first run: the user asks, the model calls.
    async fn ask(&self) -> Vec<Event> {
        self.run(input("r1", Vec::new(), None)).await
    }

    /// The model's requests, in order.
    fn requests(&self) -> Vec<Value> {
        self.server
            .requests_for(self.model)
            .into_iter()
            .map(|r| r.body)
            .collect()
    }

    fn sent(&self) -> Vec<Value> {
        self.sent.lock().unwrap().clone()
    }
}

/// A run of the thread: the user's message, the assistant's call of `send` (unless the
/// run is the first), `extra` messages after it, and `resume`.
fn input(run_id: &str, extra: Vec<Value>, resume: Option<Value>) -> RunAgentInput {
    input_calling(("send", SEND_ARGS), run_id, extra, resume)
}

/// [`input`], the assistant's call `call_send` being of `tool` with `args`.
fn input_calling(
    (tool, args): (&str, &str),
    run_id: &str,
    extra: Vec<Value>,
    resume: Option<Value>,
) -> RunAgentInput {
    let mut messages = vec![json!({ "id": "u", "role": "user", "content": "pay bob" })];
    if run_id != "r1" {
        messages.push(json!({
            "id": "r1-m0", "role": "assistant",
            "toolCalls": [{ "id": "call_send", "type": "function",
                            "function": { "name": tool, "arguments": args } }]
        }));
    }
    messages.extend(extra);
    let mut v = json!({ "threadId": "thread", "runId": run_id, "messages": messages });
    if let Some(r) = resume {
        v["resume"] = json!([r]);
    }
    serde_json::from_value(v).unwrap()
}

/// The answer to the approval of `call_send`.
fn resolved(payload: Value) -> Value {
    json!({ "interruptId": "approve-call_send", "status": "resolved", "payload": payload })
}

fn interrupts(events: &[Event]) -> Vec<agui_sdk_core::Interrupt> {
    match events.last() {
        Some(Event::RunFinished(f)) => match &f.outcome {
            Some(RunFinishedOutcome::Interrupt(o)) => o.interrupts.clone(),
            _ => Vec::new(),
        },
        other => panic!("expected RUN_FINISHED last, got {other:?}"),
    }
}

/// Whether the run finished without an interrupt or an error.
fn succeeded(events: &[Event]) -> bool {
    matches!(events.last(), Some(Event::RunFinished(_))) && interrupts(events).is_empty()
}

fn error_code(events: &[Event]) -> String {
    match events.last() {
        Some(Event::RunError(e)) => e.code.clone().unwrap_or_default(),
        other => panic!("expected RUN_ERROR last, got {other:?}"),
    }
}

/// The `TOOL_CALL_RESULT`s: tool call id and text.
fn results(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallResult(r) => Some((r.tool_call_id.clone(), r.content.to_text())),
            _ => None,
        })
        .collect()
}

/// The tool messages of a request to the model.
fn tool_messages(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_call_needing_approval_is_not_run_and_the_run_pauses() {
    let t = Thread::new("send", Approval::Always).await;
    let events = t.ask().await;
    let types: Vec<_> = events.iter().map(|e| e.event_type().as_str()).collect();
    for ty in ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] {
        assert!(types.contains(&ty), "{ty} goes out: {types:?}");
    }
    assert!(
        results(&events).is_empty(),
        "no result: the tool did not run"
    );
    assert!(t.sent().is_empty());
    let raised = interrupts(&events);
    assert_eq!(raised.len(), 1);
    let i = &raised[0];
    assert_eq!(i.id, "approve-call_send");
    assert_eq!(i.reason, "tool_call");
    assert_eq!(i.tool_call_id.as_deref(), Some("call_send"));
    let message = i.message.clone().unwrap_or_default();
    assert!(
        message.contains("\"send\"") && message.contains(SEND_ARGS),
        "{message}"
    );
    assert_eq!(
        Value::Object(i.response_schema.clone().unwrap()),
        json!({ "type": "object",
                "properties": { "approved": { "type": "boolean" }, "editedArgs": { "type": "object" } },
                "required": ["approved"] })
    );
    assert_eq!(t.requests().len(), 1, "the model is not called again");
}

#[tokio::test]
async fn an_approved_call_runs_once_and_its_result_reaches_the_model() {
    let t = Thread::new("send", Approval::Always).await;
    t.ask().await;
    let events = t
        .run(input(
            "r2",
            Vec::new(),
            Some(resolved(json!({ "approved": true }))),
        ))
        .await;
    assert!(succeeded(&events), "{events:?}");
    assert_eq!(t.sent(), vec![json!({ "to": "bob", "amount": 5.0 })]);
    assert_eq!(
        results(&events),
        vec![("call_send".to_owned(), "sent 5 to bob".to_owned())]
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::ToolCallStart(_))),
        "the call is not restated"
    );
    let requests = t.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        tool_messages(&requests[1]),
        vec![json!({ "role": "tool", "tool_call_id": "call_send", "content": "sent 5 to bob" })]
    );
    // The answer was consumed: sending it again is refused, and the tool stays run once.
    let again = t
        .run(input(
            "r3",
            Vec::new(),
            Some(resolved(json!({ "approved": true }))),
        ))
        .await;
    assert_eq!(error_code(&again), "interrupt_answered");
    assert_eq!(t.sent().len(), 1);
}

#[tokio::test]
async fn edited_arguments_replace_the_models_and_a_result_the_client_added_is_dropped() {
    let t = Thread::new("send", Approval::Always).await;
    t.ask().await;
    // CopilotKit adds a result of its own for the call before it resumes.
    let placeholder = json!({ "id": "ck", "role": "tool", "toolCallId": "call_send", "content": "pending approval" });
    let events = t
        .run(input(
            "r2",
            vec![placeholder],
            Some(resolved(
                json!({ "approved": true, "editedArgs": { "to": "carol", "amount": 7 } }),
            )),
        ))
        .await;
    assert!(succeeded(&events), "{events:?}");
    assert_eq!(t.sent(), vec![json!({ "to": "carol", "amount": 7.0 })]);
    let requests = t.requests();
    assert_eq!(
        tool_messages(&requests[1]),
        vec![json!({ "role": "tool", "tool_call_id": "call_send", "content": "sent 7 to carol" })],
        "one result for the call, the tool's"
    );
}

#[tokio::test]
async fn a_denied_call_is_not_run_and_the_model_is_told() {
    let t = Thread::new("send", Approval::Always).await;
    t.ask().await;
    let events = t
        .run(input(
            "r2",
            Vec::new(),
            Some(resolved(json!({ "approved": false }))),
        ))
        .await;
    assert!(succeeded(&events), "{events:?}");
    assert!(t.sent().is_empty());
    let told = &tool_messages(&t.requests()[1])[0]["content"];
    assert!(told.as_str().unwrap().contains("declined"), "{told}");
    assert_eq!(results(&events)[0].1, told.as_str().unwrap());
}

#[tokio::test]
async fn a_cancelled_approval_is_not_run_and_the_model_is_told() {
    let t = Thread::new("send", Approval::Always).await;
    t.ask().await;
    let cancel = json!({ "interruptId": "approve-call_send", "status": "cancelled" });
    let events = t.run(input("r2", Vec::new(), Some(cancel))).await;
    assert!(succeeded(&events), "{events:?}");
    assert!(t.sent().is_empty());
    let told = &tool_messages(&t.requests()[1])[0]["content"];
    assert!(told.as_str().unwrap().contains("cancelled"), "{told}");
}

#[tokio::test]
async fn edited_arguments_failing_the_schema_end_the_run_and_the_answer_stays_open() {
    let t = Thread::new("send", Approval::Always).await;
    t.ask().await;
    let bad = resolved(json!({ "approved": true, "editedArgs": { "to": 5, "amount": 7 } }));
    let events = t.run(input("r2", Vec::new(), Some(bad))).await;
    assert_eq!(error_code(&events), "interrupt_invalid_payload");
    let Some(Event::RunError(e)) = events.last() else {
        unreachable!()
    };
    assert!(
        e.message.contains("/to"),
        "names the failing path: {}",
        e.message
    );
    assert!(t.sent().is_empty());
    assert_eq!(t.requests().len(), 1, "the model is not called");
    let good = resolved(json!({ "approved": true, "editedArgs": { "to": "dan", "amount": 9 } }));
    let events = t.run(input("r3", Vec::new(), Some(good))).await;
    assert!(succeeded(&events), "{events:?}");
    assert_eq!(t.sent(), vec![json!({ "to": "dan", "amount": 9.0 })]);
}

#[tokio::test]
async fn a_tool_that_ran_is_not_run_again_when_the_resumed_run_is_retried() {
    let t = Thread::new("flaky", Approval::Always).await;
    t.ask().await;
    let yes = || Some(resolved(json!({ "approved": true })));
    // The tool runs, then the model call after it fails: the run fails.
    let failed = t.run(input("r2", Vec::new(), yes())).await;
    assert_eq!(error_code(&failed), "upstream_error");
    assert_eq!(t.sent().len(), 1);
    // The same answer again: the recorded result, the tool not run a second time.
    let events = t.run(input("r3", Vec::new(), yes())).await;
    assert!(succeeded(&events), "{events:?}");
    assert_eq!(t.sent().len(), 1, "the tool ran once");
    assert_eq!(
        results(&events),
        vec![("call_send".to_owned(), "sent 5 to bob".to_owned())]
    );
    let requests = t.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        tool_messages(&requests[2]),
        vec![json!({ "role": "tool", "tool_call_id": "call_send", "content": "sent 5 to bob" })]
    );
}

#[tokio::test]
async fn a_tool_an_attempt_died_in_is_not_run_again_and_the_model_is_told() {
    let t = Thread::new("send", Approval::Always).await;
    t.ask().await;
    let yes = || Some(resolved(json!({ "approved": true })));
    // The attempt dies while the tool runs (its stream dropped, as when a process dies).
    t.hang.store(true, Ordering::SeqCst);
    let input2 = input("r2", Vec::new(), yes());
    let ctx = RunContext::detached(&input2.thread_id, &input2.run_id);
    let key = InterruptKey::derive("owner", "agent", "thread");
    let mut stream = t.interrupts.run(t.agent.clone(), key, input2, ctx);
    let attempt = tokio::spawn(async move { while stream.next().await.is_some() {} });
    for _ in 0..500 {
        if !t.sent().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(t.sent().len(), 1, "the tool started");
    attempt.abort();
    let _ = attempt.await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    t.hang.store(false, Ordering::SeqCst);
    let events = t.run(input("r3", Vec::new(), yes())).await;
    assert!(succeeded(&events), "{events:?}");
    assert_eq!(t.sent().len(), 1, "not run again");
    let told = &tool_messages(&t.requests()[1])[0]["content"];
    assert!(told.as_str().unwrap().contains("unknown"), "{told}");
}

#[tokio::test]
async fn a_policy_lets_some_arguments_run_without_approval() {
    let big = || Approval::when(|args: &Value| args["amount"].as_f64().is_none_or(|a| a > 100.0));
    let small = Thread::new("send", big()).await;
    let events = small.ask().await;
    assert!(succeeded(&events), "no interrupt: {events:?}");
    assert_eq!(small.sent().len(), 1);
    assert_eq!(results(&events)[0].1, "sent 5 to bob");

    let large = Thread::new("big", big()).await;
    let events = large.ask().await;
    assert_eq!(interrupts(&events).len(), 1);
    assert!(large.sent().is_empty());
}

#[tokio::test]
async fn the_other_calls_of_the_turn_run_before_the_run_pauses() {
    let t = Thread::new("mixed", Approval::Always).await;
    let events = t.ask().await;
    assert_eq!(
        results(&events),
        vec![("call_add".to_owned(), "5".to_owned())]
    );
    let raised = interrupts(&events);
    assert_eq!(raised.len(), 1);
    assert_eq!(raised[0].tool_call_id.as_deref(), Some("call_send"));
    // The client resends the turn with both calls and the result of `add`.
    let mut resumed = input(
        "r2",
        Vec::new(),
        Some(resolved(json!({ "approved": true }))),
    );
    let resumed_json = json!({
        "id": "r1-m0", "role": "assistant",
        "toolCalls": [
            { "id": "call_add", "type": "function", "function": { "name": "add", "arguments": r#"{"a":2,"b":3}"# } },
            { "id": "call_send", "type": "function", "function": { "name": "send", "arguments": SEND_ARGS } }
        ]
    });
    resumed.messages[1] = serde_json::from_value(resumed_json).unwrap();
    resumed.messages.push(
        serde_json::from_value(json!({ "id": "call_add-result", "role": "tool", "toolCallId": "call_add", "content": "5" }))
            .unwrap(),
    );
    let events = t.run(resumed).await;
    assert!(succeeded(&events), "{events:?}");
    let told: Vec<Value> = tool_messages(&t.requests()[1])
        .into_iter()
        .map(|m| m["tool_call_id"].clone())
        .collect();
    assert_eq!(
        told,
        vec![json!("call_add"), json!("call_send")],
        "one result per call, in order"
    );
}

/// An MCP tool is approved by the name the model sees: the hostile server's `add`
/// clashes with the agent's and is offered as `box__add`.
#[cfg(feature = "mcp")]
#[tokio::test]
async fn an_mcp_tool_waits_for_approval_by_its_offered_name() {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/mcp_servers/hostile.py");
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    let server = agui_sdk_model::McpServer::stdio(
        "python3",
        [
            script.to_string_lossy().into_owned(),
            "clash".into(),
            "box".into(),
        ],
    )
    .name("box")
    .env("PATH", path);
    let t = Thread::with("mcp", |b| {
        b.mcp_server(server)
            .approve_tool("box__add", Approval::Always)
    })
    .await;
    let events = t.ask().await;
    assert!(results(&events).is_empty(), "not run: {events:?}");
    let raised = interrupts(&events);
    assert_eq!(raised.len(), 1);
    assert!(raised[0]
        .message
        .as_deref()
        .unwrap_or_default()
        .contains("box__add"));
    let resumed = input_calling(
        ("box__add", "{}"),
        "r2",
        Vec::new(),
        Some(resolved(json!({ "approved": true }))),
    );
    let events = t.run(resumed).await;
    assert!(succeeded(&events), "{events:?}");
    assert_eq!(
        results(&events),
        vec![("call_send".to_owned(), "add from box".to_owned())]
    );
    assert_eq!(
        tool_messages(&t.requests()[1]),
        vec![json!({ "role": "tool", "tool_call_id": "call_send", "content": "add from box" })]
    );
}

#[test]
fn approving_a_tool_the_agent_does_not_have_fails_the_build() {
    let built = OpenAiAgent::builder("http://127.0.0.1:9/v1", "m")
        .approve_tool("nope", Approval::Always)
        .build();
    assert!(built.unwrap_err().to_string().contains("nope"));
}

#[tokio::test]
async fn every_tool_waits_when_all_are_to_be_approved() {
    let t = Thread::with("send", |b| b.approve_all_tools(Approval::Always)).await;
    let events = t.ask().await;
    assert!(results(&events).is_empty(), "the tool did not run");
    assert!(t.sent().is_empty());
    let raised = interrupts(&events);
    assert_eq!(raised.len(), 1);
    assert_eq!(raised[0].tool_call_id.as_deref(), Some("call_send"));
}
