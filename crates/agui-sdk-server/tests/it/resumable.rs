//! Resumable runs over HTTP, in one process with the in-memory store: opting in,
//! sequence ids, re-attach from any cursor, idempotent start, ownership, cursor errors,
//! cancel, detach policies, status, protobuf.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::types::RunFinishedOutcome;
use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_server::runs::{DetachPolicy, InMemoryRunStore, Resumable, RunLimits};
use agui_sdk_server::{agent_fn, AgentError, AgentRouter, Emitter, RunContext, Shutdown};
use common::{start, types, Client, DropFlag, TestServer};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

const TOKEN: &str = "tok_0123456789abcdefghijklmnopqrstuv";
const OTHER: &str = "tok_zyxwvutsrqponmlkjihgfedcba987654";

/// Emits `n` steps (a STEP_STARTED/STEP_FINISHED pair each), taking a permit from
/// `gate` before each pair when one is given; counts its executions.
fn stepper(
    n: usize,
    gate: Option<Arc<Semaphore>>,
    runs: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
) -> agui_sdk_server::FnAgent {
    agent_fn(
        move |_input: RunAgentInput, _ctx: RunContext, tx: Emitter| {
            runs.fetch_add(1, Ordering::SeqCst);
            let gate = gate.clone();
            let flag = DropFlag(dropped.clone());
            async move {
                let _flag = flag;
                for i in 0..n {
                    if let Some(g) = &gate {
                        g.acquire().await.map_err(AgentError::internal)?.forget();
                    }
                    tx.emit(Event::step_started(format!("s{i}"))).await?;
                    tx.emit(Event::step_finished(format!("s{i}"))).await?;
                }
                Ok::<(), AgentError>(())
            }
        },
    )
}

struct Setup {
    srv: TestServer,
    runs: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
}

async fn serve(n: usize, gate: Option<Arc<Semaphore>>, resumable: Resumable) -> Setup {
    let runs = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("steps", stepper(n, gate, runs.clone(), dropped.clone()))
        .verify(true)
        .resumable(resumable)
        .shutdown(shutdown.clone())
        .into_router();
    Setup {
        srv: start(router, shutdown).await,
        runs,
        dropped,
    }
}

fn body(run: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({ "threadId": "t", "runId": run, "messages": [] })).unwrap()
}

async fn post(addr: std::net::SocketAddr, run: &str, headers: &[(&str, &str)]) -> Client {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    Client::request(addr, "POST", "/steps", &h, &body(run)).await
}

async fn post_resumable(addr: std::net::SocketAddr, run: &str, token: &str) -> Client {
    post(
        addr,
        run,
        &[("AGUI-Resumable", "1"), ("AGUI-Resume-Token", token)],
    )
    .await
}

async fn get(addr: std::net::SocketAddr, path: &str, headers: &[(&str, &str)]) -> Client {
    Client::request(addr, "GET", path, headers, b"").await
}

/// One SSE frame: its id (when it has one) and event.
#[derive(Debug, Clone)]
struct Frame {
    id: Option<String>,
    retry: Option<String>,
    event: Event,
}

async fn next_frame(c: &mut Client) -> Option<Frame> {
    loop {
        let block = tokio::time::timeout(Duration::from_secs(10), c.next_block())
            .await
            .expect("a frame in time")?;
        let (mut id, mut retry, mut data) = (None, None, None);
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("retry: ") {
                retry = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data = Some(v.to_owned());
            } else {
                assert!(line.starts_with(':'), "unexpected SSE line {line:?}");
            }
        }
        if let Some(d) = data {
            return Some(Frame {
                id,
                retry,
                event: Event::from_json_str(&d).expect("a valid event"),
            });
        }
    }
}

async fn frames(c: &mut Client) -> Vec<Frame> {
    let mut out = Vec::new();
    while let Some(f) = next_frame(c).await {
        out.push(f);
    }
    out
}

fn seqs(frames: &[Frame], run: &str) -> Vec<u64> {
    frames
        .iter()
        .map(|f| {
            let id = f.id.as_deref().expect("an id");
            let (r, s) = id.rsplit_once(':').unwrap();
            assert_eq!(r, run);
            s.parse().unwrap()
        })
        .collect()
}

