//! Phase 2, end to end: events per second a client receives over HTTP (SSE, reqwest),
//! from an axum server whose agent emits as fast as it can, with runs not resumable,
//! resumable on the in-memory store, and resumable on Redis.
//!
//! Phase 3, re-attach latency: from sending `GET {agent}/runs/{runId}/events` with
//! `Last-Event-ID` (on a new connection, as after a drop) to receiving the first
//! missed event, for a finished run and for a running one.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_redis::RedisRunStore;
use agui_sdk_server::runs::{
    Batch, CancelOutcome, Created, Fence, Heartbeat, InMemoryRunStore, Leases, NewRun, Resumable,
    RunKey, RunLimits, RunLog, RunRecord, RunStatus, RunStore, RunStoreFuture, ThreadEntry,
    ThreadIndex, ThreadKey, ThreadQuery, ThreadRecord, ThreadSummary, ThreadUpdate,
};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;

use crate::common::{self, quantile, SseReader, TOKEN};
use crate::store::{fmt_k, fmt_rate};

/// A store that counts appends and the events in them, then delegates.
struct Counting {
    inner: Arc<dyn RunStore>,
    appends: AtomicU64,
    events: AtomicU64,
}

impl RunLog for Counting {
    fn create(&self, run: NewRun) -> RunStoreFuture<'_, Created> {
        self.inner.create(run)
    }
    fn append<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        terminal: Option<RunStatus>,
    ) -> RunStoreFuture<'a, ()> {
        self.appends.fetch_add(1, Ordering::Relaxed);
        self.events
            .fetch_add(events.len() as u64, Ordering::Relaxed);
        self.inner.append(key, fence, first, events, terminal)
    }
    fn read<'a>(&'a self, key: &'a RunKey, after: u64, limit: usize) -> RunStoreFuture<'a, Batch> {
        self.inner.read(key, after, limit)
    }
    fn wait<'a>(
        &'a self,
        key: &'a RunKey,
        after: u64,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        self.inner.wait(key, after, timeout)
    }
    fn record<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, Option<RunRecord>> {
        self.inner.record(key)
    }
}

impl Leases for Counting {
    fn heartbeat<'a>(&'a self, key: &'a RunKey, fence: Fence) -> RunStoreFuture<'a, Heartbeat> {
        self.inner.heartbeat(key, fence)
    }
    fn request_cancel<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, CancelOutcome> {
        self.inner.request_cancel(key)
    }
    fn expired_leases(&self, limit: usize) -> RunStoreFuture<'_, Vec<RunKey>> {
        self.inner.expired_leases(limit)
    }
    fn take_over<'a>(
        &'a self,
        key: &'a RunKey,
        replica: &'a str,
    ) -> RunStoreFuture<'a, Option<(Fence, u64)>> {
        self.inner.take_over(key, replica)
    }
}

impl ThreadIndex for Counting {
    fn end_thread_run<'a>(
        &'a self,
        key: &'a RunKey,
        fence: Fence,
        first: u64,
        events: Vec<Bytes>,
        status: RunStatus,
        entry: ThreadEntry,
    ) -> RunStoreFuture<'a, ()> {
        self.appends.fetch_add(1, Ordering::Relaxed);
        self.events
            .fetch_add(events.len() as u64, Ordering::Relaxed);
        self.inner
            .end_thread_run(key, fence, first, events, status, entry)
    }
    fn thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, Option<ThreadRecord>> {
        self.inner.thread(key)
    }
    fn list_threads<'a>(
        &'a self,
        scope: &'a str,
        query: &'a ThreadQuery,
    ) -> RunStoreFuture<'a, Vec<ThreadSummary>> {
        self.inner.list_threads(scope, query)
    }
    fn update_thread<'a>(
        &'a self,
        key: &'a ThreadKey,
        update: ThreadUpdate,
    ) -> RunStoreFuture<'a, Option<ThreadSummary>> {
        self.inner.update_thread(key, update)
    }
    fn forget_thread<'a>(&'a self, key: &'a ThreadKey) -> RunStoreFuture<'a, bool> {
        self.inner.forget_thread(key)
    }
}

/// A server configuration under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Memory,
    Redis,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "not resumable",
            Mode::Memory => "resumable, in-memory store",
            Mode::Redis => "resumable, Redis store",
        }
    }
}

struct Server {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    counting: Option<Arc<Counting>>,
    prefix: Option<String>,
}

