//! Resumable runs end to end: a TCP proxy between the client and the server cuts the
//! connection at random byte offsets, many times during a 10,000-event run; the
//! client re-attaches by itself and ends with exactly the events, messages and state of
//! an uncut run: nothing lost, nothing twice.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_client::{ClientError, Conversation, HttpAgent, ResumeOptions, RunParams};
use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::types::PatchOperation;
use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::runs::Resumable;
use agui_sdk_server::{agent_fn, AgentError, AgentRouter, Emitter, RunContext, Shutdown};
use agui_sdk_testkit::rng::Rng;
use agui_sdk_testkit::server::{start, TestServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// 10,000 events: a state snapshot, a text message of 4,998 pieces, 4,998 state
/// deltas, and a custom event.
fn long_agent() -> agui_sdk_server::FnAgent {
    agent_fn(
        |_input: RunAgentInput, _ctx: RunContext, tx: Emitter| async move {
            tx.emit(Event::state_snapshot(json!({ "count": 0 })))
                .await?;
            tx.emit(Event::text_message_start("m")).await?;
            for i in 0..4_998u32 {
                tx.emit(Event::text_message_content("m", format!("w{i} ")))
                    .await?;
                let op: PatchOperation = serde_json::from_value(
                    json!({ "op": "replace", "path": "/count", "value": i + 1 }),
                )
                .unwrap();
                tx.emit(Event::state_delta(vec![op])).await?;
            }
            tx.emit(Event::text_message_end("m")).await?;
            tx.emit(Event::custom("done", json!(true))).await?;
            Ok::<(), AgentError>(())
        },
    )
}

async fn server() -> TestServer {
    server_with(Resumable::default()).await
}

async fn server_with(resumable: Resumable) -> TestServer {
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("long", long_agent())
        .resumable(resumable)
        .shutdown(shutdown.clone())
        .into_router();
    start(router, shutdown).await
}

/// A proxy to `upstream` that cuts its `n`th connection after `plan(n, rng)` response
/// bytes (mid-frame or not; `None`: untouched). Counts the cuts it made.
async fn chaos_proxy(
    upstream: SocketAddr,
    seed: u64,
    plan: impl Fn(u32, &mut Rng) -> Option<u64> + Send + 'static,
) -> (SocketAddr, Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let made = Arc::new(AtomicU32::new(0));
    let counter = made.clone();
    tokio::spawn(async move {
        let mut rng = Rng(seed);
        let mut n = 0u32;
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let limit = plan(n, &mut rng);
            n += 1;
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                });
                let mut sent = 0u64;
                let mut buf = vec![0u8; 4096];
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let take = match limit {
                        Some(l) if sent + n as u64 >= l => (l - sent) as usize,
                        _ => n,
                    };
                    if cw.write_all(&buf[..take]).await.is_err() {
                        break;
                    }
                    sent += take as u64;
                    if take < n || limit.is_some_and(|l| sent >= l) {
                        counter.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                }
                up.abort();
                // Dropping both halves closes the connection mid-stream.
            });
        }
    });
    (addr, made)
}

async fn run_through(
    base: SocketAddr,
    resumable: Option<ResumeOptions>,
) -> (Result<(), ClientError>, Vec<String>, Conversation) {
    run_encoded(base, resumable, Encoding::Sse).await
}

async fn run_encoded(
    base: SocketAddr,
    resumable: Option<ResumeOptions>,
    encoding: Encoding,
) -> (Result<(), ClientError>, Vec<String>, Conversation) {
    let mut b = HttpAgent::builder(format!("http://{base}/long")).encoding(encoding);
    if let Some(r) = resumable {
        b = b.resumable(r);
    }
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let mut conv = Conversation::builder(b.build().unwrap())
        .thread_id("t")
        .on_event(move |e| sink.lock().unwrap().push(e.to_json_string()))
        .build();
    conv.add_user_message("go");
    let r = conv
        .run_agent(RunParams::new().run_id("run-1"))
        .await
        .map(|_| ());
    let events = events.lock().unwrap().clone();
    (r, events, conv)
}

/// The events with their run-specific ids removed (the runs differ only there).
fn comparable(events: &[String]) -> Vec<String> {
    events
        .iter()
        .filter(|e| !e.contains("\"RUN_STARTED\"") && !e.contains("\"RUN_FINISHED\""))
        .cloned()
        .collect()
}

