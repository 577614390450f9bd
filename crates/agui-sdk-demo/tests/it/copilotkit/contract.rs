//! The routes CopilotKit's client calls: info, run, the single route, refusals, thread
//! history on connect, live attach, stop, and a client going away.

use super::*;

#[tokio::test]
async fn info_lists_every_agent_and_the_default() {
    let s = serve(
        CopilotRuntime::new()
            .agent("echo", echo())
            .default_agent("echo"),
    )
    .await;
    let mut c = Client::request(s.addr, "GET", "/copilotkit/info", &[], b"").await;
    assert_eq!(c.status, 200);
    let info = c.json().await;
    assert_eq!(info["mode"], "sse");
    assert_eq!(info["audioFileTranscriptionEnabled"], false);
    assert_eq!(info["a2uiEnabled"], false);
    assert!(info["version"].is_string());
    assert_eq!(info["agents"]["echo"]["name"], "echo");
    assert_eq!(info["agents"]["default"]["name"], "default");
    assert!(info["agents"]["echo"]["className"].is_string());

    // The same through the single route, which serves no thread routes.
    let mut c = post(s.addr, "/copilotkit", &json!({ "method": "info" })).await;
    assert_eq!(c.status, 200);
    let mut single = c.json().await;
    assert_eq!(single["threadEndpoints"]["list"], false);
    single["threadEndpoints"] = info["threadEndpoints"].clone();
    assert_eq!(single["singleRoute"]["resourceOperations"], true);
    single.as_object_mut().unwrap().remove("singleRoute");
    assert_eq!(single, info);
}

#[tokio::test]
async fn a_run_streams_and_records_its_input() {
    let s = serve(
        CopilotRuntime::new()
            .agent("echo", echo())
            .default_agent("echo"),
    )
    .await;
    let mut c = post(
        s.addr,
        "/copilotkit/agent/default/run",
        &body("t", "r1", json!([user("u1", "hi")])),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("content-type"), Some("text/event-stream"));
    let events = c.events().await;
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(input_messages(&events[0]), ["u1"]);
    verify_all(&events);
}

#[tokio::test]
async fn refused_requests_say_why_in_copilotkit_shaped_json() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    let mut c = post(
        s.addr,
        "/copilotkit/agent/nope/run",
        &body("t", "r", json!([])),
    )
    .await;
    assert_eq!(c.status, 404);
    let b = c.json().await;
    assert_eq!(b["error"], "Agent not found");
    assert_eq!(b["message"], "Agent 'nope' does not exist");

    // `default` without a default agent is unknown too.
    let c = post(
        s.addr,
        "/copilotkit/agent/default/connect",
        &body("t", "r", json!([])),
    )
    .await;
    assert_eq!(c.status, 404);

    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/run",
        &json!({ "threadId": "t" }),
    )
    .await;
    assert_eq!(c.status, 400);
    let b = c.json().await;
    assert_eq!(b["error"], "Invalid request body");
    assert!(b["details"].as_str().unwrap().contains("runId"), "{b}");

    let mut c = Client::request(
        s.addr,
        "POST",
        "/copilotkit/agent/echo/run",
        &[("Content-Type", "text/plain")],
        b"hello",
    )
    .await;
    assert_eq!(c.status, 415);
    assert_eq!(c.json().await["code"], "unsupported_media_type");

    let big = body("t", "r", json!([user("u", &"x".repeat(70 * 1024))]));
    let mut c = post(s.addr, "/copilotkit/agent/echo/run", &big).await;
    assert_eq!(c.status, 413);
    assert_eq!(c.json().await["code"], "body_too_large");

    let mut c = post(s.addr, "/copilotkit/agent/nope/stop/t", &json!({})).await;
    assert_eq!(c.status, 404);
    assert_eq!(c.json().await["error"], "Agent not found");

    let mut c = post(s.addr, "/copilotkit/transcribe", &json!({})).await;
    assert_eq!(c.status, 503);
    assert!(c.json().await["message"].is_string());
    let c = Client::request(s.addr, "POST", "/copilotkit/threads/subscribe", &[], b"").await;
    assert_eq!(c.status, 422);
    let c = Client::request(s.addr, "GET", "/copilotkit/agent/echo/run", &[], b"").await;
    assert_eq!(c.status, 405);
}