fn events(frames: &[Frame]) -> Vec<Event> {
    frames.iter().map(|f| f.event.clone()).collect()
}

#[tokio::test]
async fn an_opted_in_run_carries_sequence_ids_and_resumes_exactly_after_any_cursor() {
    let s = serve(20, None, Resumable::default()).await;
    let mut c = post_resumable(s.srv.addr, "r1", TOKEN).await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("agui-first-seq"), Some("1"));
    let all = frames(&mut c).await;
    assert_eq!(all.len(), 42, "RUN_STARTED, 40 steps, RUN_FINISHED");
    assert_eq!(all[0].retry.as_deref(), Some("1000"));
    assert!(all[1..].iter().all(|f| f.retry.is_none()));
    assert_eq!(seqs(&all, "r1"), (1..=42).collect::<Vec<u64>>());
    common::wait_for(5, || s.dropped.load(Ordering::SeqCst)).await;

    // From every cursor, the re-attach sends exactly the rest.
    for k in [0u64, 1, 7, 41] {
        let last = format!("r1:{k}");
        let mut c = get(
            s.srv.addr,
            "/steps/runs/r1/events",
            &[("AGUI-Resume-Token", TOKEN), ("Last-Event-ID", &last)],
        )
        .await;
        assert_eq!(c.status, 200, "cursor {k}");
        assert_eq!(
            c.header("agui-first-seq"),
            Some((k + 1).to_string().as_str())
        );
        assert_eq!(c.header("agui-head-seq"), Some("42"));
        let rest = frames(&mut c).await;
        assert_eq!(seqs(&rest, "r1"), ((k + 1)..=42).collect::<Vec<u64>>());
        let expected: Vec<String> = all[k as usize..]
            .iter()
            .map(|f| f.event.to_json_string())
            .collect();
        let got: Vec<String> = rest.iter().map(|f| f.event.to_json_string()).collect();
        assert_eq!(got, expected);
    }
    // `?after=` works too; at the head of a finished run there is nothing: 204.
    let mut c = get(
        s.srv.addr,
        "/steps/runs/r1/events?after=40",
        &[("AGUI-Resume-Token", TOKEN)],
    )
    .await;
    assert_eq!(seqs(&frames(&mut c).await, "r1"), [41, 42]);
    let c = get(
        s.srv.addr,
        "/steps/runs/r1/events?after=42",
        &[("AGUI-Resume-Token", TOKEN)],
    )
    .await;
    assert_eq!(c.status, 204);
    assert_eq!(s.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_dropped_connection_does_not_stop_the_run_and_the_rest_comes_on_reattach() {
    let gate = Arc::new(Semaphore::new(0));
    let s = serve(10, Some(gate.clone()), Resumable::default()).await;
    let mut c = post_resumable(s.srv.addr, "r1", TOKEN).await;
    gate.add_permits(2);
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(next_frame(&mut c).await.unwrap());
    }
    drop(c);
    gate.add_permits(8);
    common::wait_for(5, || s.dropped.load(Ordering::SeqCst)).await;
    assert!(!types(&events(&got)).contains(&"RUN_ERROR"));
    let last = got.last().unwrap().id.clone().unwrap();
    let mut c = get(
        s.srv.addr,
        "/steps/runs/r1/events",
        &[("AGUI-Resume-Token", TOKEN), ("Last-Event-ID", &last)],
    )
    .await;
    got.extend(frames(&mut c).await);
    assert_eq!(seqs(&got, "r1"), (1..=22).collect::<Vec<u64>>());
    let all = events(&got);
    assert_eq!(types(&all).last(), Some(&"RUN_FINISHED"));
    let mut v = agui_sdk_core::semantics::Verifier::new();
    for e in &all {
        v.push(e).unwrap();
    }
}

