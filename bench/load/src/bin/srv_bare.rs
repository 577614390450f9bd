//! A baseline, not an AG-UI server: bare axum answering POST /bench with the same bytes
//! pattern (SSE frames carrying the emit time), no agent runtime at all. It shows how
//! much of the per-stream memory is the HTTP stack's own.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::routing::post;
use futures_util::StreamExt;

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

async fn bench(body: Bytes) -> axum::response::Response {
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let n = v["forwardedProps"]["events"].as_u64().unwrap_or(10);
    let interval = Duration::from_millis(v["forwardedProps"]["intervalMs"].as_u64().unwrap_or(0));
    let s = futures_util::stream::unfold(0u64, move |i| async move {
        if i > n + 1 {
            return None;
        }
        if i > 0 && i <= n && !interval.is_zero() {
            tokio::time::sleep(interval).await;
        }
        let frame = if i == n + 1 {
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n".to_owned()
        } else {
            format!(
                "data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{}\"}}\n\n",
                now_us()
            )
        };
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(frame)), i + 1))
    });
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(s.boxed()))
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let app = axum::Router::new().route("/bench", post(bench));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening {}", listener.local_addr()?.port());
    axum::serve(listener, app).await
}
