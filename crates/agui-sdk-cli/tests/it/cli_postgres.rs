//! `agui serve --store postgres://…`: replicas sharing one PostgreSQL. A run started on
//! replica A is resumed through replica B; A killed with SIGKILL mid-run has its run
//! closed by B's reaper with `RUN_ERROR` code `run_lost`. A database gone away mid-run
//! (a proxy cut) ends the run with `RUN_ERROR` once it is back, every committed event
//! kept; one that does not answer is a clear error at start-up.
//!
//! Uses the PostgreSQL at `AGUI_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`; the replicas keep their tables in its
//! schema `agui`, where the test's runs expire after the store's retention). Without it
//! the test prints `skipped …`, except under `AGUI_REQUIRE_POSTGRES=1`, where that is a
//! failure.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use agui_sdk_server::runs::RUN_LOST;
use common::{spawn_serve, Served};
use futures_util::StreamExt;
use serde_json::Value;

/// The test database's URL, or `None` (with the reason printed) when nothing answers
/// at its address.
fn postgres_url(test: &str) -> Option<String> {
    let url = std::env::var("AGUI_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let host_port = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.rsplit_once('@').map_or(Some(rest), |(_, h)| Some(h)))
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default()
        .to_owned();
    let reachable = std::net::ToSocketAddrs::to_socket_addrs(host_port.as_str())
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok());
    if reachable {
        return Some(url);
    }
    if std::env::var("AGUI_REQUIRE_POSTGRES").as_deref() == Ok("1") {
        panic!("{test}: AGUI_REQUIRE_POSTGRES=1 but PostgreSQL at {host_port} does not answer");
    }
    eprintln!("skipped {test}: PostgreSQL at {host_port} does not answer");
    None
}

fn replica(store: &str, id: &str) -> Served {
    spawn_serve(
        &[],
        &[
            "--delay-ms",
            "150",
            "--store",
            store,
            "--replica-id",
            id,
            "--lease-ms",
            "1000",
        ],
        &[],
    )
}

const TOKEN: &str = "postgres-test-owner-token-0123456789abcdef";

/// The frames of a response as they come: each event's seq (from its `id:`) and event.
struct Frames {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: Vec<u8>,
}

impl Frames {
    fn of(res: reqwest::Response) -> Self {
        Frames {
            body: res.bytes_stream().boxed(),
            buf: Vec::new(),
        }
    }

    async fn next(&mut self) -> Option<(u64, Value)> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block = String::from_utf8(self.buf[..pos].to_vec()).unwrap();
                self.buf.drain(..pos + 2);
                let mut seq = 0;
                let mut data = None;
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id: ") {
                        seq = id
                            .rsplit_once(':')
                            .and_then(|(_, s)| s.parse().ok())
                            .unwrap();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = Some(serde_json::from_str(d).unwrap());
                    }
                }
                if let Some(event) = data {
                    return Some((seq, event));
                }
                continue;
            }
            match tokio::time::timeout(Duration::from_secs(20), self.body.next())
                .await
                .expect("bytes in time")
            {
                Some(Ok(b)) => self.buf.extend_from_slice(&b),
                _ => return None,
            }
        }
    }
}

async fn start(base: &str, run: &str) -> Frames {
    let body = serde_json::json!({
        "threadId": format!("t-{run}"), "runId": run,
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": "hello there"}],
    });
    let res = reqwest::Client::new()
        .post(format!("{base}/agentic_chat"))
        .header("AGUI-Resumable", "1")
        .header("AGUI-Resume-Token", TOKEN)
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["agui-first-seq"], "1");
    Frames::of(res)
}

async fn attach(base: &str, run: &str, after: u64) -> Frames {
    let res = reqwest::Client::new()
        .get(format!("{base}/agentic_chat/runs/{run}/events"))
        .header("AGUI-Resume-Token", TOKEN)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", format!("{run}:{after}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["agui-first-seq"], (after + 1).to_string());
    Frames::of(res)
}

