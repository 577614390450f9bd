//! Streaming, cancellation and load, over real loopback HTTP: events flushed as they
//! exist, keep-alive, a client that leaves cancels the agent, graceful shutdown, the
//! concurrent-run limit, many streams at once.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::{Event, EventType};
use agui_sdk_server::{agent_fn, AgentRouter, Shutdown};
use common::{input, start, types, wait_for, Client};

use common::{demo_server, run_error, serve_one, DropFlag};

#[tokio::test]
async fn client_disconnect_cancels_the_agent() {
    disconnect_cancels(Some(Duration::from_millis(30))).await;
}
/// Without keep-alive writes (protobuf streams have none), the closed connection is
/// seen on the read side.
#[tokio::test]
async fn client_disconnect_cancels_a_silent_agent_without_keep_alive() {
    disconnect_cancels(None).await;
}
async fn disconnect_cancels(keep_alive: Option<Duration>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let spawned_saw_cancel = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicUsize::new(0));
    let (d, s, p) = (
        dropped.clone(),
        spawned_saw_cancel.clone(),
        progress.clone(),
    );
    let agent = agent_fn(move |_input, ctx, tx| {
        let (d, s, p) = (d.clone(), s.clone(), p.clone());
        async move {
            let _guard = DropFlag(d);
            // Work the agent spawned itself sees the cancellation signal.
            let token = ctx.token().clone();
            tokio::spawn(async move {
                token.cancelled().await;
                s.store(true, Ordering::SeqCst);
            });
            tx.emit(Event::step_started("long")).await?;
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                p.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("slow", agent)
        .keep_alive(keep_alive)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::post_json(srv.addr, "/slow", &input("t", "r", "x")).await;
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::RunStarted
    );
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::StepStarted
    );
    drop(c);
    wait_for(5, || dropped.load(Ordering::SeqCst)).await;
    wait_for(5, || spawned_saw_cancel.load(Ordering::SeqCst)).await;
    // The agent's loop stopped with it: its counter no longer moves.
    let at_stop = progress.load(Ordering::SeqCst);
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(progress.load(Ordering::SeqCst), at_stop);
}
#[tokio::test]
async fn events_reach_the_client_as_soon_as_they_exist() {
    let (go_tx, go_rx) = tokio::sync::mpsc::channel::<()>(1);
    let go_rx = Arc::new(tokio::sync::Mutex::new(go_rx));
    let agent = agent_fn(move |_input, _ctx, tx| {
        let go_rx = go_rx.clone();
        async move {
            tx.emit(Event::text_message_start("m")).await?;
            // Only continue once the client has seen the first event.
            go_rx.lock().await.recv().await;
            tx.emit(Event::text_message_end("m")).await?;
            Ok(())
        }
    });
    let srv = serve_one("s", agent).await;
    let mut c = Client::post_json(srv.addr, "/s", &input("t", "r", "x")).await;
    assert_eq!(c.header("content-type"), Some("text/event-stream"));
    assert_eq!(c.header("cache-control"), Some("no-cache"));
    assert_eq!(c.header("x-accel-buffering"), Some("no"));
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::RunStarted
    );
    assert_eq!(
        c.next_event_within(5).await.unwrap().event_type(),
        EventType::TextMessageStart
    );
    go_tx.send(()).await.unwrap();
    assert_eq!(
        types(&c.events().await),
        ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    );
}
#[tokio::test]
async fn keep_alive_comments_flow_while_the_agent_is_quiet() {
    // The agent stays quiet until the client has seen three keep-alive comments.
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let agent = agent_fn(move |_input, _ctx, tx| {
        let g = g.clone();
        async move {
            tx.emit(Event::step_started("wait")).await?;
            g.notified().await;
            tx.emit(Event::step_finished("wait")).await?;
            Ok(())
        }
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("q", agent)
        .keep_alive(Some(Duration::from_millis(50)))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::post_json(srv.addr, "/q", &input("t", "r", "x")).await;
    let mut comments = 0;
    let mut events = Vec::new();
    while let Some(b) = c.next_block().await {
        if b == ": keep-alive" {
            comments += 1;
            if comments == 3 {
                gate.notify_one();
            }
        } else {
            events.push(Event::from_json_str(b.strip_prefix("data: ").unwrap()).unwrap());
        }
    }
    assert!(comments >= 3, "only {comments} keep-alive comments");
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );

    // Turned off: none.
    let agent = agent_fn(|_input, _ctx, tx| async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        tx.emit(Event::step_started("x")).await?;
        tx.emit(Event::step_finished("x")).await?;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("q", agent)
        .keep_alive(None)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::post_json(srv.addr, "/q", &input("t", "r", "x")).await;
    let _ = c.events().await;
    assert!(!String::from_utf8_lossy(&c.all).contains("keep-alive"));
}
#[tokio::test]
async fn many_concurrent_streams_all_complete() {
    let srv = demo_server().await;
    let mut tasks = Vec::new();
    for i in 0..200 {
        let addr = srv.addr;
        tasks.push(tokio::spawn(async move {
            let name = agui_sdk_demo::NAMES[i % 9];
            let mut c = Client::post_json(
                addr,
                &format!("/{name}"),
                &input("t", &format!("r{i}"), "hi"),
            )
            .await;
            assert_eq!(c.status, 200);
            let ev = c.events().await;
            assert_eq!(
                ev.first().map(Event::event_type),
                Some(EventType::RunStarted)
            );
            assert_eq!(
                ev.last().map(Event::event_type),
                Some(EventType::RunFinished),
                "{name}"
            );
            ev.len()
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap() > 2);
    }
}
#[tokio::test]
async fn graceful_shutdown_lets_runs_finish_then_ends_the_rest() {
    let agent_quick = agent_fn(|_input, ctx, tx| async move {
        tx.emit(Event::step_started("s")).await?;
        // Finishes soon after being told about shutdown.
        ctx.cancelled().await;
        tx.emit(Event::step_finished("s")).await?;
        Ok(())
    });
    let agent_stuck = agent_fn(|_input, _ctx, tx| async move {
        tx.emit(Event::step_started("s")).await?;
        std::future::pending::<()>().await;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("quick", agent_quick)
        .agent("stuck", agent_stuck)
        .shutdown_grace(Duration::from_millis(300))
        .shutdown(shutdown.clone())
        .into_router();
    let mut srv = start(router.clone(), shutdown.clone()).await;
    let mut quick = Client::post_json(srv.addr, "/quick", &input("t", "r1", "x")).await;
    let mut stuck = Client::post_json(srv.addr, "/stuck", &input("t", "r2", "x")).await;
    for c in [&mut quick, &mut stuck] {
        assert_eq!(
            c.next_event_within(5).await.unwrap().event_type(),
            EventType::RunStarted
        );
        assert_eq!(
            c.next_event_within(5).await.unwrap().event_type(),
            EventType::StepStarted
        );
    }
    let t0 = std::time::Instant::now();
    shutdown.trigger();
    assert_eq!(
        types(&quick.events().await),
        ["STEP_FINISHED", "RUN_FINISHED"]
    );
    let rest = stuck.events().await;
    assert_eq!(types(&rest), ["RUN_ERROR"]);
    assert_eq!(run_error(&rest[0]).1, Some("shutdown"));
    assert!(t0.elapsed() >= Duration::from_millis(250));
    // The server stops once the streams are closed.
    tokio::time::timeout(Duration::from_secs(5), srv.take_task())
        .await
        .expect("serve returns after shutdown")
        .unwrap()
        .unwrap();

    // A request reaching the router after shutdown started is refused with 503.
    use tower::ServiceExt;
    let req = axum::http::Request::post("/quick")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            serde_json::to_vec(&input("t", "r3", "x")).unwrap(),
        ))
        .unwrap();
    let res = router.oneshot(req).await.unwrap();
    assert_eq!(res.status(), 503);
}
#[tokio::test]
async fn concurrent_runs_beyond_the_limit_get_503() {
    // The first run holds its slot until the test lets it go on.
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let agent = agent_fn(move |input, _ctx, tx| {
        let g = g.clone();
        async move {
            tx.emit(Event::step_started("s")).await?;
            if input.run_id == "r1" {
                g.notified().await;
            }
            tx.emit(Event::step_finished("s")).await?;
            Ok(())
        }
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("one", agent)
        .max_runs(Some(1))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut first = Client::post_json(srv.addr, "/one", &input("t", "r1", "x")).await;
    assert_eq!(
        first.next_event_within(5).await.unwrap().event_type(),
        EventType::RunStarted
    );
    let mut second = Client::post_json(srv.addr, "/one", &input("t", "r2", "x")).await;
    assert_eq!(second.status, 503);
    assert_eq!(second.json().await["error"]["code"], "too_many_runs");
    gate.notify_one();
    assert_eq!(
        types(&first.events().await),
        ["STEP_STARTED", "STEP_FINISHED", "RUN_FINISHED"]
    );
    drop(first);
    // The slot is free again once the first run's stream is gone (released as the
    // response body is dropped: retried until it is).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut third = loop {
        let c = Client::post_json(srv.addr, "/one", &input("t", "r3", "x")).await;
        if c.status == 200 || tokio::time::Instant::now() > deadline {
            break c;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(third.status, 200);
    assert_eq!(third.events().await.len(), 4);
}
