//! Delivery delay: an event an agent emits reaches the client at once, on a fresh and
//! on a reused keep-alive connection; it never waits for the next event or for the
//! client's ACK (Nagle's algorithm with delayed ACKs holds a small write ~40 ms).

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agui_sdk_core::Event;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RUNS: usize = 10;
const EVENTS: usize = 8;
const GAP: Duration = Duration::from_millis(25);

/// The client ACKs as lazily as the kernel allows (Linux turns quick ACKs back on by
/// itself, so after every read): a server that holds small writes until their ACK is
/// then seen every time, not only when the timing happens to be unlucky.
fn delay_acks(sock: &tokio::net::TcpStream) {
    #[cfg(target_os = "linux")]
    let _ = sock.set_quickack(false);
    #[cfg(not(target_os = "linux"))]
    let _ = sock;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_without_waiting_for_the_next_or_an_ack() {
    let emitted: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let e = emitted.clone();
    let agent = agui_sdk_server::agent_fn(move |_input, _ctx, tx| {
        let e = e.clone();
        async move {
            for i in 0..EVENTS {
                // Pairs: the second small write goes out while the first is not yet
                // acknowledged, which is where Nagle's algorithm holds data.
                tokio::time::sleep(if i % 2 == 0 {
                    GAP
                } else {
                    Duration::from_millis(2)
                })
                .await;
                e.lock().unwrap().push(Instant::now());
                tx.emit(Event::custom("tick", serde_json::json!(i))).await?;
            }
            Ok(())
        }
    });
    let shutdown = agui_sdk_server::Shutdown::new();
    let router = agui_sdk_server::AgentRouter::new()
        .agent("ticks", agent)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = common::start(router, shutdown).await;

    // One keep-alive connection, several runs on it, read as the bytes come.
    let mut sock = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    delay_acks(&sock);
    let mut delays = Vec::new();
    for run in 0..RUNS {
        emitted.lock().unwrap().clear();
        let body = common::input("t", &format!("r{run}"), "go").to_string();
        let head = format!(
            "POST /ticks HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(head.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let mut seen = 0;
        let mut chunk = [0u8; 8192];
        loop {
            let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk))
                .await
                .expect("bytes in time")
                .unwrap();
            assert!(n > 0, "the connection stays open");
            let at = Instant::now();
            delay_acks(&sock);
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf);
            let ticks = text.matches("\"name\":\"tick\"").count();
            for i in seen..ticks {
                let sent = emitted.lock().unwrap()[i];
                delays.push(at.duration_since(sent));
            }
            seen = ticks;
            // The chunked body's last chunk ends the response.
            if text.contains("RUN_FINISHED") && text.ends_with("0\r\n\r\n") {
                break;
            }
        }
        assert_eq!(seen, EVENTS);
    }
    delays.sort();
    let held: Vec<_> = delays
        .iter()
        .filter(|d| **d >= Duration::from_millis(30))
        .collect();
    // With Nagle on, the second event of each pair waits for the delayed ACK (~40 ms).
    // Allow one slow delivery for a loaded machine; every other event is immediate.
    assert!(
        held.len() <= 1,
        "{} of {} events were held 30 ms or more (median {:?}, max {:?})",
        held.len(),
        delays.len(),
        delays[delays.len() / 2],
        delays.last().unwrap()
    );
}