#[tokio::test]
async fn without_an_owner_or_a_valid_run_id_a_run_is_served_as_before() {
    let s = serve(1, None, Resumable::default()).await;
    let mut c = post(s.srv.addr, "r1", &[("AGUI-Resumable", "1")]).await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("agui-resumable"), Some("0; reason=\"no-owner\""));
    assert_eq!(c.header("agui-first-seq"), None);
    assert!(frames(&mut c).await.iter().all(|f| f.id.is_none()));

    let mut c = post(
        s.srv.addr,
        "bad:id",
        &[("AGUI-Resumable", "1"), ("AGUI-Resume-Token", TOKEN)],
    )
    .await;
    assert_eq!(c.header("agui-resumable"), Some("0; reason=\"run-id\""));
    assert!(frames(&mut c).await.iter().all(|f| f.id.is_none()));

    // Not opted in: as before, no ids.
    let mut c = post(s.srv.addr, "r2", &[("AGUI-Resume-Token", TOKEN)]).await;
    assert_eq!(c.header("agui-resumable"), None);
    assert!(frames(&mut c).await.iter().all(|f| f.id.is_none()));
}

#[tokio::test]
async fn an_opt_in_with_a_malformed_resume_token_is_refused_with_the_rule() {
    let s = serve(1, None, Resumable::default()).await;
    for (token, says) in [
        ("too-short-a-secret", "has 18 characters"),
        ("0123456789abcdefABCDEF:colon", "outside that set"),
    ] {
        let mut c = post(
            s.srv.addr,
            "r1",
            &[("AGUI-Resumable", "1"), ("AGUI-Resume-Token", token)],
        )
        .await;
        assert_eq!(c.status, 400, "{token}");
        let body = c.json().await;
        assert_eq!(body["error"]["code"], "invalid_resume_token");
        assert_eq!(body["error"]["field"], "AGUI-Resume-Token");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("22 to 512 characters") && message.contains(says),
            "{message}"
        );
    }
    assert_eq!(s.runs.load(Ordering::SeqCst), 0, "no run started");
    // Without the opt-in the header is not read: a plain run, as before.
    let mut c = post(s.srv.addr, "r2", &[("AGUI-Resume-Token", "short")]).await;
    assert_eq!(c.status, 200);
    assert!(frames(&mut c).await.iter().all(|f| f.id.is_none()));
}

