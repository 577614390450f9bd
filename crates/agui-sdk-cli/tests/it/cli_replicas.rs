//! Resumable runs across replicas: `agui serve --store redis://…` processes sharing one
//! Redis. A run started on replica A is resumed through replica B mid-run; A killed
//! with SIGKILL mid-run has its run closed by B's reaper with `RUN_ERROR` code
//! `run_lost`; a replica killed mid-run is the same on every route kind (one table);
//! a Redis restarted mid-run gives a clear error, no panic, and service resumes.
//!
//! Uses the Redis at `AGUI_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`) and, for
//! the restart, a private `redis-server` on a free port. Without them the tests print
//! `skipped …`, except under `AGUI_REQUIRE_REDIS=1` (set by `scripts/test-all.sh`),
//! where that is a failure.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{spawn_serve, Served};

use agui_sdk_server::runs::RUN_LOST;
use agui_sdk_testkit::redis as redis_gate;
use futures_util::StreamExt;
use serde_json::Value;

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

/// One SSE event frame: its seq and event.
#[derive(Debug)]
struct Frame {
    seq: u64,
    event: Value,
}

/// Reads the frames of a response as they come.
struct Frames {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: Vec<u8>,
}

impl Frames {
    async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block = String::from_utf8(self.buf[..pos].to_vec()).unwrap();
                self.buf.drain(..pos + 2);
                let mut seq = None;
                let mut data = None;
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id: ") {
                        seq = id.rsplit_once(':').and_then(|(_, s)| s.parse().ok());
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = Some(serde_json::from_str(d).unwrap());
                    }
                }
                // Frames without an id (a CopilotKit history replay) count as seq 0.
                if let Some(event) = data {
                    return Some(Frame {
                        seq: seq.unwrap_or(0),
                        event,
                    });
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

const TOKEN: &str = "replica-test-owner-token-0123456789abcdef";

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
    Frames {
        body: res.bytes_stream().boxed(),
        buf: Vec::new(),
    }
}

async fn attach(base: &str, run: &str, after: u64) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{base}/agentic_chat/runs/{run}/events"))
        .header("AGUI-Resume-Token", TOKEN)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", format!("{run}:{after}"))
        .send()
        .await
        .unwrap()
}