fn run_id(tag: &str) -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("pg-{tag}-{}-{n:x}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_postgres_hand_a_run_over_and_close_a_dead_ones_run_as_lost() {
    let Some(url) = postgres_url("replicas_on_postgres") else {
        return;
    };
    let a = replica(&url, "A");
    let b = replica(&url, "B");

    // Resume through B mid-run: exactly the events after the cursor, then the end.
    let run = run_id("handover");
    let mut on_a = start(&a.base, &run).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(on_a.next().await.expect("a frame from A"));
    }
    drop(on_a);
    let mut on_b = attach(&b.base, &run, 3).await;
    while let Some(f) = on_b.next().await {
        seen.push(f);
    }
    let seqs: Vec<u64> = seen.iter().map(|f| f.0).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(seen.last().unwrap().1["type"], "RUN_FINISHED");
    assert!(seen.len() > 8, "the whole reply");

    // Kill A mid-run: B's reaper closes the run after the lease with run_lost.
    let run = run_id("lost");
    let mut on_a = start(&a.base, &run).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(on_a.next().await.expect("a frame from A"));
    }
    let mut a = a;
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    let mut on_b = attach(&b.base, &run, seen.last().unwrap().0).await;
    while let Some(f) = on_b.next().await {
        seen.push(f);
    }
    let last = &seen.last().unwrap().1;
    assert_eq!(last["type"], "RUN_ERROR", "{last}");
    assert_eq!(last["code"], RUN_LOST);
    let seqs: Vec<u64> = seen.iter().map(|f| f.0).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "every committed event, then the end"
    );
    drop(b);
}

#[test]
fn a_postgres_that_does_not_answer_is_a_clear_error_at_start_up() {
    // Nothing listens on port 1.
    let out = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--store",
            "postgres://agui:pg-secret-42@127.0.0.1:1/agui",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("agui serve runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--store postgres://") && err.contains("PostgreSQL unreachable"),
        "{err}"
    );
    assert!(
        !err.contains("pg-secret-42"),
        "the password is not shown: {err}"
    );
}

/// A TCP proxy in front of the test database: cutting it is the database gone away for
/// the replica behind it (its connections closed, new ones refused), until it is
/// started again on the same port.
struct Proxy {
    port: u16,
    accept: tokio::task::JoinHandle<()>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(port: u16, target: std::net::SocketAddr) -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .unwrap();
        let listener = socket.listen(64).unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepted = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let conn = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                accepted.lock().unwrap().push(conn);
            }
        });
        Proxy {
            port,
            accept,
            conns,
        }
    }

    async fn cut(self) -> u16 {
        let Proxy {
            port,
            accept,
            conns,
        } = self;
        accept.abort();
        let _ = accept.await;
        for conn in conns.lock().unwrap().drain(..) {
            conn.abort();
        }
        port
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_database_goes_away_ends_with_run_error_and_keeps_what_was_committed() {
    let Some(url) = postgres_url("postgres_gone_mid_run") else {
        return;
    };
    // postgres://USER[:PASSWORD]@HOST:PORT/DB: the proxy stands in for HOST:PORT.
    let (head, rest) = url.rsplit_once('@').expect("a URL with a user");
    let (host_port, db) = rest.split_once('/').expect("a URL with a database");
    let target = std::net::ToSocketAddrs::to_socket_addrs(host_port)
        .unwrap()
        .next()
        .unwrap();
    let proxy = Proxy::start(0, target).await;
    let via = format!("{head}@127.0.0.1:{}/{db}", proxy.port);
    let a = replica(&via, "A");

    let run = run_id("gone");
    let mut on_a = start(&a.base, &run).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(on_a.next().await.expect("a frame from A"));
    }
    // The database goes away mid-run: the response ends (the viewer cannot read).
    let port = proxy.cut().await;
    while let Some(f) = on_a.next().await {
        seen.push(f);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // It comes back: a re-attach gets every committed event, then the run's end, an
    // error that says what happened (the store failed, or its producer was lost).
    let proxy = Proxy::start(port, target).await;
    let mut attached = None;
    for _ in 0..50 {
        let res = reqwest::Client::new()
            .get(format!("{}/agentic_chat/runs/{run}/events", a.base))
            .header("AGUI-Resume-Token", TOKEN)
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", format!("{run}:{}", seen.last().unwrap().0))
            .send()
            .await
            .unwrap();
        if res.status() == 200 {
            attached = Some(Frames::of(res));
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut on_a = attached.expect("a re-attach once the database is back");
    while let Some(f) = on_a.next().await {
        seen.push(f);
    }
    let last = &seen.last().unwrap().1;
    assert_eq!(last["type"], "RUN_ERROR", "{last}");
    assert!(
        last["code"] == "store_unavailable" || last["code"] == RUN_LOST,
        "{last}"
    );
    let seqs: Vec<u64> = seen.iter().map(|f| f.0).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "every committed event once, then the end"
    );
    drop(a);
    proxy.cut().await;
}
