//! The server runtime without sockets: one run of 1,000 text deltas through the axum
//! router (request parsing, lifecycle guard, optional verification, encoding, body),
//! SSE and protobuf, verification on and off.
//!
//! `cargo bench -p agui-sdk-server --bench runtime`

#![allow(missing_docs)] // criterion_group! generates undocumented items.

use std::time::Duration;

use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::{Agent, AgentError, AgentRouter, AgentStream, RunContext};
use axum::body::Body;
use axum::http::Request;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures_util::StreamExt;
use tower::ServiceExt;

const EVENTS: usize = 1_000;

struct Deltas;

impl Agent for Deltas {
    fn run(&self, input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        let id = format!("{}-m", input.run_id);
        let mut events = Vec::with_capacity(EVENTS + 2);
        events.push(Ok::<_, AgentError>(Event::text_message_start(&id)));
        for i in 0..EVENTS {
            events.push(Ok(Event::text_message_content(&id, format!("piece {i} "))));
        }
        events.push(Ok(Event::text_message_end(&id)));
        futures_util::stream::iter(events).boxed()
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body =
        br#"{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}]}"#;
    let mut group = c.benchmark_group("run_1000_deltas");
    group.throughput(Throughput::Elements(EVENTS as u64 + 4));
    group.measurement_time(Duration::from_secs(5));
    for (name, accept, verify) in [
        ("sse", "text/event-stream", false),
        ("sse_verified", "text/event-stream", true),
        ("proto", "application/vnd.ag-ui.event+proto", false),
    ] {
        let app = AgentRouter::new()
            .agent("d", Deltas)
            .verify(verify)
            .into_router();
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let req = Request::post("/d")
                        .header("content-type", "application/json")
                        .header("accept", accept)
                        .body(Body::from(&body[..]))
                        .unwrap();
                    let res = app.clone().oneshot(req).await.unwrap();
                    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
                        .await
                        .unwrap();
                    assert!(bytes.len() > EVENTS * 10);
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