fn run_id(tag: &str) -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{tag}-{}-{n:x}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_on_one_replica_resumes_through_another_and_survives_its_death() {
    let Some(url) = redis_gate::url("a_run_started_on_one_replica_resumes_through_another") else {
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
    let res = attach(&b.base, &run, 3).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["agui-first-seq"], "4");
    let mut on_b = Frames {
        body: res.bytes_stream().boxed(),
        buf: Vec::new(),
    };
    while let Some(f) = on_b.next().await {
        seen.push(f);
    }
    let seqs: Vec<u64> = seen.iter().map(|f| f.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "contiguous, no loss, no repeat"
    );
    assert_eq!(seen.last().unwrap().event["type"], "RUN_FINISHED");
    assert!(seen.len() > 8, "the whole reply");

    // Kill A mid-run: B's reaper closes the run after the lease (1 s) with run_lost.
    let run = run_id("lost");
    let mut on_a = start(&a.base, &run).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(on_a.next().await.expect("a frame from A"));
    }
    let mut a = a;
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    let t0 = std::time::Instant::now();
    let res = attach(&b.base, &run, seen.last().unwrap().seq).await;
    assert_eq!(res.status(), 200);
    let mut on_b = Frames {
        body: res.bytes_stream().boxed(),
        buf: Vec::new(),
    };
    while let Some(f) = on_b.next().await {
        seen.push(f);
    }
    let last = &seen.last().unwrap().event;
    assert_eq!(last["type"], "RUN_ERROR", "{last}");
    assert_eq!(last["code"], RUN_LOST);
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "closed within lease + scan ({:?})",
        t0.elapsed()
    );
    let seqs: Vec<u64> = seen.iter().map(|f| f.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "every committed event, then the end"
    );
    drop(b);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn redis_server(port: u16) -> Option<Child> {
    Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

async fn wait_redis(port: u16) {
    for _ in 0..100 {
        if redis_gate::answers(&format!("127.0.0.1:{port}")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server on port {port} did not start");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_mid_run_is_a_clear_error_and_service_resumes() {
    let port = free_port();
    let Some(mut redis) = redis_server(port) else {
        assert!(
            !redis_gate::required(),
            "redis-server is not installed (AGUI_REQUIRE_REDIS is set)"
        );
        println!("skipped a_redis_restart_mid_run: no redis-server binary");
        return;
    };
    wait_redis(port).await;
    let url = format!("redis://127.0.0.1:{port}");
    let mut c = replica(&url, "C");

    let run = run_id("restart");
    let mut frames = start(&c.base, &run).await;
    frames.next().await.expect("a first frame");
    redis.kill().unwrap();
    redis.wait().unwrap();
    // The stream ends (the run can no longer be recorded), rather than hanging.
    let t0 = std::time::Instant::now();
    let mut rest = Vec::new();
    while let Some(f) = frames.next().await {
        rest.push(f);
    }
    assert!(t0.elapsed() < Duration::from_secs(20));
    // The client's re-attach gets a clear answer, not a hang.
    let res = attach(&c.base, &run, 1).await;
    assert_eq!(res.status(), 503, "store unavailable");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "store_unavailable");
    assert!(
        c.child.try_wait().unwrap().is_none(),
        "the replica did not crash"
    );

    // Redis comes back: new runs work again.
    let mut redis = redis_server(port).expect("redis-server restarts");
    wait_redis(port).await;
    let mut ok = false;
    for _ in 0..20 {
        let run = run_id("after");
        let body = serde_json::json!({ "threadId": "t", "runId": run, "messages": [] });
        let res = reqwest::Client::new()
            .post(format!("{}/agentic_chat", c.base))
            .header("AGUI-Resumable", "1")
            .header("AGUI-Resume-Token", TOKEN)
            .header("Accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .unwrap();
        if res.status() == 200 {
            let mut f = Frames {
                body: res.bytes_stream().boxed(),
                buf: Vec::new(),
            };
            let mut last = None;
            while let Some(frame) = f.next().await {
                last = Some(frame.event);
            }
            assert_eq!(last.unwrap()["type"], "RUN_FINISHED");
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(ok, "service resumed after Redis came back");
    assert!(c.child.try_wait().unwrap().is_none());
    let _ = c.child.kill();
    let _ = redis.kill();
    let _ = redis.wait();
}

/// A server restart with the Redis store: what the run committed before the old
/// process died is all there for the client that re-attaches to the new process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_resumes_across_a_server_restart() {
    let Some(url) = redis_gate::url("a_client_resumes_across_a_server_restart") else {
        return;
    };
    // The run is produced at once (no delay): it is whole in Redis when the client,
    // reading slowly, has only its first frames.
    let old = spawn_serve(
        &[],
        &["--delay-ms", "0", "--store", &url, "--replica-id", "old"],
        &[],
    );
    let run = run_id("restart-server");
    let mut frames = start(&old.base, &run).await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push(frames.next().await.expect("a frame"));
    }
    drop(frames);
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(old); // killed
    let new = spawn_serve(
        &[],
        &["--delay-ms", "0", "--store", &url, "--replica-id", "new"],
        &[],
    );
    let res = attach(&new.base, &run, 2).await;
    assert_eq!(res.status(), 200);
    let mut rest = Frames {
        body: res.bytes_stream().boxed(),
        buf: Vec::new(),
    };
    while let Some(f) = rest.next().await {
        seen.push(f);
    }
    let seqs: Vec<u64> = seen.iter().map(|f| f.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(seen.last().unwrap().event["type"], "RUN_FINISHED");
    assert!(seen.len() > 8, "the whole reply");
}

/// A CopilotKit runtime request to `base`, answered as a stream of frames.
async fn copilot(base: &str, path: &str, body: &Value) -> Frames {
    let res = reqwest::Client::new()
        .post(format!("{base}/copilotkit/agent/agentic_chat/{path}"))
        .header("Accept", "text/event-stream")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{path}");
    Frames {
        body: res.bytes_stream().boxed(),
        buf: Vec::new(),
    }
}

/// Reads frames until the stream ends; the events.
async fn rest(frames: &mut Frames) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(f) = frames.next().await {
        out.push(f.event);
    }
    out
}

/// The CopilotKit runtime's threads in Redis: a run started on replica A is followed
/// through B's `connect`, stopped through B, and, when A dies mid-run, ended as lost by
/// B (`RUN_ERROR` code `run_lost`) and kept in the thread's history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilotkit_threads_are_shared_by_replicas_and_survive_one_dying() {
    let Some(url) = redis_gate::url("copilotkit_threads_are_shared_by_replicas") else {
        return;
    };
    let mut a = replica(&url, "A");
    let b = replica(&url, "B");
    let input = |thread: &str, run: &str| {
        serde_json::json!({
            "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
            "forwardedProps": {},
            "messages": [{"id": format!("{run}-u"), "role": "user", "content": "a long question for a slow agent"}],
        })
    };

    // Started on A, followed and stopped through B.
    let thread = run_id("ck-stop");
    let mut on_a = copilot(&a.base, "run", &input(&thread, "r1")).await;
    assert_eq!(on_a.next().await.unwrap().event["type"], "RUN_STARTED");
    let mut on_b = copilot(&b.base, "connect", &input(&thread, "r-connect")).await;
    let first = on_b.next().await.expect("B streams A's live run");
    assert_eq!(first.event["type"], "RUN_STARTED");
    let stopped: Value = reqwest::Client::new()
        .post(format!(
            "{}/copilotkit/agent/agentic_chat/stop/{thread}",
            b.base
        ))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        stopped["stopped"], true,
        "B finds the run A runs: {stopped}"
    );
    let events = tokio::time::timeout(Duration::from_secs(10), rest(&mut on_b))
        .await
        .expect("the stop reaches A within its keep-alive");
    let last = events.last().expect("events after the stop");
    assert_eq!(last["type"], "RUN_FINISHED", "{events:?}");
    // The request declared no protocol version, as CopilotKit's clients do: the
    // `cancelled` outcome, which their schemas refuse, goes as its stand-in.
    assert_eq!(last.get("outcome"), None, "{last}");
    assert_eq!(
        last["result"],
        serde_json::json!({"cancelled": true}),
        "{last}"
    );
    let on_a_events = rest(&mut on_a).await;
    assert_eq!(on_a_events.last().unwrap()["type"], "RUN_FINISHED");

    // A dies mid-run: B ends the run as lost, and the thread keeps it.
    let thread = run_id("ck-lost");
    let mut on_a = copilot(&a.base, "run", &input(&thread, "r1")).await;
    for _ in 0..3 {
        on_a.next().await.expect("a frame from A");
    }
    let mut on_b = copilot(&b.base, "connect", &input(&thread, "r-connect")).await;
    on_b.next().await.expect("B streams A's live run");
    a.child.kill().unwrap(); // SIGKILL
    let _ = a.child.wait();
    let events = tokio::time::timeout(Duration::from_secs(15), rest(&mut on_b))
        .await
        .expect("B ends the lost run once its lease expires");
    let last = events.last().expect("the end of the lost run");
    assert_eq!(last["type"], "RUN_ERROR", "{events:?}");
    assert_eq!(last["code"], RUN_LOST);
    // Restored through B: the history holds the run and its end.
    let mut again = copilot(&b.base, "connect", &input(&thread, "r-connect-2")).await;
    let history = rest(&mut again).await;
    assert!(
        history
            .iter()
            .any(|e| e["type"] == "RUN_ERROR" && e["code"] == RUN_LOST),
        "{history:?}"
    );
    // And the thread takes a new run on B.
    let mut next = copilot(&b.base, "run", &input(&thread, "r2")).await;
    let events = rest(&mut next).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
}

/// The kinds of run a replica serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Resumable,
    CopilotKit,
}

