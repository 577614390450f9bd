use std::time::Duration;

use agui_sdk_core::{Event, EventType};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::agent::{agent_fn, Agent};

fn driver(agent: impl Agent, shutdown: &CancellationToken, grace: Duration) -> RunDriver {
    let ctx = RunContext::new("a", "t", "r", shutdown);
    let stream = agent.run(input(), ctx.clone());
    let guard = LifecycleGuard::new("t", "r", Some(crate::lifecycle::default_verifier()));
    RunDriver::new(stream, guard, ctx, shutdown, grace)
}

fn input() -> agui_sdk_core::RunAgentInput {
    serde_json::from_str(r#"{"threadId":"t","runId":"r","messages":[]}"#).unwrap()
}

async fn run_to_end(d: &mut RunDriver) -> Vec<Event> {
    let mut out = Vec::new();
    while d.step(&mut out).await == Progress::More {}
    out
}

fn types(events: &[Event]) -> Vec<EventType> {
    events.iter().map(Event::event_type).collect()
}

fn code(e: &Event) -> Option<&str> {
    match e {
        Event::RunError(r) => r.code.as_deref(),
        _ => None,
    }
}

#[tokio::test]
async fn a_panic_ends_the_run_with_run_error_and_cancels_the_context() {
    let agent = agui_core_stream(|| panic!("boom"));
    let shutdown = CancellationToken::new();
    let mut d = driver(agent, &shutdown, Duration::from_secs(1));
    let out = run_to_end(&mut d).await;
    assert_eq!(types(&out), [EventType::RunStarted, EventType::RunError]);
    assert_eq!(code(&out[1]), Some("agent_panic"));
    assert!(d.context().is_cancelled());
    assert!(!d.context().is_disconnected());
}

/// An agent whose stream panics when first polled.
fn agui_core_stream(f: fn()) -> impl Agent {
    crate::agent::agent_stream(move |_input, _ctx| {
        futures_util::stream::poll_fn(move |_| {
            f();
            std::task::Poll::Ready(None::<Result<Event, AgentError>>)
        })
    })
}

#[tokio::test(start_paused = true)]
async fn after_the_grace_period_a_run_ends_with_shutdown() {
    let agent = agent_fn(|_i, ctx, tx| async move {
        tx.emit(Event::text_message_start("m")).await?;
        // Ignores the cancellation: the grace period ends it.
        let _ = ctx;
        std::future::pending::<()>().await;
        Ok(())
    });
    let shutdown = CancellationToken::new();
    let mut d = driver(agent, &shutdown, Duration::from_secs(5));
    let mut out = Vec::new();
    assert_eq!(d.step(&mut out).await, Progress::More);
    shutdown.cancel();
    assert!(d.context().is_shutting_down());
    let start = tokio::time::Instant::now();
    let rest = run_to_end(&mut d).await;
    assert!(start.elapsed() >= Duration::from_secs(5));
    assert_eq!(code(rest.last().unwrap()), Some("shutdown"));
    assert!(d.is_ended());
}

#[tokio::test(start_paused = true)]
async fn cancel_closes_what_is_open_and_answers_unanswered_calls() {
    let agent = agent_fn(|_i, _ctx, tx| async move {
        tx.emit(Event::tool_call_start("c1", "search")).await?;
        tx.emit(Event::tool_call_end("c1")).await?;
        tx.emit(Event::text_message_start("m")).await?;
        std::future::pending::<()>().await;
        Ok(())
    });
    let shutdown = CancellationToken::new();
    let mut d = driver(agent, &shutdown, Duration::from_secs(1));
    let mut out = Vec::new();
    // RUN_STARTED comes with the first event: three steps read the agent's three.
    for _ in 0..3 {
        assert_eq!(d.step(&mut out).await, Progress::More);
    }
    d.cancel(&mut out);
    assert_eq!(
        types(&out),
        [
            EventType::RunStarted,
            EventType::ToolCallStart,
            EventType::ToolCallEnd,
            EventType::TextMessageStart,
            EventType::TextMessageEnd,
            EventType::ToolCallResult,
            EventType::RunFinished,
        ]
    );
    let Event::ToolCallResult(r) = &out[5] else {
        unreachable!()
    };
    assert_eq!(r.tool_call_id, "c1");
    let agui_sdk_core::Content::Text(text) = &r.content else {
        unreachable!()
    };
    assert!(text.contains(STOP_MESSAGE), "{text}");
    assert!(d.is_ended());
    assert!(d.context().is_cancelled());
    // Nothing more comes.
    assert_eq!(d.try_step(&mut out), Some(Progress::Ended));
    assert_eq!(out.len(), 7);
}

#[tokio::test]
async fn abandoning_a_run_marks_it_disconnected_and_drops_the_agent() {
    let (tx_dropped, rx_dropped) = tokio::sync::oneshot::channel::<()>();
    let holder = std::sync::Mutex::new(Some(tx_dropped));
    let agent = agent_fn(move |_i, _ctx, tx| {
        let guard = holder.lock().unwrap().take();
        async move {
            let _guard = guard; // dropped with the agent's future
            tx.emit(Event::text_message_start("m")).await?;
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    let shutdown = CancellationToken::new();
    let mut d = driver(agent, &shutdown, Duration::from_secs(1));
    let mut out = Vec::new();
    assert_eq!(d.step(&mut out).await, Progress::More);
    d.abandon();
    assert!(d.context().is_disconnected());
    assert!(rx_dropped.await.is_err(), "the agent's future was dropped");
}

#[tokio::test]
async fn try_step_reads_only_what_is_ready() {
    let agent = crate::agent::agent_stream(|_i, _ctx| {
        futures_util::stream::iter([Ok(Event::text_message_start("m"))])
            .chain(futures_util::stream::pending())
    });
    let shutdown = CancellationToken::new();
    let mut d = driver(agent, &shutdown, Duration::from_secs(1));
    let mut out = Vec::new();
    assert_eq!(d.try_step(&mut out), Some(Progress::More));
    assert_eq!(d.try_step(&mut out), None);
    assert_eq!(
        types(&out),
        [EventType::RunStarted, EventType::TextMessageStart]
    );
}

#[test]
fn an_event_too_large_becomes_a_run_error_that_names_it() {
    let e = event_too_large(EventType::StateSnapshot, MAX_OUTPUT_EVENT + 1);
    assert_eq!(code(&e), Some("event_too_large"));
    let Event::RunError(r) = &e else {
        unreachable!()
    };
    assert!(r.message.contains("STATE_SNAPSHOT"), "{}", r.message);
    assert!(r.message.contains(&(MAX_OUTPUT_EVENT + 1).to_string()));
}
