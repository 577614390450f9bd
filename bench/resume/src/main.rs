//! Resumable-run benchmark (loopback only): run-store throughput, end-to-end SSE
//! throughput with commit-before-send, re-attach latency, memory per detached run.
//! See README.md.
//!
//! ```text
//! resume-bench [--redis URL] [--phases store,e2e,resume,memory] [--secs S] [--rounds R]
//!              [--e2e-events N] [--e2e-secs S] [--reattaches N]
//!              [--batches 1,16,128] [--producers 1,8,64] [--streams 1,8]
//!              [--memory-runs K] [--memory-events E] [--out FILE]
//! ```

mod common;
mod e2e;
mod memory;
mod store;

use std::time::Instant;

struct Args {
    redis: String,
    phases: Vec<String>,
    secs: f64,
    rounds: usize,
    e2e_events: u64,
    e2e_secs: f64,
    reattaches: usize,
    memory_runs: usize,
    memory_events: u64,
    out: Option<String>,
    batches: Vec<usize>,
    producers: Vec<usize>,
    streams: Vec<usize>,
    // memory-child only
    store: String,
    shape: String,
    tick_us: u64,
    prefix: String,
}

fn parse(mut it: impl Iterator<Item = String>) -> Args {
    let mut a = Args {
        redis: "redis://127.0.0.1:6379".into(),
        phases: ["store", "e2e", "resume", "memory"]
            .map(String::from)
            .to_vec(),
        secs: 1.5,
        rounds: 5,
        e2e_events: 10_000,
        e2e_secs: 1.5,
        reattaches: 500,
        memory_runs: 1000,
        memory_events: 100,
        out: None,
        batches: vec![1, 16, 128],
        producers: vec![1, 8, 64],
        streams: vec![1, 8],
        store: "memory".into(),
        shape: "running".into(),
        tick_us: 0,
        prefix: String::new(),
    };
    while let Some(flag) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--redis" => a.redis = v(),
            "--phases" => a.phases = v().split(',').map(String::from).collect(),
            "--secs" => a.secs = v().parse().expect("--secs"),
            "--rounds" => a.rounds = v().parse().expect("--rounds"),
            "--e2e-events" => a.e2e_events = v().parse().expect("--e2e-events"),
            "--e2e-secs" => a.e2e_secs = v().parse().expect("--e2e-secs"),
            "--reattaches" => a.reattaches = v().parse().expect("--reattaches"),
            "--memory-runs" | "--runs" => a.memory_runs = v().parse().expect("--memory-runs"),
            "--memory-events" | "--events" => {
                a.memory_events = v().parse().expect("--memory-events")
            }
            "--out" => a.out = Some(v()),
            "--batches" => a.batches = list(&v()),
            "--producers" => a.producers = list(&v()),
            "--streams" => a.streams = list(&v()),
            "--store" => a.store = v(),
            "--shape" => a.shape = v(),
            "--prefix" => a.prefix = v(),
            "--tick-us" => a.tick_us = v().parse().expect("--tick-us"),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn list(s: &str) -> Vec<usize> {
    s.split(',').map(|x| x.parse().expect("a number")).collect()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores ({cpu})")
}

/// The 1-minute load average (`/proc/loadavg`).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

async fn redis_version(url: &str) -> String {
    let mut con = common::redis_con(url).await;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut con)
        .await
        .unwrap_or_default();
    let persistence: String = redis::cmd("INFO")
        .arg("persistence")
        .query_async(&mut con)
        .await
        .unwrap_or_default();
    let field = |s: &str, k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    format!(
        "Redis {} (appendonly: {})",
        field(&info, "redis_version:"),
        if field(&persistence, "aof_enabled:") == "1" {
            "yes"
        } else {
            "no"
        }
    )
}

#[tokio::main]
async fn main() {
    let mut argv = std::env::args().skip(1).peekable();
    if argv.peek().map(String::as_str) == Some("memory-child") {
        argv.next();
        let a = parse(argv);
        memory::child(
            &a.redis,
            &a.store,
            &a.shape,
            a.memory_runs,
            a.memory_events,
            a.tick_us,
        )
        .await;
        // Runs left running die with the process.
        std::process::exit(0);
    }
    if argv.peek().map(String::as_str) == Some("idle-replica") {
        argv.next();
        let a = parse(argv);
        store::idle_replica(&a.redis, &a.prefix).await;
        return;
    }
    let a = parse(argv);
    let started = Instant::now();
    let load0 = loadavg();
    let mut md = String::new();
    md.push_str(&format!(
        "Machine: {}; {}; one process (server, client and store callers share the tokio runtime).\n\n",
        machine(),
        redis_version(&a.redis).await
    ));
    let has = |p: &str| a.phases.iter().any(|x| x == p);

    if has("store") {
        let rows = store::run(&a.redis, a.secs, a.rounds, &a.batches, &a.producers).await;
        md.push_str(&format!(
            "## 1. Store throughput\n\nEvents of {} bytes, runs of {} events, {:.1} s per cell.\n\n{}\n",
            common::EVENT_BYTES,
            store::RUN_LEN,
            a.secs,
            store::table(&rows)
        ));
    }
    if has("e2e") {
        let rows = e2e::run_e2e(&a.redis, a.e2e_events, a.e2e_secs, a.rounds, &a.streams).await;
        md.push_str(&format!(
            "## 2. End to end over HTTP (SSE)\n\nRuns of {} agent events ({} with RUN_STARTED and RUN_FINISHED), about {:.1} s per cell.\n\n{}\n",
            a.e2e_events,
            a.e2e_events + 2,
            a.e2e_secs,
            e2e::e2e_table(&rows)
        ));
    }
    if has("resume") {
        let rows = e2e::run_resume(&a.redis, a.reattaches).await;
        md.push_str(&format!(
            "## 3. Re-attach latency\n\nFrom sending the GET (new connection) to the first missed event.\n\n{}\n",
            e2e::resume_table(&rows)
        ));
    }
    if has("memory") {
        let rows = memory::run(&a.redis, a.memory_runs, a.memory_events);
        md.push_str(&format!(
            "## 4. Memory per detached run\n\n{}\n",
            memory::table(&rows)
        ));
    }
    md.push_str(&format!(
        "Total time: {:.0} s. Load average (1 min) at the start: {load0}; at the end: {}.\n",
        started.elapsed().as_secs_f64(),
        loadavg()
    ));
    println!("{md}");
    if let Some(out) = &a.out {
        std::fs::write(out, &md).expect("write --out");
    }
}
