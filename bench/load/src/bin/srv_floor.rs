//! The floor of any hyper server, for `keepalive.py`: not an AG-UI server. Every POST
//! has its body read, then is answered with the same pre-encoded bytes (a reply of
//! `agui serve` captured by the driver), with the headers `agui serve` sends:
//!
//! - `srv_floor PORT FILE whole`: the reply as one body chunk;
//! - `srv_floor PORT FILE frames`: the reply as one body chunk per SSE frame, as a
//!   streaming server hands them to hyper;
//! - a fourth argument `timed`: hyper's header-read timeout on (10 s, on Tokio's
//!   timer), as `agui serve` has it against connections that send their request head
//!   slowly, which arms a timer for every request.
//!
//! Hyper's HTTP/1 connection is driven directly (one task per connection), on Tokio's
//! multi-threaded runtime, as `agui serve` runs: no router, no agent, no encoding.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let file = args.next().expect("usage: srv_floor PORT FILE whole|frames");
    let frames = args.next().as_deref() == Some("frames");
    let timed = args.next().as_deref() == Some("timed");
    let body = std::fs::read(&file)?;
    let chunks: Arc<Vec<Bytes>> = Arc::new(if frames {
        body.split_inclusive(|b| *b == b'\n')
            .fold(Vec::<Vec<u8>>::new(), |mut acc, line| {
                // A frame ends at its blank line.
                match acc.last_mut() {
                    Some(f) if !f.ends_with(b"\n\n") => f.extend_from_slice(line),
                    _ => acc.push(line.to_vec()),
                }
                acc
            })
            .into_iter()
            .map(Bytes::from)
            .collect()
    } else {
        vec![Bytes::from(body)]
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening {}", listener.local_addr()?.port());
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let chunks = chunks.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let chunks = chunks.clone();
                async move {
                    let _ = req.into_body().collect().await;
                    let frames = (0..chunks.len()).map(move |i| Ok::<_, Infallible>(Frame::data(chunks[i].clone())));
                    let body = StreamBody::new(futures_util::stream::iter(frames));
                    Ok::<_, Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "text/event-stream")
                            .header("cache-control", "no-cache")
                            .header("x-accel-buffering", "no")
                            .body(body)
                            .unwrap_or_else(|_| unreachable!()),
                    )
                }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            if timed {
                builder
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(std::time::Duration::from_secs(10));
            }
            let _ = builder
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}
