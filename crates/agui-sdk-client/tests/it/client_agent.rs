//! The conversation object: input building, subscribers, middleware, frontend tools,
//! interrupts and failures, over a scripted in-process transport.

use std::sync::{Arc, Mutex};

use agui_sdk_client::{
    ClientError, Conversation, EventStream, FilterToolCalls, Flow, RunParams, Subscriber, Transport,
};
use agui_sdk_core::event::{RunFinished, TextMessageContent, TextMessageStart};
use agui_sdk_core::semantics::{InboundConfig, InboundError, RunOutcome};
use agui_sdk_core::{
    Content, Event, Interrupt, Message, ResumeEntry, RunAgentInput, RunFinishedOutcome, Tool,
};
use serde_json::{json, Value};

/// Plays one script per run and records the inputs it was sent.
#[derive(Default)]
struct Script {
    runs: Mutex<Vec<Vec<Event>>>,
    inputs: Mutex<Vec<RunAgentInput>>,
}

impl Script {
    fn new(runs: Vec<Vec<Event>>) -> Arc<Self> {
        Arc::new(Script {
            runs: Mutex::new(runs.into_iter().rev().collect()),
            inputs: Mutex::default(),
        })
    }
}

impl Transport for Script {
    fn run(&self, input: &RunAgentInput, _inbound: &InboundConfig) -> EventStream {
        self.inputs.lock().unwrap().push(input.clone());
        let events = self
            .runs
            .lock()
            .unwrap()
            .pop()
            .expect("a script for this run");
        // Ids in scripts may use "$RUN"; replace them with the run id.
        let events = events
            .into_iter()
            .map(|e| {
                let s = e
                    .to_json_string()
                    .replace("$RUN", &input.run_id)
                    .replace("$THREAD", &input.thread_id);
                Event::from_json_str(&s).unwrap()
            })
            .collect();
        EventStream::from_events(events)
    }
}

fn text_run(id: &str, text: &str) -> Vec<Event> {
    vec![
        Event::run_started("$THREAD", "$RUN"),
        Event::text_message_start(id),
        Event::text_message_content(id, text),
        Event::text_message_end(id),
        Event::run_finished("$THREAD", "$RUN"),
    ]
}

#[tokio::test]
async fn input_carries_the_conversation_and_new_messages_are_reported() {
    let script = Script::new(vec![text_run("a1", "Hi!"), text_run("a2", "Again.")]);
    let mut agent = Conversation::builder_with_transport(script.clone())
        .thread_id("th")
        .state(json!({"n": 1}))
        .build();
    agent.add_message(Message::user("u1", "hello"));
    let r = agent
        .run_agent(
            RunParams::new()
                .run_id("r1")
                .forwarded_props(json!({"k": 1})),
        )
        .await
        .unwrap();
    assert_eq!(r.new_message_ids, ["a1"]);
    assert_eq!(
        agent.new_messages(&r).map(|m| m.id()).collect::<Vec<_>>(),
        ["a1"]
    );
    assert!(matches!(r.outcome, RunOutcome::Success { .. }));
    agent.add_message(Message::user("u2", "more"));
    let r = agent.run_agent(RunParams::new()).await.unwrap();
    assert_eq!(
        agent.new_messages(&r).map(|m| m.id()).collect::<Vec<_>>(),
        ["a2"]
    );

    let inputs = script.inputs.lock().unwrap();
    assert_eq!(inputs[0].thread_id, "th");
    assert_eq!(inputs[0].run_id, "r1");
    assert_eq!(inputs[0].protocol_version.as_deref(), Some("1.1"));
    assert_eq!(inputs[0].state, Some(json!({"n": 1}).into()));
    assert_eq!(inputs[0].forwarded_props, Some(json!({"k": 1}).into()));
    assert_eq!(inputs[0].messages.len(), 1);
    // The second run sends the whole conversation and a fresh run id.
    assert_eq!(
        inputs[1]
            .messages
            .iter()
            .map(|m| m.id())
            .collect::<Vec<_>>(),
        ["u1", "a1", "u2"]
    );
    assert_ne!(inputs[1].run_id, "r1");
    assert_eq!(inputs[1].forwarded_props, Some(json!({}).into()));
}

