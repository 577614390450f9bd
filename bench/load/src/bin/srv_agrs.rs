//! The benchmark agent on the `ag-ui` crate's axum integration (0.5.0-alpha.3). Same
//! protocol as `srv_agui`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ag_ui::axum::RouterExt;
use ag_ui::event::TextMessageRole;
use ag_ui::server::{Agent, Result, RunContext};
use ag_ui::{Event, RunOutcome};

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

struct Bench;

impl Agent for Bench {
    type State = serde_json::Value;

    async fn run(&self, ctx: &mut RunContext<serde_json::Value>) -> Result<RunOutcome> {
        let props = ctx.forwarded_props().clone();
        let n = props.get("events").and_then(|v| v.as_u64()).unwrap_or(10);
        let interval = Duration::from_millis(
            props
                .get("intervalMs")
                .and_then(|v| v.as_u64())
                .unwrap_or(0),
        );
        let id = format!("{}-m", ctx.run_id());
        ctx.emit(Event::text_message_start(
            id.clone(),
            TextMessageRole::Assistant,
        ))?;
        for i in 0..n {
            if i > 0 && !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            ctx.emit(Event::text_message_content(
                id.clone(),
                now_us().to_string(),
            ))?;
        }
        ctx.emit(Event::text_message_end(id))?;
        Ok(RunOutcome::Success)
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let app = axum::Router::new().route_agui("/bench", Bench);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening {}", listener.local_addr()?.port());
    axum::serve(listener, app).await
}
