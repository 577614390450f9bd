//! Time bounds of the server, written as the attacks they stop: connections that never
//! finish their request head (silent, one byte, drip-fed), idle keep-alive connections,
//! and shutdown with such connections open.

use crate::common;

use std::time::{Duration, Instant};

use agui_sdk_server::{ServeLimits, Shutdown};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn limits() -> ServeLimits {
    let mut l = ServeLimits::default();
    l.header_read_timeout = Duration::from_millis(300);
    l.drain = Duration::from_millis(500);
    l
}

async fn start() -> common::TestServer {
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::ZERO)
        .shutdown(shutdown.clone())
        .into_router();
    common::start_with(router, shutdown, limits()).await
}

/// Waits until the server closes `sock` (a read gives end of file or an error),
/// failing after `within`.
async fn closed_within(sock: &mut TcpStream, within: Duration) -> Duration {
    let t0 = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(within, sock.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return t0.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => panic!("the server kept the connection open for {within:?}"),
        }
    }
}

#[tokio::test]
async fn heads_that_never_complete_are_closed() {
    let srv = start().await;
    let addr = srv.addr;
    // Silent.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    // One byte.
    let mut one = TcpStream::connect(addr).await.unwrap();
    one.write_all(b"P").await.unwrap();
    // Drip-fed: a byte every 100 ms, never the end of the head.
    let mut drip = TcpStream::connect(addr).await.unwrap();
    let dripper = tokio::spawn(async move {
        for b in b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if drip.write_all(&[*b]).await.is_err() {
                return drip;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        drip
    });
    for (name, sock) in [("silent", &mut silent), ("one byte", &mut one)] {
        eprintln!("checking {name}");
        let took = closed_within(sock, Duration::from_secs(5)).await;
        assert!(took < Duration::from_secs(3), "{name}: {took:?}");
    }
    let drip = tokio::time::timeout(Duration::from_secs(5), dripper)
        .await
        .expect("the drip is cut")
        .unwrap();
    drop(drip);
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let srv = start().await;
    let addr = srv.addr;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(format!("GET /agents HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let took = closed_within(&mut sock, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn shutdown_ends_within_the_drain_time_whatever_the_connections_do() {
    let mut srv = start().await;
    let (addr, shutdown, task) = (srv.addr, srv.shutdown.clone(), srv.take_task());
    let mut partial = TcpStream::connect(addr).await.unwrap();
    partial
        .write_all(b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // A body that trickles in: the request is being read when shutdown starts.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t0 = Instant::now();
    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("serve returns within the drain time")
        .unwrap()
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    drop((partial, slow));
}

/// An agent emitting an event larger than a client accepts (10 MiB, the decoders'
/// limit) gets the run ended with `RUN_ERROR` code `event_too_large` instead, plain and
/// resumable.
#[tokio::test]
async fn an_event_too_large_for_a_client_ends_the_run_with_run_error() {
    use agui_sdk_core::Event;
    let huge = agui_sdk_server::agent_fn(|_input, _ctx, tx| async move {
        tx.emit(Event::text_message_start("m")).await?;
        tx.emit(Event::text_message_content("m", "x".repeat(11 << 20)))
            .await?;
        tx.emit(Event::text_message_end("m")).await?;
        Ok(())
    });
    let shutdown = Shutdown::new();
    let router = agui_sdk_server::AgentRouter::new()
        .agent("huge", huge)
        .resumable(agui_sdk_server::runs::Resumable::default())
        .shutdown(shutdown.clone())
        .into_router();
    let srv = common::start(router, shutdown).await;
    for headers in [
        vec![("Content-Type", "application/json")],
        vec![
            ("Content-Type", "application/json"),
            ("AGUI-Resumable", "1"),
            ("AGUI-Resume-Token", "tok_0123456789abcdefghijklmnopqrstuv"),
        ],
    ] {
        let body = serde_json::to_vec(&common::input("t", "r", "hi")).unwrap();
        let mut c = common::Client::request(srv.addr, "POST", "/huge", &headers, &body).await;
        let events = c.events().await;
        assert_eq!(
            common::types(&events),
            ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"],
            "{headers:?}"
        );
        let (message, code) = common::run_error(events.last().unwrap());
        assert_eq!(code, Some("event_too_large"));
        assert!(
            message.contains("TEXT_MESSAGE_CONTENT") && message.contains("10485760"),
            "{message}"
        );
    }
}