#[tokio::test]
async fn the_single_route_dispatches_and_refuses_bad_envelopes() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/run", "params": { "agentId": "echo" }, "body": body("t", "r1", json!([user("u1", "yo")])) }),
    )
    .await;
    assert_eq!(c.status, 200);
    let events = c.events().await;
    assert_eq!(events.len(), 5);

    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/connect", "params": { "agentId": "echo" }, "body": body("t", "x", json!([])) }),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(types(&c.events().await).len(), 5, "the run replayed");

    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/stop", "params": { "agentId": "echo", "threadId": "t" } }),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.json().await["stopped"], false);

    for (envelope, message) in [
        (json!({}), "Missing method field"),
        (
            json!({ "method": "agent/fly" }),
            "Unsupported method 'agent/fly'",
        ),
        (
            json!({ "method": "agent/run", "body": {} }),
            "Missing or invalid parameter 'agentId'",
        ),
        (
            json!({ "method": "agent/stop", "params": { "agentId": "echo" } }),
            "Missing or invalid parameter 'threadId'",
        ),
        (
            json!({ "method": "agent/run", "params": { "agentId": "echo" } }),
            "Missing request body for JSON handler",
        ),
    ] {
        let mut c = post(s.addr, "/copilotkit", &envelope).await;
        assert_eq!(c.status, 400, "{envelope}");
        let b = c.json().await;
        assert_eq!(b["error"], "invalid_request");
        assert_eq!(b["message"], message);
    }
    let mut c = Client::request(
        s.addr,
        "POST",
        "/copilotkit",
        &[("Content-Type", "text/plain")],
        b"{}",
    )
    .await;
    assert_eq!(c.status, 415);
    assert_eq!(c.json().await["error"], "invalid_request");
}

#[tokio::test]
async fn connect_replays_history_without_duplicating_resent_messages() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    // Unknown thread: an empty stream that ends.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "x", json!([])),
    )
    .await;
    assert_eq!(c.status, 200);
    assert!(c.events().await.is_empty());

    post(
        s.addr,
        "/copilotkit/agent/echo/run",
        &body("t", "r1", json!([user("u1", "one")])),
    )
    .await
    .events()
    .await;
    // The client sends the whole conversation again with its next message.
    let again = json!([
        user("u1", "one"),
        { "id": "r1-reply", "role": "assistant", "content": "echo: one" },
        user("u2", "two"),
    ]);
    post(
        s.addr,
        "/copilotkit/agent/echo/run",
        &body("t", "r2", again),
    )
    .await
    .events()
    .await;

    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let events = c.events().await;
    assert_eq!(events.len(), 10, "{:?}", types(&events));
    assert_eq!(input_messages(&events[0]), ["u1"]);
    assert_eq!(
        input_messages(&events[5]),
        ["u2"],
        "u1 and the reply are not recorded twice"
    );
    verify_all(&events);
}

#[tokio::test]
async fn a_second_run_on_a_running_thread_is_refused_and_connect_attaches_live() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;

    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    for _ in 0..4 {
        run.next_event_within(5).await.expect("an event");
    }
    let mut busy = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r2", json!([])),
    )
    .await;
    assert_eq!(busy.status, 409);
    let b = busy.json().await;
    assert_eq!(b["error"], "Thread already running");
    assert!(b["message"].as_str().unwrap().contains("r1"), "{b}");

    // Connect while running: the live run from its first event, open until it ends.
    let mut live = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(live.next_event_within(5).await.expect("a live event"));
    }
    assert_eq!(
        types(&seen),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TOOL_CALL_START"
        ]
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(200), live.next_event())
            .await
            .is_err(),
        "connect stays open while the run is live"
    );
    gate.add_permits(1);
    seen.extend(live.events().await);
    assert_eq!(
        types(&seen[4..]),
        ["TOOL_CALL_END", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    );
    verify_all(&seen);
    assert_eq!(run.events().await.len(), 3);

    // Nothing runs now: connect replays and ends.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let replay = c.events().await;
    assert_eq!(
        replay.first().map(Event::event_type).map(|t| t.as_str()),
        Some("RUN_STARTED")
    );
    assert_eq!(
        replay.last().map(Event::event_type).map(|t| t.as_str()),
        Some("RUN_FINISHED")
    );
}