async fn server(mode: Mode, redis_url: &str, what: &str) -> Server {
    let (store, prefix): (Option<Arc<dyn RunStore>>, Option<String>) = match mode {
        Mode::Plain => (None, None),
        Mode::Memory => (
            Some(Arc::new(InMemoryRunStore::new(RunLimits::default()))),
            None,
        ),
        Mode::Redis => {
            let prefix = common::unique_prefix(what);
            let s = RedisRunStore::connect(
                redis_url,
                &prefix,
                RunLimits::shared().retention(Duration::from_secs(120)),
            )
            .await
            .expect("Redis store");
            (Some(Arc::new(s)), Some(prefix))
        }
    };
    let counting = store.map(|inner| {
        Arc::new(Counting {
            inner,
            appends: AtomicU64::new(0),
            events: AtomicU64::new(0),
        })
    });
    let resumable = counting
        .clone()
        .map(|c| Resumable::new(c as Arc<dyn RunStore>).replica("bench"));
    let (addr, task) = common::start_server(resumable).await;
    Server {
        addr,
        task,
        counting,
        prefix,
    }
}

impl Server {
    async fn stop(self, redis_url: &str) {
        self.task.abort();
        let _ = self.task.await;
        // The store (and its Redis connections) goes with the router.
        if let Some(p) = &self.prefix {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut con = common::redis_con(redis_url).await;
            common::redis_delete_prefix(&mut con, p).await;
        }
    }
}

/// One end-to-end configuration measured.
#[derive(Debug, Clone)]
pub struct E2eRow {
    pub agent: &'static str,
    pub mode: Mode,
    pub streams: usize,
    pub runs: u64,
    pub events: u64,
    pub secs: f64,
    pub first_event_p50_ms: f64,
    pub events_per_append: f64,
    pub cpu_us: f64,
    pub redis_cpu_us: f64,
    /// The lowest and highest rate over the rounds (this row is the median one).
    pub spread: (f64, f64),
}

impl E2eRow {
    pub fn rate(&self) -> f64 {
        self.events as f64 / self.secs
    }
}

/// Runs of `n` events on `streams` concurrent streams, for about `secs`.
async fn measure(
    srv: &Server,
    agent: &'static str,
    mode: Mode,
    streams: usize,
    n: u64,
    secs: f64,
    redis: &mut redis::aio::MultiplexedConnection,
) -> E2eRow {
    let client = reqwest::Client::builder().build().expect("client");
    let addr = srv.addr;
    let resumable = mode != Mode::Plain;
    let (a0, e0) = srv.counting.as_ref().map_or((0, 0), |c| {
        (
            c.appends.load(Ordering::Relaxed),
            c.events.load(Ordering::Relaxed),
        )
    });
    let cpu0 = common::process_cpu();
    let rcpu0 = common::redis_cpu(redis).await;
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let seq = Arc::new(AtomicU64::new(0));
    let tag = common::unique_prefix("e2e");
    let mut tasks = Vec::new();
    for _ in 0..streams {
        let client = client.clone();
        let seq = seq.clone();
        let tag = tag.clone();
        tasks.push(tokio::spawn(async move {
            let (mut runs, mut events) = (0u64, 0u64);
            let mut first = Vec::new();
            while Instant::now() < deadline {
                let id = format!("{tag}-{}", seq.fetch_add(1, Ordering::Relaxed));
                let t0 = Instant::now();
                let res =
                    common::post_run(&client, addr, agent, &id, json!({ "events": n }), resumable)
                        .await;
                let mut body = res.bytes_stream();
                let mut r = SseReader::default();
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.expect("body");
                    let before = r.events;
                    if r.feed(&chunk) > 0 && before == 0 {
                        first.push(t0.elapsed().as_secs_f64() * 1e3);
                    }
                }
                // RUN_STARTED, the agent's n events, RUN_FINISHED.
                assert_eq!(r.events, n + 2, "every event of run {id}");
                runs += 1;
                events += r.events;
            }
            (runs, events, first)
        }));
    }
    let (mut runs, mut events, mut first) = (0, 0, Vec::new());
    for t in tasks {
        let (r, e, f) = t.await.expect("stream");
        runs += r;
        events += e;
        first.extend(f);
    }
    let el = start.elapsed().as_secs_f64();
    let cpu = (common::process_cpu() - cpu0).as_secs_f64();
    let rcpu = common::redis_cpu(redis).await - rcpu0;
    let (a1, e1) = srv.counting.as_ref().map_or((0, 0), |c| {
        (
            c.appends.load(Ordering::Relaxed),
            c.events.load(Ordering::Relaxed),
        )
    });
    let row = E2eRow {
        agent,
        mode,
        streams,
        runs,
        events,
        secs: el,
        first_event_p50_ms: quantile(&mut first, 0.5),
        events_per_append: if a1 > a0 {
            (e1 - e0) as f64 / (a1 - a0) as f64
        } else {
            f64::NAN
        },
        cpu_us: cpu * 1e6 / events.max(1) as f64,
        redis_cpu_us: if mode == Mode::Redis {
            rcpu * 1e6 / events.max(1) as f64
        } else {
            0.0
        },
        spread: (0.0, 0.0),
    };
    eprintln!(
        "e2e {agent} {:28} streams {streams:2}: {:>9.0} events/s, {runs} runs, first event p50 {:.2} ms, {:.1} events/append",
        mode.name(),
        row.rate(),
        row.first_event_p50_ms,
        row.events_per_append
    );
    row
}