#[tokio::test]
async fn runs_belong_to_their_owner() {
    let s = serve(1, None, Resumable::default()).await;
    frames(&mut post_resumable(s.srv.addr, "r1", TOKEN).await).await;
    for headers in [
        vec![("AGUI-Resume-Token", OTHER)],
        vec![],
        vec![("AGUI-Resume-Token", "short")],
    ] {
        let mut c = get(s.srv.addr, "/steps/runs/r1/events", &headers).await;
        assert_eq!(c.status, 404, "{headers:?}");
        assert_eq!(c.json().await["error"]["code"], "unknown_run");
        let c = get(s.srv.addr, "/steps/runs/r1", &headers).await;
        assert_eq!(c.status, 404);
        let c = Client::request(s.srv.addr, "POST", "/steps/runs/r1/cancel", &headers, b"").await;
        assert_eq!(c.status, 404);
    }
    // The same run id under another owner is another run.
    let mut c = post_resumable(s.srv.addr, "r1", OTHER).await;
    assert_eq!(seqs(&frames(&mut c).await, "r1").len(), 4);
    assert_eq!(s.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_retried_start_attaches_and_another_body_conflicts() {
    let gate = Arc::new(Semaphore::new(0));
    let s = serve(3, Some(gate.clone()), Resumable::default()).await;
    let mut first = post_resumable(s.srv.addr, "r1", TOKEN).await;
    gate.add_permits(1);
    next_frame(&mut first).await.unwrap();
    let mut retry = post_resumable(s.srv.addr, "r1", TOKEN).await;
    assert_eq!(retry.status, 200);
    gate.add_permits(2);
    let a = frames(&mut first).await;
    let b = frames(&mut retry).await;
    assert_eq!(
        seqs(&b, "r1"),
        (1..=8).collect::<Vec<u64>>(),
        "the retry got the whole run"
    );
    assert_eq!(a.len(), 7);
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "one execution");

    let other = serde_json::to_vec(&json!({ "threadId": "t", "runId": "r1", "messages": [{"id":"u","role":"user","content":"x"}] })).unwrap();
    let mut c = Client::request(
        s.srv.addr,
        "POST",
        "/steps",
        &[
            ("Content-Type", "application/json"),
            ("AGUI-Resumable", "1"),
            ("AGUI-Resume-Token", TOKEN),
        ],
        &other,
    )
    .await;
    assert_eq!(c.status, 409);
    assert_eq!(c.json().await["error"]["code"], "run_id_conflict");
}

#[tokio::test]
async fn bad_cursors_are_refused_with_the_reason() {
    let store = Arc::new(InMemoryRunStore::new(
        RunLimits::default().max_events_per_run(5),
    ));
    let s = serve(10, None, Resumable::new(store)).await;
    frames(&mut post_resumable(s.srv.addr, "r1", TOKEN).await).await;
    let t = ("AGUI-Resume-Token", TOKEN);
    for (headers, path, status, code) in [
        (
            vec![t, ("Last-Event-ID", "r2:3")],
            "/steps/runs/r1/events",
            400,
            "cursor_mismatch",
        ),
        (
            vec![t, ("Last-Event-ID", "r1:x")],
            "/steps/runs/r1/events",
            400,
            "malformed_cursor",
        ),
        (
            vec![t],
            "/steps/runs/r1/events?after=nope",
            400,
            "malformed_cursor",
        ),
        (
            vec![t, ("Last-Event-ID", "r1:3")],
            "/steps/runs/r1/events?after=4",
            400,
            "malformed_cursor",
        ),
        (
            vec![t],
            "/steps/runs/r1/events?after=99",
            409,
            "cursor_ahead",
        ),
        (
            vec![t],
            "/steps/runs/r1/events?after=2",
            410,
            "cursor_expired",
        ),
        (vec![t], "/steps/runs/zz/events", 404, "unknown_run"),
    ] {
        let mut c = get(s.srv.addr, path, &headers).await;
        assert_eq!(c.status, status, "{path} {headers:?}");
        let b = c.json().await;
        assert_eq!(b["error"]["code"], code, "{b}");
        if code == "cursor_expired" {
            assert_eq!(b["error"]["oldestSeq"], 18);
            assert_eq!(b["error"]["headSeq"], 22);
        }
    }
    // The retained tail is still served.
    let mut c = get(s.srv.addr, "/steps/runs/r1/events?after=17", &[t]).await;
    assert_eq!(seqs(&frames(&mut c).await, "r1"), [18, 19, 20, 21, 22]);
}

#[tokio::test]
async fn cancel_ends_a_detached_run_cleanly() {
    let gate = Arc::new(Semaphore::new(0));
    let s = serve(5, Some(gate.clone()), Resumable::default()).await;
    let mut c = post_resumable(s.srv.addr, "r1", TOKEN).await;
    gate.add_permits(1);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(next_frame(&mut c).await.unwrap());
    }
    let t = ("AGUI-Resume-Token", TOKEN);
    let mut status = get(s.srv.addr, "/steps/runs/r1", &[t]).await;
    let st = status.json().await;
    assert_eq!(st["status"], "running");
    assert_eq!(st["headSeq"], 3);
    assert_eq!(st["viewers"], 1);

    let mut cancel = Client::request(s.srv.addr, "POST", "/steps/runs/r1/cancel", &[t], b"").await;
    assert_eq!(cancel.status, 202);
    assert_eq!(cancel.json().await["status"], "cancelling");
    got.extend(frames(&mut c).await);
    match &got.last().unwrap().event {
        Event::RunFinished(f) => {
            assert!(matches!(f.outcome, Some(RunFinishedOutcome::Cancelled(_))))
        }
        other => panic!("{other:?}"),
    }
    common::wait_for(5, || s.dropped.load(Ordering::SeqCst)).await;
    let mut status = get(s.srv.addr, "/steps/runs/r1", &[t]).await;
    assert_eq!(status.json().await["status"], "cancelled");
    let mut again = Client::request(s.srv.addr, "POST", "/steps/runs/r1/cancel", &[t], b"").await;
    assert_eq!(again.status, 409);
    assert_eq!(again.json().await["error"]["code"], "run_ended");
}