#[tokio::test]
async fn connect_with_last_seen_event_id_sends_only_what_was_missed() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped))).await;
    gate.add_permits(1);
    let r0 = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r0", json!([])),
    )
    .await
    .events()
    .await;
    assert_eq!(types(&r0).last(), Some(&"RUN_FINISHED"));
    // The gate's permit came back with r0's end: take it, so that r1 stays live.
    gate.acquire().await.unwrap().forget();
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    // The live run's frames carry `id: {runId}:{seq}`.
    let first = run.next_block().await.unwrap();
    assert!(first.starts_with("id: r1:1\n"), "{first:?}");
    for _ in 0..3 {
        run.next_event_within(5).await.unwrap();
    }
    let mut b = body("t", "x", json!([]));
    b["lastSeenEventId"] = json!("r1:2");
    let mut c = post(s.addr, "/copilotkit/agent/g/connect", &b).await;
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(c.next_event_within(5).await.unwrap());
    }
    assert_eq!(
        types(&got),
        ["TEXT_MESSAGE_CONTENT", "TOOL_CALL_START"],
        "no history, from seq 3"
    );
    gate.add_permits(1);
    got.extend(c.events().await);
    assert_eq!(types(&got).last(), Some(&"RUN_FINISHED"));
    // A cursor into a run that is not live gets the whole thread.
    let mut b = body("t", "x", json!([]));
    b["lastSeenEventId"] = json!("r0:3");
    let all = post(s.addr, "/copilotkit/agent/g/connect", &b)
        .await
        .events()
        .await;
    assert_eq!(
        all.iter()
            .filter(|e| matches!(e, Event::RunStarted(_)))
            .count(),
        2
    );
}

#[tokio::test]
async fn stop_cancels_the_agent_and_ends_the_run_stream_cleanly() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate, dropped.clone()))).await;
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    let mut events = Vec::new();
    for _ in 0..4 {
        events.push(run.next_event_within(5).await.expect("an event"));
    }

    let mut stop = post(s.addr, "/copilotkit/agent/g/stop/t", &json!({})).await;
    assert_eq!(stop.status, 200);
    assert_eq!(
        stop.json().await,
        json!({ "stopped": true, "interrupt": { "type": "RUN_ERROR", "message": "Run stopped by user", "code": "STOPPED" } })
    );
    events.extend(run.events().await);
    assert_eq!(
        types(&events[4..]),
        [
            "TOOL_CALL_END",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_RESULT",
            "RUN_FINISHED"
        ],
        "open constructs closed, the unanswered call answered, then the end"
    );
    match &events[6] {
        Event::ToolCallResult(r) => {
            assert_eq!(r.tool_call_id, "r1-c");
            assert!(r.content.to_text().contains("stopped"));
        }
        _ => unreachable!(),
    }
    match events.last() {
        // The request declared no protocol version (as CopilotKit's clients do), so
        // the `cancelled` outcome, which 0.0.59 refuses, has its stand-in.
        Some(Event::RunFinished(f)) => {
            assert_eq!((f.thread_id.as_str(), f.run_id.as_str()), ("t", "r1"));
            assert_eq!(f.outcome, None);
            assert_eq!(f.result, Some(json!({"cancelled": true})));
        }
        _ => unreachable!(),
    }
    verify_all(&events);
    common::wait_for(5, || dropped.load(Ordering::SeqCst)).await;

    let mut again = post(s.addr, "/copilotkit/agent/g/stop/t", &json!({})).await;
    assert_eq!(
        again.json().await,
        json!({ "stopped": false, "message": "No active run for thread 't'." })
    );
    // The thread takes a new run; its history has the stopped one.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    verify_all(&c.events().await);
}

#[tokio::test]
async fn a_client_that_goes_away_does_not_end_the_run() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([])),
    )
    .await;
    run.next_event_within(5).await;
    drop(run);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!dropped.load(Ordering::SeqCst), "the agent still runs");
    gate.add_permits(1);
    common::wait_for(5, || dropped.load(Ordering::SeqCst)).await;
    let mut c = post(
        s.addr,
        "/copilotkit/agent/g/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let events = c.events().await;
    assert_eq!(
        events.last().map(|e| e.event_type().as_str()),
        Some("RUN_FINISHED")
    );
}
