//! The run lifecycle the runtime guarantees, in process over real loopback HTTP:
//! RUN_STARTED and one terminal event, errors and panics as RUN_ERROR, verification,
//! the agent dropped at its terminal event, the declared protocol version.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use agui_sdk_core::{AgentCapabilities, Event, RunAgentInput};
use agui_sdk_server::{agent_fn, Agent, AgentRouter, AgentStream, RunContext, Shutdown};
use common::{input, start, types, wait_for, Client};
use futures_util::StreamExt;
use serde_json::json;

use common::{run_error, serve_one, DropFlag, Scripted};

#[tokio::test]
async fn runtime_adds_run_started_and_run_finished() {
    let srv = serve_one(
        "a",
        Scripted(vec![
            Ok(Event::text_message_start("m")),
            Ok(Event::text_message_content("m", "hi")),
            Ok(Event::text_message_end("m")),
        ]),
    )
    .await;
    let mut c = Client::post_json(srv.addr, "/a", &input("t1", "r1", "x")).await;
    assert_eq!(c.status, 200);
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
    match (&ev[0], &ev[4]) {
        (Event::RunStarted(s), Event::RunFinished(f)) => {
            assert_eq!((s.thread_id.as_str(), s.run_id.as_str()), ("t1", "r1"));
            assert_eq!(s.protocol_version.as_deref(), Some("1.1"));
            assert_eq!((f.thread_id.as_str(), f.run_id.as_str()), ("t1", "r1"));
        }
        _ => unreachable!(),
    }
}
#[tokio::test]
async fn added_run_started_declares_the_clients_version_when_older() {
    let srv = serve_one("a", Scripted(vec![Ok(Event::run_finished("t1", "r1"))])).await;
    for (asked, declared) in [
        ("1.0", "1.0"),
        ("1.1", "1.1"),
        ("1.9", "1.1"),
        ("draft", "1.1"),
    ] {
        let mut body = input("t1", "r1", "x");
        body["protocolVersion"] = asked.into();
        let mut c = Client::post_json(srv.addr, "/a", &body).await;
        match &c.events().await[0] {
            Event::RunStarted(s) => {
                assert_eq!(s.protocol_version.as_deref(), Some(declared), "{asked}")
            }
            other => panic!("{other:?}"),
        }
    }
}
#[tokio::test]
async fn agents_own_lifecycle_events_are_kept_not_duplicated() {
    let mut started = agui_sdk_core::event::RunStarted::new("t1", "r1");
    started.parent_run_id = Some("p0".into());
    let mut fin = agui_sdk_core::event::RunFinished::new("t1", "r1");
    fin.result = Some(json!({"ok": true}));
    let srv = serve_one(
        "a",
        Scripted(vec![Ok(started.clone().into()), Ok(fin.clone().into())]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/a", &input("t1", "r1", "x"))
        .await
        .events()
        .await;
    assert_eq!(ev, vec![Event::from(started), Event::from(fin)]);
}
#[tokio::test]
async fn agent_error_becomes_run_error_with_only_the_public_message() {
    let srv = serve_one(
        "a",
        Scripted(vec![Ok(Event::step_started("s")), Err("quota exhausted")]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/a", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "STEP_STARTED", "RUN_ERROR"]);
    assert_eq!(run_error(&ev[2]), ("quota exhausted", Some("agent_error")));

    // An internal error (converted with `?`) is sanitized.
    let leaky = agent_fn(|_i, _c, _tx| async move {
        std::fs::read("/nonexistent/secret/path/key.pem")?;
        Ok(())
    });
    let srv = serve_one("b", leaky).await;
    let ev = Client::post_json(srv.addr, "/b", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
    let (msg, code) = run_error(&ev[1]);
    assert_eq!((msg, code), ("agent failed", Some("agent_error")));
    assert!(!ev[1].to_json_string().contains("secret"));
}
#[tokio::test]
async fn panicking_agent_yields_run_error_and_the_server_keeps_serving() {
    let calls = Arc::new(AtomicUsize::new(0));
    let calls2 = calls.clone();
    let agent = agent_fn(move |input, _ctx, tx| {
        let n = calls2.fetch_add(1, Ordering::SeqCst);
        async move {
            tx.emit(Event::text_message_start("m")).await?;
            if n == 0 {
                panic!("boom: internal detail");
            }
            tx.emit(Event::text_message_end("m")).await?;
            let _ = input;
            Ok(())
        }
    });
    let srv = serve_one("p", agent).await;
    let ev = Client::post_json(srv.addr, "/p", &input("t", "r1", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    );
    assert_eq!(run_error(&ev[2]), ("agent panicked", Some("agent_panic")));
    assert!(!ev[2].to_json_string().contains("boom"));

    let ev = Client::post_json(srv.addr, "/p", &input("t", "r2", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
}
/// Panics while starting the run (in `Agent::run` itself, not in the stream).
struct PanicsOnStart;
impl Agent for PanicsOnStart {
    fn run(&self, _input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        panic!("cannot even start")
    }
}
#[tokio::test]
async fn panic_while_starting_is_a_run_error_too() {
    let srv = serve_one("p", PanicsOnStart).await;
    for run in ["r1", "r2"] {
        let ev = Client::post_json(srv.addr, "/p", &input("t", run, "x"))
            .await
            .events()
            .await;
        assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
        assert_eq!(run_error(&ev[1]).1, Some("agent_panic"));
    }
}
#[tokio::test]
async fn protocol_violations_become_run_error_saying_what_was_wrong() {
    // Content for a message that was never started.
    let srv = serve_one(
        "v",
        Scripted(vec![
            Ok(Event::text_message_start("m1")),
            Ok(Event::text_message_content("m2", "x")),
            Ok(Event::text_message_end("m1")),
        ]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/v", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    );
    let (msg, code) = run_error(&ev[2]);
    assert_eq!(code, Some("protocol_violation"));
    assert!(
        msg.contains("TEXT_MESSAGE_CONTENT") && msg.contains("m2"),
        "{msg}"
    );

    // A stream that ends with a message still open.
    let srv = serve_one("o", Scripted(vec![Ok(Event::text_message_start("m1"))])).await;
    let ev = Client::post_json(srv.addr, "/o", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    );
    let (msg, code) = run_error(&ev[2]);
    assert_eq!(code, Some("protocol_violation"));
    assert!(msg.contains("m1"), "{msg}");

    // A second RUN_STARTED, and RUN_STARTED naming another run.
    let srv = serve_one(
        "d",
        Scripted(vec![
            Ok(Event::run_started("t", "r")),
            Ok(Event::run_started("t", "r")),
        ]),
    )
    .await;
    let ev = Client::post_json(srv.addr, "/d", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(run_error(&ev[1]).0.contains("second RUN_STARTED"));

    let srv = serve_one("w", Scripted(vec![Ok(Event::run_started("t", "other"))])).await;
    let ev = Client::post_json(srv.addr, "/w", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(run_error(&ev[1]).0.contains("other"));
}
#[tokio::test]
async fn verification_can_be_turned_off() {
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent(
            "v",
            Scripted(vec![Ok(Event::text_message_content("never-started", "x"))]),
        )
        .verify(false)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let ev = Client::post_json(srv.addr, "/v", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(
        types(&ev),
        ["RUN_STARTED", "TEXT_MESSAGE_CONTENT", "RUN_FINISHED"]
    );
}
#[tokio::test]
async fn the_agent_is_not_read_after_its_terminal_event() {
    let polled_after = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let (flag, d) = (polled_after.clone(), dropped.clone());
    let agent = agent_fn(move |input, _ctx, tx| {
        let (flag, d) = (flag.clone(), d.clone());
        async move {
            let _guard = DropFlag(d);
            tx.emit(Event::run_finished(&input.thread_id, &input.run_id))
                .await?;
            // Give the runtime every chance to read on.
            tokio::task::yield_now().await;
            flag.store(true, Ordering::SeqCst);
            tx.emit(Event::text_message_start("late")).await?;
            Ok(())
        }
    });
    let srv = serve_one("f", agent).await;
    let ev = Client::post_json(srv.addr, "/f", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_FINISHED"]);
    // The agent was dropped at its terminal event, before it could go on.
    wait_for(5, || dropped.load(Ordering::SeqCst)).await;
    assert!(!polled_after.load(Ordering::SeqCst));
}
/// An agent whose `capabilities` panics.
struct BadCaps;
impl Agent for BadCaps {
    fn run(&self, _input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        futures_util::stream::empty().boxed()
    }
    fn capabilities(&self) -> AgentCapabilities {
        panic!("capabilities bug")
    }
}
#[tokio::test]
async fn a_panicking_capabilities_still_gets_an_answer() {
    let srv = serve_one("bad", BadCaps).await;
    let mut c = Client::request(srv.addr, "GET", "/bad", &[], b"").await;
    assert_eq!(c.status, 200);
    let caps: AgentCapabilities = agui_sdk_core::wire::from_json_slice(&c.body().await).unwrap();
    assert_eq!(caps.identity.unwrap().name.as_deref(), Some("bad"));
    let ev = Client::post_json(srv.addr, "/bad", &input("t", "r", "x"))
        .await
        .events()
        .await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_FINISHED"]);
}

#[tokio::test]
async fn the_documented_state_pattern_works_for_a_client_that_sent_no_state() {
    // `StateTracker::from_input` + `update_state`, as the docs show it.
    let counter = agent_fn(|input, _ctx, tx| async move {
        let mut state = agui_sdk_server::StateTracker::from_input(&input);
        tx.update_state(&mut state, |s| s["count"] = json!(1))
            .await?;
        tx.update_state(&mut state, |s| s["count"] = json!(2))
            .await?;
        Ok(())
    });
    let srv = serve_one("a", counter).await;
    let body = input("t1", "r1", "x");
    assert!(body.get("state").is_none());
    let mut c = Client::post_json(srv.addr, "/a", &body).await;
    let ev = c.events().await;
    assert_eq!(
        types(&ev),
        [
            "RUN_STARTED",
            "STATE_SNAPSHOT",
            "STATE_DELTA",
            "RUN_FINISHED"
        ]
    );
    // A client reducing from no state ends with the agent's state.
    let request: RunAgentInput = serde_json::from_value(body.clone()).unwrap();
    let mut r = agui_sdk_core::semantics::Reducer::from_input(&request);
    for e in &ev {
        r.apply(e).unwrap();
    }
    assert_eq!(r.state(), Some(&json!({"count": 2})));
}

#[tokio::test]
async fn the_verifier_flags_a_delta_against_a_state_the_client_does_not_have() {
    let srv = serve_one(
        "a",
        Scripted(vec![Ok(Event::state_delta(vec![
            agui_sdk_core::PatchOperation::replace("/count", json!(1)),
        ]))]),
    )
    .await;
    let mut c = Client::post_json(srv.addr, "/a", &input("t1", "r1", "x")).await;
    let ev = c.events().await;
    assert_eq!(types(&ev), ["RUN_STARTED", "RUN_ERROR"]);
    let (message, code) = run_error(&ev[1]);
    assert_eq!(code, Some("protocol_violation"));
    assert!(message.contains("undefined state"), "{message}");

    // The same delta after the client sent a state is fine.
    let mut body = input("t1", "r2", "x");
    body["state"] = json!({"count": 0});
    let mut c = Client::post_json(srv.addr, "/a", &body).await;
    assert_eq!(
        types(&c.events().await),
        ["RUN_STARTED", "STATE_DELTA", "RUN_FINISHED"]
    );
}

#[tokio::test]
async fn the_listing_names_the_path_a_client_calls_under_a_nest() {
    let shutdown = Shutdown::new();
    let agents = AgentRouter::new()
        .agent("booking", Scripted(vec![]))
        .shutdown(shutdown.clone())
        .into_router();
    let router = axum::Router::new()
        .nest("/agents", agents.clone())
        .nest("/v1/deep/", agents.clone())
        .merge(agents);
    let srv = start(router, shutdown).await;
    for (listing, path) in [
        ("/agents/agents", "/agents/booking"),
        ("/v1/deep/agents", "/v1/deep/booking"),
        ("/agents", "/booking"),
    ] {
        let mut c = Client::request(srv.addr, "GET", listing, &[], b"").await;
        assert_eq!(c.status, 200, "{listing}");
        let list = c.json().await;
        assert_eq!(list["agents"][0]["path"], path, "{listing}");
        // The path listed is one the server answers.
        let c = Client::request(srv.addr, "GET", path, &[], b"").await;
        assert_eq!(c.status, 200, "{path}");
    }
}
