//! What the inspector's relay adds to each event's delivery: one upstream sends an
//! event every 2 ms, noting when; the same stream is read once directly and once
//! through the relay and the page's feed, and each event's delay (received - sent) is
//! compared, in one process and one run.
//!
//! ```sh
//! cargo run --release -p agui-sdk-inspect --example relay_latency [EVENTS]
//! ```
//!
//! A measurement kept in the repository, not in the published package. In a crate of
//! your own it needs `agui-sdk-inspect`, `agui-sdk-core`, `agui-sdk-server`, `axum`,
//! `futures-util`, `reqwest`, `serde_json` and `tokio`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agui_sdk_core::encoding::SseDecoder;
use agui_sdk_inspect::{Inspector, InspectorConfig};
use axum::body::Body;
use axum::routing::post;
use futures_util::StreamExt;

type Sent = Arc<Mutex<Vec<Instant>>>;

async fn upstream(sent: Sent, n: usize) -> String {
    let router = axum::Router::new().route(
        "/agent",
        post(move || {
            let sent = sent.clone();
            async move {
                sent.lock().unwrap().clear();
                let stream = futures_util::stream::unfold(0usize, move |i| {
                    let sent = sent.clone();
                    async move {
                        if i > n + 1 {
                            return None;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        let json = if i == 0 {
                            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#.to_owned()
                        } else if i == n + 1 {
                            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#.to_owned()
                        } else {
                            format!(r#"{{"type":"CUSTOM","name":"tick","value":{i}}}"#)
                        };
                        sent.lock().unwrap().push(Instant::now());
                        let frame = format!("data: {json}\n\n");
                        Some((Ok::<_, std::io::Error>(frame), i + 1))
                    }
                });
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from_stream(stream))
                    .unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}/agent")
}

fn delays(sent: &Sent, received: &[Instant]) -> Vec<f64> {
    let sent = sent.lock().unwrap();
    let mut d: Vec<f64> = sent
        .iter()
        .zip(received)
        .map(|(s, r)| r.duration_since(*s).as_secs_f64() * 1000.0)
        .collect();
    d.sort_by(f64::total_cmp);
    d
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let sent: Sent = Arc::default();
    let url = upstream(sent.clone(), n).await;
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let input = serde_json::json!({"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"state":{},"forwardedProps":{}});

    // Directly.
    let mut received = Vec::new();
    let mut decoder = SseDecoder::new();
    let mut body = client
        .post(&url)
        .json(&input)
        .send()
        .await
        .unwrap()
        .bytes_stream();
    while let Some(chunk) = body.next().await {
        decoder.push(&chunk.unwrap());
        while let Some(e) = decoder.next() {
            e.unwrap();
            received.push(Instant::now());
        }
    }
    let direct = delays(&sent, &received);

    // Through the relay and the page's feed.
    let inspector = Inspector::new(InspectorConfig::default().token("t"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = inspector.router();
    // As `agui inspect` serves it (TCP_NODELAY on every accepted socket).
    let shutdown = agui_sdk_server::Shutdown::new();
    tokio::spawn(async move {
        agui_sdk_server::serve(listener, router, shutdown)
            .await
            .unwrap()
    });
    let started: serde_json::Value = client
        .post(format!("http://{addr}/api/runs"))
        .header("x-agui-token", "t")
        .json(&serde_json::json!({"url": url, "input": input}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = started["id"].as_str().unwrap();
    let mut received = Vec::new();
    let mut pending = Vec::new();
    let mut feed = client
        .get(format!("http://{addr}/api/runs/{id}/feed"))
        .header("x-agui-token", "t")
        .send()
        .await
        .unwrap()
        .bytes_stream();
    while let Some(chunk) = feed.next().await {
        let at = Instant::now();
        pending.extend_from_slice(&chunk.unwrap());
        while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
            if v["kind"] == "events" {
                for _ in v["items"].as_array().unwrap() {
                    received.push(at);
                }
            }
        }
    }
    let relayed = delays(&sent, &received);
    assert_eq!(direct.len(), n + 2);
    assert_eq!(relayed.len(), n + 2);
    println!(
        "{} events, one each 2 ms; delay from sent to received, ms:",
        n + 2
    );
    println!("{:<22} {:>8} {:>8} {:>8}", "", "p50", "p90", "p99");
    for (name, d) in [("direct", &direct), ("relay + page feed", &relayed)] {
        println!(
            "{name:<22} {:>8.3} {:>8.3} {:>8.3}",
            pct(d, 0.5),
            pct(d, 0.9),
            pct(d, 0.99)
        );
    }
    println!(
        "added by the relay (p50): {:.3} ms",
        pct(&relayed, 0.5) - pct(&direct, 0.5)
    );
}