/// Cuts a 10,000-event run 40 times between the client and a server keeping runs as
/// `resumable` says, over `encoding`; the result must equal an uncut run's.
async fn cut_many_times(resumable: Resumable, encoding: Encoding, max_cut: u64) {
    let srv = server().await;
    let addr = srv.addr;
    let (clean, reference, reference_conv) = run_encoded(addr, None, encoding).await;
    clean.expect("the uncut run");
    assert_eq!(
        reference.len(),
        10_002,
        "RUN_STARTED, 10,000 events, RUN_FINISHED"
    );

    let srv = server_with(resumable).await;
    let addr = srv.addr;
    // 40 cuts, each after 1 to `max_cut` bytes of the answer (the stream is ~1 MB in
    // SSE, ~300 KB in protobuf).
    let (proxy, cuts) = chaos_proxy(addr, 0x9e37_79b9_7f4a_7c15, move |n, rng| {
        (n < 40).then(|| 1 + rng.below(max_cut))
    })
    .await;
    let reconnects = Arc::new(AtomicU32::new(0));
    let last_seq = Arc::new(AtomicU64::new(0));
    let (r, l) = (reconnects.clone(), last_seq.clone());
    let opts = ResumeOptions::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(20))
        .max_retries(5)
        .on_reconnect(move |rc| {
            r.fetch_add(1, Ordering::SeqCst);
            l.store(rc.after_seq, Ordering::SeqCst);
        });
    let (result, got, conv) = tokio::time::timeout(
        Duration::from_secs(120),
        run_encoded(proxy, Some(opts), encoding),
    )
    .await
    .expect("the cut run ends in time");
    result.expect("the cut run succeeds");
    let cuts = cuts.load(Ordering::SeqCst);
    assert!(cuts >= 20, "the proxy cut the stream {cuts} times");
    assert_eq!(
        reconnects.load(Ordering::SeqCst),
        cuts,
        "one re-attach per cut"
    );
    assert_eq!(got.len(), reference.len(), "no event lost or repeated");
    assert!(
        comparable(&got) == comparable(&reference),
        "the events differ from the uncut run's"
    );
    assert_eq!(conv.state(), reference_conv.state());
    assert_eq!(conv.state()["count"], 4_998);
    // The same messages (the user's has a random id of its own in each run).
    let a = serde_json::to_value(&conv.messages()[1..]).unwrap();
    let b = serde_json::to_value(&reference_conv.messages()[1..]).unwrap();
    assert!(a == b, "the final messages differ from the uncut run's");
    assert_eq!(conv.messages().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_many_times_ends_exactly_as_an_uncut_run() {
    cut_many_times(Resumable::default(), Encoding::Sse, 60_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_over_protobuf_where_frames_are_counted() {
    cut_many_times(Resumable::default(), Encoding::Proto, 12_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_with_runs_kept_in_redis() {
    let Some(url) = agui_sdk_testkit::redis::url("the_same_with_runs_kept_in_redis") else {
        return;
    };
    let prefix = agui_sdk_testkit::redis::prefix("chaos");
    let limits = agui_sdk_redis::RunLimits::shared().retention(Duration::from_secs(60));
    let store = agui_sdk_redis::RedisRunStore::connect(&url, &prefix, limits)
        .await
        .unwrap_or_else(|e| panic!("Redis at {url} answers but the store cannot connect: {e}"));
    cut_many_times(Resumable::new(Arc::new(store)), Encoding::Sse, 60_000).await;
}

#[tokio::test]
async fn a_run_that_cannot_be_resumed_ends_with_a_typed_error() {
    // The first answer is cut after its head and a few events; every re-attach is cut
    // before its head arrives: the retries run out.
    let srv = server().await;
    let addr = srv.addr;
    let (proxy, _) = chaos_proxy(addr, 1, |n, _| Some(if n == 0 { 2_000 } else { 1 })).await;
    let opts = ResumeOptions::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .max_retries(3);
    let (result, _, _) = run_through(proxy, Some(opts)).await;
    match result {
        Err(ClientError::Resume { reason, .. }) => {
            assert!(reason.contains("3 re-attach attempts"), "{reason}")
        }
        other => panic!("expected a resume error, got {other:?}"),
    }
}