#[tokio::test]
async fn detach_policies() {
    // Cancel: the run stops with its last viewer.
    let gate = Arc::new(Semaphore::new(0));
    let s = serve(
        5,
        Some(gate.clone()),
        Resumable::default()
            .detach(DetachPolicy::Cancel)
            .lease(Duration::from_secs(10), Duration::from_millis(50)),
    )
    .await;
    let mut c = post_resumable(s.srv.addr, "r1", TOKEN).await;
    gate.add_permits(1);
    next_frame(&mut c).await.unwrap();
    drop(c);
    common::wait_for(5, || s.dropped.load(Ordering::SeqCst)).await;
    let mut st = get(
        s.srv.addr,
        "/steps/runs/r1",
        &[("AGUI-Resume-Token", TOKEN)],
    )
    .await;
    assert_eq!(st.json().await["status"], "cancelled");

    // Continue: it goes on unwatched until `max_unwatched`.
    let gate = Arc::new(Semaphore::new(0));
    let s = serve(
        5,
        Some(gate.clone()),
        Resumable::default()
            .detach(DetachPolicy::Continue {
                max_unwatched: Duration::from_millis(300),
            })
            .lease(Duration::from_secs(10), Duration::from_millis(50)),
    )
    .await;
    let mut c = post_resumable(s.srv.addr, "r1", TOKEN).await;
    gate.add_permits(1);
    next_frame(&mut c).await.unwrap();
    drop(c);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !s.dropped.load(Ordering::SeqCst),
        "still running, unwatched"
    );
    common::wait_for(5, || s.dropped.load(Ordering::SeqCst)).await;
    let mut st = get(
        s.srv.addr,
        "/steps/runs/r1",
        &[("AGUI-Resume-Token", TOKEN)],
    )
    .await;
    assert_eq!(
        st.json().await["status"],
        "cancelled",
        "cancelled after max_unwatched"
    );
}

#[tokio::test]
async fn protobuf_viewers_get_the_first_seq_header_and_contiguous_frames() {
    let s = serve(3, None, Resumable::default()).await;
    frames(&mut post_resumable(s.srv.addr, "r1", TOKEN).await).await;
    let mut c = get(
        s.srv.addr,
        "/steps/runs/r1/events?after=3",
        &[
            ("AGUI-Resume-Token", TOKEN),
            ("Accept", "application/vnd.ag-ui.event+proto"),
        ],
    )
    .await;
    assert_eq!(
        c.header("content-type"),
        Some("application/vnd.ag-ui.event+proto")
    );
    assert_eq!(c.header("agui-first-seq"), Some("4"));
    let bytes = c.body().await;
    let mut dec =
        agui_sdk_core::encoding::EventDecoder::new(agui_sdk_core::encoding::Encoding::Proto);
    dec.push(&bytes);
    dec.finish();
    let mut got = Vec::new();
    while let Some(e) = dec.next() {
        let e = e.unwrap();
        got.push(e);
    }
    assert_eq!(got.len(), 5, "seqs 4..=8");
    assert_eq!(types(&got).last(), Some(&"RUN_FINISHED"));
    let _ = Value::Null;
}

/// A store that records the size of each append, around the in-memory one.
struct Counting {
    inner: InMemoryRunStore,
    largest: std::sync::Mutex<usize>,
}

impl agui_sdk_server::runs::RunLog for Counting {
    fn create(
        &self,
        run: agui_sdk_server::runs::NewRun,
    ) -> agui_sdk_server::runs::RunStoreFuture<'_, agui_sdk_server::runs::Created> {
        self.inner.create(run)
    }
    fn append<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
        fence: agui_sdk_server::runs::Fence,
        first: u64,
        events: Vec<bytes::Bytes>,
        terminal: Option<agui_sdk_server::runs::RunStatus>,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, ()> {
        let mut l = self.largest.lock().unwrap();
        *l = (*l).max(events.len());
        self.inner.append(key, fence, first, events, terminal)
    }
    fn read<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
        after: u64,
        limit: usize,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, agui_sdk_server::runs::Batch> {
        self.inner.read(key, after, limit)
    }
    fn wait<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
        after: u64,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        self.inner.wait(key, after, timeout)
    }
    fn record<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, Option<agui_sdk_server::runs::RunRecord>> {
        self.inner.record(key)
    }
}

