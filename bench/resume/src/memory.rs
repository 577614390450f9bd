//! Phase 4, memory per detached run: in a fresh process for each (store, shape), the
//! growth of the server's resident set (and live heap) over K resumable runs of E
//! events each, every one started over HTTP and then left with no viewer.
//!
//! Shapes: `running` (the agent has emitted its events and waits: the run's producer
//! task, agent and log stay), `finished` (the run ended: only its log stays, for the
//! store's retention time).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_redis::RedisRunStore;
use agui_sdk_server::runs::{sha256_hex, InMemoryRunStore, Resumable, RunKey, RunLimits, RunStore};
use futures_util::StreamExt;
use serde_json::json;

use crate::common::{self, SseReader, TOKEN};

/// The figures of one child.
#[derive(Debug, Clone)]
pub struct MemRow {
    pub store: String,
    pub shape: String,
    pub tick_us: u64,
    pub runs: u64,
    pub events: u64,
    pub rss_per_run: f64,
    pub heap_per_run: f64,
    pub log_bytes_per_run: f64,
    pub redis_per_run: f64,
}

/// Starts a run and leaves once its first event arrived (the connection is closed).
async fn start_detached(
    client: &reqwest::Client,
    addr: std::net::SocketAddr,
    run_id: &str,
    events: u64,
    hold: bool,
    tick_us: u64,
) {
    let res = common::post_run(
        client,
        addr,
        "emit",
        run_id,
        json!({ "events": events, "hold": hold, "tickUs": tick_us }),
        true,
    )
    .await;
    let mut body = res.bytes_stream();
    let mut r = SseReader::default();
    while let Some(c) = body.next().await {
        if r.feed(&c.expect("body")) > 0 {
            return;
        }
    }
}

