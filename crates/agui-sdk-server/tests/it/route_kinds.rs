//! One engine under every route kind: a panicking agent, a shutdown with an open run and
//! a client that goes away, each driven through a plain run, a resumable run and a
//! CopilotKit run, over real loopback HTTP. The table says what each kind promises.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::Event;
use agui_sdk_server::copilotkit::CopilotRuntime;
use agui_sdk_server::runs::Resumable;
use agui_sdk_server::{agent_fn, Agent, AgentRouter, ServerConfig, Shutdown};
use common::{run_error, start, types, wait_for, Client, TestServer};
use serde_json::json;

const TOKEN: &str = "route-kinds-token-0123456789";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Resumable,
    CopilotKit,
}

const KINDS: [Kind; 3] = [Kind::Plain, Kind::Resumable, Kind::CopilotKit];

/// Serves `agent` as `a` on the agent routes (resumable on request) and through the
/// CopilotKit runtime, with a short grace period.
async fn serve(agent: impl Agent) -> TestServer {
    let agent: Arc<dyn Agent> = Arc::new(agent);
    let shutdown = Shutdown::new();
    let mut config = ServerConfig::default();
    config.shutdown_grace = Duration::from_millis(300);
    config.verify = true;
    let agents = AgentRouter::new()
        .shared_agent("a", agent.clone())
        .config(config.clone())
        .shutdown(shutdown.clone())
        .resumable(Resumable::default());
    let runtime = CopilotRuntime::new()
        .shared_agent("a", agent)
        .config(config)
        .shutdown(shutdown.clone());
    let router = agents
        .into_router()
        .nest("/copilotkit", runtime.into_router());
    start(router, shutdown).await
}

async fn start_run(srv: &TestServer, kind: Kind, run: &str) -> Client {
    let body = serde_json::to_vec(&json!({
        "threadId": format!("t-{run}"),
        "runId": run,
        "messages": [{ "id": format!("{run}-u"), "role": "user", "content": "hi" }],
    }))
    .unwrap();
    let json = ("Content-Type", "application/json");
    let sse = ("Accept", "text/event-stream");
    let (path, headers) = match kind {
        Kind::Plain => ("/a".to_owned(), vec![json, sse]),
        Kind::Resumable => (
            "/a".to_owned(),
            vec![
                json,
                sse,
                ("AGUI-Resumable", "1"),
                ("AGUI-Resume-Token", TOKEN),
            ],
        ),
        Kind::CopilotKit => ("/copilotkit/agent/a/run".to_owned(), vec![json]),
    };
    let c = Client::request(srv.addr, "POST", &path, &headers, &body).await;
    assert_eq!(c.status, 200, "{kind:?}");
    c
}

#[tokio::test]
async fn a_panic_ends_every_kind_of_run_with_the_same_run_error() {
    let srv = serve(agent_fn(|_input, _ctx, tx| async move {
        tx.emit(Event::text_message_start("m")).await?;
        panic!("boom");
    }))
    .await;
    for (i, kind) in KINDS.into_iter().enumerate() {
        let mut c = start_run(&srv, kind, &format!("panic{i}")).await;
        let ev = c.events().await;
        assert_eq!(
            types(&ev),
            ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"],
            "{kind:?}"
        );
        assert_eq!(
            run_error(&ev[2]),
            ("agent panicked", Some("agent_panic")),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_shutdown_ends_every_kind_of_open_run_after_the_grace_period() {
    let cancelled = Arc::new(AtomicUsize::new(0));
    let seen = cancelled.clone();
    let srv = serve(agent_fn(move |_input, ctx, tx| {
        let seen = seen.clone();
        async move {
            tx.emit(Event::text_message_start("m")).await?;
            // Told at once, but keeps going: the grace period ends it.
            ctx.cancelled().await;
            seen.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
            Ok(())
        }
    }))
    .await;
    let mut clients = Vec::new();
    for (i, kind) in KINDS.into_iter().enumerate() {
        let mut c = start_run(&srv, kind, &format!("down{i}")).await;
        let first: Vec<_> = [c.next_event().await, c.next_event().await]
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(
            types(&first),
            ["RUN_STARTED", "TEXT_MESSAGE_START"],
            "{kind:?}"
        );
        clients.push((kind, c));
    }
    srv.shutdown.trigger();
    for (kind, mut c) in clients {
        let rest = c.events().await;
        let last = rest
            .last()
            .unwrap_or_else(|| panic!("{kind:?}: no terminal event"));
        assert_eq!(
            run_error(last),
            ("the server is shutting down", Some("shutdown")),
            "{kind:?}"
        );
    }
    wait_for(5, || cancelled.load(Ordering::SeqCst) == 3).await;
}

#[tokio::test]
async fn a_client_going_away_cancels_a_plain_run_only() {
    // Each run records whether its agent was dropped and whether its context said the
    // client went away.
    let dropped: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
    let disconnected: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
    let finished: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
    let (d, g, f) = (dropped.clone(), disconnected.clone(), finished.clone());
    let srv = serve(agent_fn(move |input, ctx, tx| {
        let slot: usize = input.run_id[4..].parse().unwrap();
        let (d, g, f) = (d.clone(), g.clone(), f.clone());
        async move {
            struct OnDrop(Arc<[AtomicBool; 3]>, usize, RunCtx);
            type RunCtx = (agui_sdk_server::RunContext, Arc<[AtomicBool; 3]>);
            impl Drop for OnDrop {
                fn drop(&mut self) {
                    self.0[self.1].store(true, Ordering::SeqCst);
                    let (ctx, flags) = &self.2;
                    flags[self.1].store(ctx.is_disconnected(), Ordering::SeqCst);
                }
            }
            let _guard = OnDrop(d, slot, (ctx.clone(), g));
            tx.emit(Event::text_message_start("m")).await?;
            tokio::time::sleep(Duration::from_millis(600)).await;
            tx.emit(Event::text_message_end("m")).await?;
            f[slot].store(true, Ordering::SeqCst);
            Ok(())
        }
    }))
    .await;
    for (i, kind) in KINDS.into_iter().enumerate() {
        let mut c = start_run(&srv, kind, &format!("gone{i}")).await;
        assert!(c.next_event().await.is_some(), "{kind:?}");
        drop(c);
    }
    // A plain run is cancelled with its client: the agent is dropped, told why.
    wait_for(5, || dropped[0].load(Ordering::SeqCst)).await;
    assert!(
        disconnected[0].load(Ordering::SeqCst),
        "plain: is_disconnected"
    );
    // A resumable run and a CopilotKit run belong to the server: they finish.
    wait_for(5, || {
        finished[1].load(Ordering::SeqCst) && finished[2].load(Ordering::SeqCst)
    })
    .await;
    assert!(
        !finished[0].load(Ordering::SeqCst),
        "plain: stopped, not finished"
    );
    wait_for(5, || {
        dropped[1].load(Ordering::SeqCst) && dropped[2].load(Ordering::SeqCst)
    })
    .await;
    assert!(!disconnected[1].load(Ordering::SeqCst), "resumable");
    assert!(!disconnected[2].load(Ordering::SeqCst), "copilotkit");
}