impl agui_sdk_server::runs::Leases for Counting {
    fn heartbeat<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
        fence: agui_sdk_server::runs::Fence,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, agui_sdk_server::runs::Heartbeat> {
        self.inner.heartbeat(key, fence)
    }
    fn request_cancel<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, agui_sdk_server::runs::CancelOutcome> {
        self.inner.request_cancel(key)
    }
    fn expired_leases(
        &self,
        limit: usize,
    ) -> agui_sdk_server::runs::RunStoreFuture<'_, Vec<agui_sdk_server::runs::RunKey>> {
        self.inner.expired_leases(limit)
    }
    fn take_over<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
        replica: &'a str,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, Option<(agui_sdk_server::runs::Fence, u64)>>
    {
        self.inner.take_over(key, replica)
    }
}

impl agui_sdk_server::runs::InterruptLedger for Counting {
    fn load<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::InterruptKey,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, Option<agui_sdk_server::runs::LedgerEntry>> {
        self.inner.load(key)
    }

    fn swap<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::InterruptKey,
        expected: Option<u64>,
        new: agui_sdk_server::runs::LedgerEntry,
        ttl: std::time::Duration,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, bool> {
        self.inner.swap(key, expected, new, ttl)
    }
}

impl agui_sdk_server::runs::ThreadIndex for Counting {
    fn end_thread_run<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::RunKey,
        fence: agui_sdk_server::runs::Fence,
        first: u64,
        events: Vec<bytes::Bytes>,
        status: agui_sdk_server::runs::RunStatus,
        entry: agui_sdk_server::runs::ThreadEntry,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, ()> {
        self.inner
            .end_thread_run(key, fence, first, events, status, entry)
    }
    fn thread<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::ThreadKey,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, Option<agui_sdk_server::runs::ThreadRecord>>
    {
        self.inner.thread(key)
    }
    fn list_threads<'a>(
        &'a self,
        scope: &'a str,
        query: &'a agui_sdk_server::runs::ThreadQuery,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, Vec<agui_sdk_server::runs::ThreadSummary>> {
        self.inner.list_threads(scope, query)
    }
    fn update_thread<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::ThreadKey,
        update: agui_sdk_server::runs::ThreadUpdate,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, Option<agui_sdk_server::runs::ThreadSummary>>
    {
        self.inner.update_thread(key, update)
    }
    fn forget_thread<'a>(
        &'a self,
        key: &'a agui_sdk_server::runs::ThreadKey,
    ) -> agui_sdk_server::runs::RunStoreFuture<'a, bool> {
        self.inner.forget_thread(key)
    }
}

/// An agent with 5,000 events all ready at once is committed in bounded batches (one
/// store call must not hold a shared store for long).
#[tokio::test]
async fn a_run_whose_events_are_all_ready_is_committed_in_bounded_batches() {
    let store = Arc::new(Counting {
        inner: InMemoryRunStore::new(RunLimits::default()),
        largest: std::sync::Mutex::new(0),
    });
    let ready = agui_sdk_server::agent_stream(|_input, _ctx| {
        futures_util::stream::iter((0..2_500).flat_map(|i| {
            [
                Ok(Event::step_started(format!("s{i}"))),
                Ok(Event::step_finished(format!("s{i}"))),
            ]
        }))
    });
    let shutdown = Shutdown::new();
    let router = AgentRouter::new()
        .agent("ready", ready)
        .resumable(Resumable::new(store.clone()))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let mut c = Client::request(
        srv.addr,
        "POST",
        "/ready",
        &[
            ("Content-Type", "application/json"),
            ("AGUI-Resumable", "1"),
            ("AGUI-Resume-Token", TOKEN),
        ],
        &body("r1"),
    )
    .await;
    assert_eq!(frames(&mut c).await.len(), 5_002);
    let largest = *store.largest.lock().unwrap();
    assert!(largest <= 256, "the largest append held {largest} events");
}