pub async fn run_e2e(
    redis_url: &str,
    n: u64,
    secs: f64,
    rounds: usize,
    streams: &[usize],
) -> Vec<E2eRow> {
    let mut redis = common::redis_con(redis_url).await;
    let mut rows = Vec::new();
    let mut servers = Vec::new();
    for mode in [Mode::Plain, Mode::Memory, Mode::Redis] {
        let srv = server(mode, redis_url, "e2e").await;
        // Warm-up.
        measure(&srv, "emit", mode, 2, n.min(2000), 0.2, &mut redis).await;
        servers.push((mode, srv));
    }
    for _ in 0..rounds {
        for (mode, srv) in &servers {
            for agent in ["emit", "iter"] {
                for &s in streams {
                    rows.push(measure(srv, agent, *mode, s, n, secs, &mut redis).await);
                    if let Some(p) = &srv.prefix {
                        // The cell's runs have all ended: their keys go now.
                        common::redis_delete_prefix(&mut redis, p).await;
                    }
                }
            }
        }
    }
    for (_, srv) in servers {
        srv.stop(redis_url).await;
    }
    common::medians(
        rows,
        |r| (r.mode as u8, r.agent, r.streams),
        E2eRow::rate,
        |r, s| r.spread = s,
    )
}

pub fn e2e_table(rows: &[E2eRow]) -> String {
    let mut s = String::from(
        "| agent | streams | server | events/s received (min–max) | / not resumable | runs | first event p50 (ms) | events per store append | CPU µs/event (this process) | Redis server CPU µs/event |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let base = rows
            .iter()
            .find(|b| b.mode == Mode::Plain && b.agent == r.agent && b.streams == r.streams)
            .map_or(f64::NAN, |b| b.rate());
        s.push_str(&format!(
            "| {} | {} | {} | {} ({}–{}) | {:.2} | {} | {:.2} | {} | {:.2} | {} |\n",
            r.agent,
            r.streams,
            r.mode.name(),
            fmt_rate(r.rate()),
            fmt_k(r.spread.0),
            fmt_k(r.spread.1),
            r.rate() / base,
            r.runs,
            r.first_event_p50_ms,
            if r.events_per_append.is_nan() {
                "–".into()
            } else {
                format!("{:.1}", r.events_per_append)
            },
            r.cpu_us,
            if r.mode == Mode::Redis {
                format!("{:.2}", r.redis_cpu_us)
            } else {
                "–".into()
            },
        ));
    }
    s
}