#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Subscriber for Recorder {
    fn on_text_message_start(&mut self, e: &TextMessageStart) -> Flow {
        self.0
            .lock()
            .unwrap()
            .push(format!("start {}", e.message_id));
        Flow::Continue
    }
    fn on_text_message_content(&mut self, e: &TextMessageContent) -> Flow {
        self.0.lock().unwrap().push(format!("delta {}", e.delta));
        Flow::Continue
    }
    fn on_messages_changed(&mut self, _: &[Message], changed: &[String]) -> Flow {
        self.0
            .lock()
            .unwrap()
            .push(format!("messages {}", changed.join(",")));
        Flow::Continue
    }
    fn on_state_changed(&mut self, state: &Value) -> Flow {
        self.0.lock().unwrap().push(format!("state {state}"));
        Flow::Continue
    }
    fn on_run_finished(&mut self, _: &RunFinished) {
        self.0.lock().unwrap().push("finished".into());
    }
    fn on_run_failed(&mut self, e: &ClientError) {
        self.0.lock().unwrap().push(format!("failed {e}"));
    }
}

#[tokio::test]
async fn subscribers_see_events_and_changes_in_order() {
    let mut run = text_run("a1", "Hi");
    run.insert(4, Event::state_snapshot(json!({"x": 1})));
    let rec = Recorder::default();
    let mut agent = Conversation::builder_with_transport(Script::new(vec![run]))
        .subscribe(rec.clone())
        .build();
    agent.run_agent(RunParams::new()).await.unwrap();
    assert_eq!(
        *rec.0.lock().unwrap(),
        [
            "start a1",
            "messages a1",
            "delta Hi",
            "messages a1",
            "state {\"x\":1}",
            "finished"
        ]
    );
}

struct StopAfterFirstDelta;
impl Subscriber for StopAfterFirstDelta {
    fn on_text_message_content(&mut self, _: &TextMessageContent) -> Flow {
        Flow::Stop
    }
}

#[tokio::test]
async fn a_subscriber_can_stop_the_run() {
    let rec = Recorder::default();
    let mut agent = Conversation::builder_with_transport(Script::new(vec![text_run("a1", "Hi")]))
        .subscribe(StopAfterFirstDelta)
        .subscribe(rec.clone())
        .build();
    let err = agent.run_agent(RunParams::new()).await.unwrap_err();
    assert!(matches!(err, ClientError::Stopped));
    // What was applied before the stop is kept.
    assert_eq!(agent.messages().len(), 1);
    assert!(rec.0.lock().unwrap().last().unwrap().starts_with("failed"));
}

#[tokio::test]
async fn run_error_fails_the_run_and_keeps_what_was_applied() {
    let run = vec![
        Event::run_started("$THREAD", "$RUN"),
        Event::text_message_start("a1"),
        Event::text_message_content("a1", "partial"),
        Event::run_error("model overloaded"),
    ];
    let mut agent = Conversation::with_transport(Script::new(vec![run]));
    match agent.run_agent(RunParams::new()).await {
        Err(ClientError::RunFailed { message, .. }) => assert_eq!(message, "model overloaded"),
        other => panic!("{other:?}"),
    }
    assert_eq!(agent.messages().len(), 1);
}