/// Starts `ids` (16 at a time) and waits until each has its events committed and no
/// viewer.
async fn fill(
    client: &reqwest::Client,
    addr: std::net::SocketAddr,
    store: &Arc<dyn RunStore>,
    ids: &[String],
    events: u64,
    hold: bool,
    tick_us: u64,
) {
    let owner = format!("token:{}", sha256_hex(TOKEN.as_bytes()));
    futures_util::stream::iter(ids)
        .for_each_concurrent(16, |id| async move {
            start_detached(client, addr, id, events, hold, tick_us).await;
        })
        .await;
    // The log holds RUN_STARTED and the agent's events (and RUN_FINISHED when it ended).
    let want = events + if hold { 1 } else { 2 };
    let deadline = Instant::now() + Duration::from_secs(60);
    for id in ids {
        let key = RunKey::derive(&owner, "emit", id);
        loop {
            let rec = store.record(&key).await.expect("record");
            if rec.is_some_and(|r| r.head >= want) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "run {id} did not commit its events"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if hold {
            // Detached: the server noticed the closed connection.
            loop {
                let v: serde_json::Value = client
                    .get(format!("http://{addr}/emit/runs/{id}"))
                    .header("agui-resume-token", TOKEN)
                    .send()
                    .await
                    .expect("status")
                    .json()
                    .await
                    .expect("status JSON");
                if v["viewers"] == json!(0) {
                    break;
                }
                assert!(Instant::now() < deadline, "run {id} kept a viewer: {v}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}

/// The child process: prints one line `mem store shape runs events rss heap log redis`.
pub async fn child(
    redis_url: &str,
    store_kind: &str,
    shape: &str,
    runs: usize,
    events: u64,
    tick_us: u64,
) {
    let hold = match shape {
        "running" => true,
        "finished" => false,
        other => panic!("unknown shape {other}"),
    };
    let mut con = common::redis_con(redis_url).await;
    let mut memory: Option<Arc<InMemoryRunStore>> = None;
    let mut prefix = None;
    let store: Arc<dyn RunStore> = match store_kind {
        "memory" => {
            let m = Arc::new(InMemoryRunStore::new(RunLimits::default()));
            memory = Some(m.clone());
            m
        }
        "redis" => {
            let p = common::unique_prefix("mem");
            let s = RedisRunStore::connect(redis_url, &p, RunLimits::shared())
                .await
                .expect("Redis store");
            prefix = Some(p);
            Arc::new(s)
        }
        other => panic!("unknown store {other}"),
    };
    let (addr, _task) =
        common::start_server(Some(Resumable::new(store.clone()).replica("bench"))).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");

    let warm: Vec<String> = (0..50).map(|i| format!("warm-{i}")).collect();
    fill(&client, addr, &store, &warm, events, hold, tick_us).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss0, heap0) = (common::rss_bytes(), common::heap_bytes());
    let log0 = memory.as_ref().map_or(0, |m| m.bytes());
    let redis0 = common::redis_used_memory(&mut con).await;

    let ids: Vec<String> = (0..runs).map(|i| format!("run-{i}")).collect();
    fill(&client, addr, &store, &ids, events, hold, tick_us).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss1, heap1) = (common::rss_bytes(), common::heap_bytes());
    let log1 = memory.as_ref().map_or(0, |m| m.bytes());
    let redis1 = common::redis_used_memory(&mut con).await;

    let k = runs as f64;
    println!(
        "mem {store_kind} {shape} {tick_us} {runs} {events} {:.1} {:.1} {:.1} {:.1}",
        (rss1 as f64 - rss0 as f64) / k,
        (heap1 as f64 - heap0 as f64) / k,
        (log1 as f64 - log0 as f64) / k,
        if prefix.is_some() {
            (redis1 as f64 - redis0 as f64) / k
        } else {
            0.0
        },
    );
    if let Some(p) = &prefix {
        common::redis_delete_prefix(&mut con, p).await;
    }
}

/// Runs each (store, shape) in a child process of this binary.
pub fn run(redis_url: &str, runs: usize, events: u64) -> Vec<MemRow> {
    let exe = std::env::current_exe().expect("current exe");
    let mut rows = Vec::new();
    let cases = [
        ("memory", "running", 0u64),
        ("memory", "running", 200),
        ("memory", "finished", 0),
        ("redis", "running", 0),
        ("redis", "finished", 0),
    ];
    for (store, shape, tick_us) in cases {
        {
            let out = std::process::Command::new(&exe)
                .args([
                    "memory-child",
                    "--redis",
                    redis_url,
                    "--store",
                    store,
                    "--shape",
                    shape,
                    "--runs",
                    &runs.to_string(),
                    "--events",
                    &events.to_string(),
                    "--tick-us",
                    &tick_us.to_string(),
                ])
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("memory child");
            assert!(out.status.success(), "memory child {store} {shape} failed");
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text
                .lines()
                .find(|l| l.starts_with("mem "))
                .expect("a result line");
            let f: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| f[i].parse::<f64>().expect("a number");
            let row = MemRow {
                store: f[1].into(),
                shape: f[2].into(),
                tick_us: num(3) as u64,
                runs: num(4) as u64,
                events: num(5) as u64,
                rss_per_run: num(6),
                heap_per_run: num(7),
                log_bytes_per_run: num(8),
                redis_per_run: num(9),
            };
            eprintln!(
                "memory {store:6} {shape:8} tick {tick_us:3} us: RSS {:.1} KiB/run, heap {:.1} KiB/run, Redis {:.1} KiB/run",
                row.rss_per_run / 1024.0,
                row.heap_per_run / 1024.0,
                row.redis_per_run / 1024.0
            );
            rows.push(row);
        }
    }
    rows
}

pub fn table(rows: &[MemRow]) -> String {
    let mut s = String::from(
        "| store | detached runs | runs | agent events per run | server RSS growth per run (KiB) | server live heap growth per run (KiB) | event JSON held per run (KiB) | Redis `used_memory` growth per run (KiB) |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {} | {} |\n",
            if r.store == "memory" {
                "in-memory"
            } else {
                "Redis"
            },
            if r.tick_us > 0 {
                format!(
                    "{}, agent paced (an event every {} µs: batches of 1)",
                    r.shape, r.tick_us
                )
            } else {
                r.shape.clone()
            },
            r.runs,
            r.events,
            r.rss_per_run / 1024.0,
            r.heap_per_run / 1024.0,
            if r.store == "memory" {
                format!("{:.1}", r.log_bytes_per_run / 1024.0)
            } else {
                "–".into()
            },
            if r.store == "redis" {
                format!("{:.1}", r.redis_per_run / 1024.0)
            } else {
                "–".into()
            },
        ));
    }
    s
}