/// One re-attach latency series.
#[derive(Debug, Clone)]
pub struct ResumeRow {
    pub what: String,
    pub n: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// A tiny deterministic generator for cursors.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Time from sending a re-attach to its first `data:` line.
async fn reattach(client: &reqwest::Client, addr: SocketAddr, run_id: &str, cursor: u64) -> f64 {
    let t0 = Instant::now();
    let res = client
        .get(format!("http://{addr}/emit/runs/{run_id}/events"))
        .header("accept", "text/event-stream")
        .header("agui-resume-token", TOKEN)
        .header("last-event-id", format!("{run_id}:{cursor}"))
        .send()
        .await
        .expect("GET events");
    assert_eq!(res.status(), 200, "re-attach of {run_id} at {cursor}");
    let mut body = res.bytes_stream();
    let mut r = SseReader::default();
    while let Some(chunk) = body.next().await {
        if r.feed(&chunk.expect("body")) > 0 {
            return t0.elapsed().as_secs_f64() * 1e3;
        }
    }
    panic!("re-attach of {run_id} at {cursor} got no event");
}

fn series(what: String, mut v: Vec<f64>) -> ResumeRow {
    let row = ResumeRow {
        n: v.len(),
        p50_ms: quantile(&mut v, 0.5),
        p90_ms: quantile(&mut v, 0.9),
        p99_ms: quantile(&mut v, 0.99),
        max_ms: quantile(&mut v, 1.0),
        what,
    };
    eprintln!(
        "resume {:60} p50 {:.3} ms p99 {:.3} ms max {:.3} ms",
        row.what, row.p50_ms, row.p99_ms, row.max_ms
    );
    row
}

pub async fn run_resume(redis_url: &str, count: usize) -> Vec<ResumeRow> {
    // New connection for every request: a re-attach follows a dropped connection.
    let fresh = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    let kept = reqwest::Client::builder().build().expect("client");
    let mut rows = Vec::new();
    let mut rng = Lcg(0x5eed);
    for mode in [Mode::Memory, Mode::Redis] {
        let srv = server(mode, redis_url, "resume").await;
        let addr = srv.addr;
        let store = if mode == Mode::Memory {
            "in-memory"
        } else {
            "Redis"
        };

        // The floor: a GET answered at once (the agent's capabilities) on a new connection.
        if mode == Mode::Memory {
            let mut v = Vec::new();
            for _ in 0..count {
                let t0 = Instant::now();
                let res = fresh
                    .get(format!("http://{addr}/emit"))
                    .send()
                    .await
                    .expect("GET");
                let _ = res.bytes().await.expect("body");
                v.push(t0.elapsed().as_secs_f64() * 1e3);
            }
            rows.push(series(
                "floor: `GET /{agent}` (capabilities JSON), new connection".into(),
                v,
            ));
        }

        // A finished run of 1,000 events; re-attach at random cursors.
        let tag = common::unique_prefix("fin");
        let res =
            common::post_run(&kept, addr, "emit", &tag, json!({ "events": 1000 }), true).await;
        let mut r = SseReader::default();
        let mut body = res.bytes_stream();
        while let Some(c) = body.next().await {
            r.feed(&c.expect("body"));
        }
        let head = r.last_seq;
        assert_eq!(head, 1002);
        for _ in 0..10 {
            reattach(&fresh, addr, &tag, rng.below(head)).await;
        }
        let mut v = Vec::with_capacity(count);
        for _ in 0..count {
            v.push(reattach(&fresh, addr, &tag, rng.below(head)).await);
        }
        rows.push(series(
            format!("{store} store, finished run (1,002 events), random cursor"),
            v,
        ));
        let mut v = Vec::with_capacity(count);
        for _ in 0..count {
            v.push(reattach(&fresh, addr, &tag, head - 5).await);
        }
        rows.push(series(
            format!("{store} store, finished run (1,002 events), cursor 5 before the end"),
            v,
        ));

        // A running run (one event every 500 µs) followed by a viewer; re-attach 5
        // events behind what the viewer last saw.
        let tag = common::unique_prefix("live");
        let res = common::post_run(
            &kept,
            addr,
            "emit",
            &tag,
            json!({ "events": 10_000_000u64, "tickUs": 500 }),
            true,
        )
        .await;
        let seen = Arc::new(AtomicU64::new(0));
        let follower = {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut body = res.bytes_stream();
                let mut r = SseReader::default();
                while let Some(c) = body.next().await {
                    let Ok(c) = c else { break };
                    r.feed(&c);
                    seen.store(r.last_seq, Ordering::Relaxed);
                }
            })
        };
        while seen.load(Ordering::Relaxed) < 50 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut v = Vec::with_capacity(count);
        for i in 0..count + 10 {
            let cursor = seen.load(Ordering::Relaxed).saturating_sub(5);
            let ms = reattach(&fresh, addr, &tag, cursor).await;
            if i >= 10 {
                v.push(ms);
            }
        }
        rows.push(series(
            format!("{store} store, running run (an event every 0.5 ms), cursor 5 behind"),
            v,
        ));
        let res = kept
            .post(format!("http://{addr}/emit/runs/{tag}/cancel"))
            .header("agui-resume-token", TOKEN)
            .send()
            .await
            .expect("cancel");
        assert_eq!(res.status(), 202, "cancel");
        let _ = tokio::time::timeout(Duration::from_secs(5), follower).await;
        srv.stop(redis_url).await;
    }
    rows
}

pub fn resume_table(rows: &[ResumeRow]) -> String {
    let mut s = String::from(
        "| re-attach | n | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
            r.what, r.n, r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms
        ));
    }
    s
}
