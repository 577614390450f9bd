//! The benchmark agent on agui-sdk-server. `srv_agui PORT` (0: a free port); prints
//! `listening <port>`.
//!
//! POST /bench with `forwardedProps: {"events": N, "intervalMs": I}`: a text message
//! whose N content deltas carry their emit time (microseconds since the Unix epoch),
//! I milliseconds apart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::{Agent, AgentError, AgentRouter, AgentStream, RunContext, Shutdown};
use futures_util::StreamExt;

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

struct Bench;

impl Agent for Bench {
    fn run(&self, input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        let props = input.forwarded_props.unwrap_or_default();
        let n = props.get("events").and_then(|v| v.as_u64()).unwrap_or(10);
        let interval = Duration::from_millis(
            props
                .get("intervalMs")
                .and_then(|v| v.as_u64())
                .unwrap_or(0),
        );
        let id = format!("{}-m", input.run_id);
        let start =
            futures_util::stream::iter([Ok::<_, AgentError>(Event::text_message_start(&id))]);
        let idc = id.clone();
        let body = futures_util::stream::unfold(0u64, move |i| {
            let id = idc.clone();
            async move {
                if i >= n {
                    return None;
                }
                if i > 0 && !interval.is_zero() {
                    tokio::time::sleep(interval).await;
                }
                Some((
                    Ok(Event::text_message_content(id, now_us().to_string())),
                    i + 1,
                ))
            }
        });
        let end = futures_util::stream::iter([Ok(Event::text_message_end(&id))]);
        start.chain(body).chain(end).boxed()
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();
    let app = AgentRouter::new()
        .agent("bench", Bench)
        .verify(false)
        .shutdown(shutdown.clone())
        .into_router();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening {}", listener.local_addr()?.port());
    agui_sdk_server::serve(listener, app, shutdown).await
}
