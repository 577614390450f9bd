//! A baseline for memory per open stream, not an AG-UI server: every POST is answered
//! with `agentic_chat`'s first two SSE frames (`RUN_STARTED`, `TEXT_MESSAGE_START`) and
//! then held open, as `agui serve --delay-ms 60000` holds a run between deltas. Two
//! stacks, to split what an open stream costs by layer:
//!
//! - `srv_held hyper PORT`: hyper's HTTP/1 connection alone (one task per connection,
//!   `hyper::server::conn::http1`, a `service_fn`), the least any hyper server can hold;
//! - `srv_held axum PORT`: the same handler as an axum route under `axum::serve`.
//!
//! `bench/load/stream_memory.sh` measures both next to `agui serve` and Node.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;

const HEAD: &str = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\",\"protocolVersion\":\"1.1\"}\n\ndata: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"r-reply\",\"role\":\"assistant\"}\n\n";

/// Two frames, then a stream that stays open for an hour.
fn held() -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    futures_util::stream::once(async { Ok(Bytes::from_static(HEAD.as_bytes())) }).chain(
        futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(Bytes::new())
        }),
    )
}

async fn hyper_server(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                // Read the request body, as a server must before it answers a run.
                let _ = req.into_body().collect().await;
                let body = StreamBody::new(held().map(|b| b.map(Frame::data)));
                Ok::<_, Infallible>(
                    hyper::Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(body)
                        .unwrap_or_else(|_| unreachable!()),
                )
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn axum_server(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let app = axum::Router::new().route(
        "/{*path}",
        axum::routing::post(|_body: Bytes| async {
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from_stream(held()))
                .unwrap_or_default()
        }),
    );
    axum::serve(listener, app).await
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "hyper".into());
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening {}", listener.local_addr()?.port());
    match mode.as_str() {
        "axum" => axum_server(listener).await,
        _ => hyper_server(listener).await,
    }
}