/// A replica killed mid-run, on every route kind, as each promises: a plain run lived
/// in its connection and ends with it (no terminal event reaches the client, nothing
/// is kept); a resumable run and a CopilotKit run are closed by the other replica's
/// reaper with `RUN_ERROR` code `run_lost`, which a re-attach (resumable) or a
/// `connect` (CopilotKit, from the thread's history) then shows, after the events the
/// dead replica committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_replica_is_the_same_on_every_route_kind() {
    let Some(url) = redis_gate::url("a_dead_replica_is_the_same_on_every_route_kind") else {
        return;
    };
    let b = replica(&url, "B");
    for kind in [Kind::Plain, Kind::Resumable, Kind::CopilotKit] {
        let mut a = replica(&url, "A");
        let run = run_id(&format!("{kind:?}").to_lowercase());
        let thread = format!("t-{run}");
        let input = serde_json::json!({
            "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
            "forwardedProps": {},
            "messages": [{"id": format!("{run}-u"), "role": "user", "content": "a long question for a slow agent"}],
        });
        let mut on_a = match kind {
            Kind::Plain => {
                let res = reqwest::Client::new()
                    .post(format!("{}/agentic_chat", a.base))
                    .header("Accept", "text/event-stream")
                    .json(&input)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), 200);
                Frames {
                    body: res.bytes_stream().boxed(),
                    buf: Vec::new(),
                }
            }
            Kind::Resumable => start(&a.base, &run).await,
            Kind::CopilotKit => copilot(&a.base, "run", &input).await,
        };
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(on_a.next().await.expect("a frame from A").event);
        }
        a.child.kill().unwrap(); // SIGKILL
        a.child.wait().unwrap();
        let after_kill = rest(&mut on_a).await;
        assert!(
            after_kill
                .iter()
                .all(|e| e["type"] != "RUN_FINISHED" && e["type"] != "RUN_ERROR"),
            "{kind:?}: no terminal event from a dead replica"
        );
        let recovered: Vec<Value> = match kind {
            Kind::Plain => {
                // Nothing is kept: the other replica knows no such run.
                let res = attach(&b.base, &run, 0).await;
                assert_eq!(res.status(), 404, "{kind:?}: a plain run is not kept");
                continue;
            }
            Kind::Resumable => {
                let res = attach(&b.base, &run, 0).await;
                assert_eq!(res.status(), 200);
                rest(&mut Frames {
                    body: res.bytes_stream().boxed(),
                    buf: Vec::new(),
                })
                .await
            }
            Kind::CopilotKit => {
                // The thread is busy until B's reaper closes the run; then its history
                // holds it.
                let deadline = std::time::Instant::now() + Duration::from_secs(20);
                loop {
                    let history = rest(&mut copilot(&b.base, "connect", &input).await).await;
                    if history.last().is_some_and(|e| e["type"] == "RUN_ERROR") {
                        break history;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "{kind:?}: the lost run never joined the history: {history:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        };
        let last = recovered.last().expect("events");
        assert_eq!(last["type"], "RUN_ERROR", "{kind:?}: {last}");
        assert_eq!(last["code"], RUN_LOST, "{kind:?}");
        assert_eq!(recovered[0]["type"], "RUN_STARTED", "{kind:?}");
        assert!(
            recovered.len() >= seen.len(),
            "{kind:?}: what A committed is kept ({} events, A sent {})",
            recovered.len(),
            seen.len()
        );
    }
    drop(b);
}