#[tokio::test]
async fn protocol_violations_fail_the_run() {
    let run = vec![
        Event::run_started("$THREAD", "$RUN"),
        Event::text_message_content("never-opened", "x"),
    ];
    let mut agent = Conversation::with_transport(Script::new(vec![run]));
    match agent.run_agent(RunParams::new()).await {
        Err(ClientError::Inbound {
            source: InboundError::Verify { source },
            ..
        }) => assert!(source.to_string().contains("never-opened"), "{source}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn chunks_are_expanded_before_they_are_applied() {
    let run = vec![
        Event::run_started("$THREAD", "$RUN"),
        Event::from_json_str(r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"c1","delta":"Hel"}"#)
            .unwrap(),
        Event::from_json_str(r#"{"type":"TEXT_MESSAGE_CHUNK","delta":"lo"}"#).unwrap(),
        Event::run_finished("$THREAD", "$RUN"),
    ];
    let mut agent = Conversation::with_transport(Script::new(vec![run]));
    let r = agent.run_agent(RunParams::new()).await.unwrap();
    match &agent.new_messages(&r).collect::<Vec<_>>()[..] {
        [Message::Assistant(a)] => assert_eq!(a.content.as_deref(), Some("Hello")),
        other => panic!("{other:?}"),
    }
}

fn tool_run(call: &str, name: &str) -> Vec<Event> {
    vec![
        Event::run_started("$THREAD", "$RUN"),
        Event::tool_call_start(call, name),
        Event::tool_call_args(call, r#"{"tz":"UTC"}"#),
        Event::tool_call_end(call),
        Event::run_finished("$THREAD", "$RUN"),
    ]
}

#[tokio::test]
async fn the_filter_middleware_drops_calls_of_denied_tools() {
    let mut run = tool_run("c1", "secret");
    run.splice(4..4, tool_run("c2", "public")[1..4].to_vec());
    let mut agent = Conversation::builder_with_transport(Script::new(vec![run]))
        .use_middleware(FilterToolCalls::deny(["secret"]))
        .build();
    agent.run_agent(RunParams::new()).await.unwrap();
    let calls: Vec<String> = agent
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(
                a.tool_calls
                    .iter()
                    .flatten()
                    .map(|t| t.function.name.clone()),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(calls, ["public"]);
}

#[tokio::test]
async fn frontend_tools_are_answered_on_the_next_run() {
    let script = Script::new(vec![
        tool_run("c1", "get_time"),
        text_run("a1", "It is noon."),
    ]);
    let tool = Tool::new("get_time", "Current time", json!({"type": "object"}));
    let mut agent = Conversation::builder_with_transport(script.clone())
        .tool(tool, |args: Value| async move {
            Ok(Content::from(format!(
                "12:00 {}",
                args["tz"].as_str().unwrap_or("?")
            )))
        })
        .answer_tools(3)
        .build();
    let r = agent.run_agent(RunParams::new()).await.unwrap();
    assert_eq!(r.runs, 2);
    let inputs = script.inputs.lock().unwrap();
    assert_eq!(inputs[0].tools[0].name, "get_time");
    match inputs[1].messages.last() {
        Some(Message::Tool(t)) => {
            assert_eq!(t.tool_call_id, "c1");
            assert_eq!(t.content, Content::from("12:00 UTC"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.new_message_ids.last().map(String::as_str), Some("a1"));
}

/// A registered tool is answered without being asked to (up to `DEFAULT_TOOL_ROUNDS`
/// runs), and `answer_tools(0)` hands its calls back to the caller.
#[tokio::test]
async fn a_registered_tool_is_answered_by_default() {
    let tool = || Tool::new("get_time", "Current time", json!({"type": "object"}));
    let handler = |_: Value| async move { Ok(Content::from("12:00")) };
    let script = Script::new(vec![
        tool_run("c1", "get_time"),
        text_run("a1", "It is noon."),
    ]);
    let mut agent = Conversation::builder_with_transport(script.clone())
        .tool(tool(), handler)
        .build();
    let r = agent.run_agent(RunParams::new()).await.unwrap();
    assert_eq!(r.runs, 2, "the call was answered by a second run");

    let script = Script::new(vec![tool_run("c1", "get_time")]);
    let mut agent = Conversation::builder_with_transport(script.clone())
        .tool(tool(), handler)
        .answer_tools(0)
        .build();
    let r = agent.run_agent(RunParams::new()).await.unwrap();
    assert_eq!(r.runs, 1, "with answer_tools(0) the call is the caller's");
    assert_eq!(
        script.inputs.lock().unwrap().len(),
        1,
        "no second run was sent"
    );
}

fn interrupt_run(expires_at: Option<&str>) -> Vec<Event> {
    let mut i = Interrupt::new("i1", "tool_approval");
    i.expires_at = expires_at.map(str::to_owned);
    let mut fin = RunFinished::new("$THREAD", "$RUN");
    fin.outcome = Some(RunFinishedOutcome::interrupt(vec![i]));
    vec![Event::run_started("$THREAD", "$RUN"), fin.into()]
}

#[tokio::test]
async fn interrupts_must_be_answered_by_the_next_run() {
    let script = Script::new(vec![interrupt_run(None), text_run("a1", "done")]);
    let mut agent = Conversation::with_transport(script.clone());
    let r = agent.run_agent(RunParams::new()).await.unwrap();
    assert!(matches!(&r.outcome, RunOutcome::Interrupt { interrupts } if interrupts[0].id == "i1"));
    assert_eq!(agent.pending_interrupts().len(), 1);
    // Not answered: refused before anything is sent.
    let err = agent.run_agent(RunParams::new()).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Interrupts(m) if m.to_string().contains("i1")),
        "{err}"
    );
    assert_eq!(script.inputs.lock().unwrap().len(), 1);
    // Answered: sent with the resume entry, and the interrupt is cleared.
    agent
        .run_agent(RunParams::new().resume(ResumeEntry::resolved("i1", json!({"ok": true}))))
        .await
        .unwrap();
    assert!(agent.pending_interrupts().is_empty());
    assert_eq!(
        script.inputs.lock().unwrap()[1].resume.as_ref().unwrap()[0].interrupt_id,
        "i1"
    );
}

#[tokio::test]
async fn an_expired_interrupt_can_only_be_cancelled() {
    let script = Script::new(vec![
        interrupt_run(Some("2000-01-01T00:00:00Z")),
        text_run("a1", "ok"),
    ]);
    let mut agent = Conversation::with_transport(script);
    agent.run_agent(RunParams::new()).await.unwrap();
    let err = agent
        .run_agent(RunParams::new().resume(ResumeEntry::resolved("i1", json!(1))))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Interrupts(m) if m.to_string().contains("expired")),
        "{err}"
    );
    agent
        .run_agent(RunParams::new().resume(ResumeEntry::cancelled("i1")))
        .await
        .unwrap();
}

#[tokio::test]
async fn another_agent_continues_the_same_thread() {
    let first = Script::new(vec![text_run("a1", "from the first")]);
    let second = Script::new(vec![text_run("a2", "from the second")]);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let mut chat = Conversation::builder_with_transport(first.clone())
        .thread_id("shared")
        .state(json!({"k": 1}))
        .on_event(move |e| log.lock().unwrap().push(e.event_type().to_string()))
        .build();
    chat.add_user_message("hi");
    chat.run_agent(RunParams::new()).await.unwrap();
    chat.set_transport(second.clone());
    chat.add_user_message("and you?");
    chat.run_agent(RunParams::new()).await.unwrap();
    // The second agent got the same thread, the whole conversation and the state.
    let input = second.inputs.lock().unwrap()[0].clone();
    assert_eq!(input.thread_id, "shared");
    assert_eq!(input.state, Some(json!({"k": 1}).into()));
    let ids: Vec<&str> = input.messages.iter().map(|m| m.id()).collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[1], "a1");
    assert_eq!(chat.messages().len(), 4);
    assert_eq!(chat.thread_id(), "shared");
    // The closure saw both runs.
    assert_eq!(
        seen.lock()
            .unwrap()
            .iter()
            .filter(|t| *t == "RUN_FINISHED")
            .count(),
        2
    );
}
