//! Phase 1, store throughput: events appended per second through a [`RunStore`], by
//! batch size and number of concurrent producers (one run each at a time), on one
//! store instance (one replica).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_redis::RedisRunStore;
use agui_sdk_server::runs::{
    Created, InMemoryRunStore, NewRun, RunKey, RunLimits, RunStatus, RunStore,
};
use bytes::Bytes;

use crate::common::{self, quantile};

/// Events in each run a producer writes before it starts the next.
pub const RUN_LEN: usize = 1024;

/// One measured configuration.
#[derive(Debug, Clone)]
pub struct Row {
    pub store: &'static str,
    pub batch: usize,
    pub producers: usize,
    pub events: u64,
    pub secs: f64,
    pub append_p50_us: f64,
    pub append_p99_us: f64,
    /// CPU of this process per event, microseconds.
    pub cpu_us: f64,
    /// CPU of the Redis server per event, microseconds.
    pub redis_cpu_us: f64,
    /// CPU of an idle replica (another process holding a store on the same prefix, no
    /// runs, no viewers) per append made here, microseconds.
    pub idle_replica_us: f64,
    /// The lowest and highest rate over the rounds (this row is the median one).
    pub spread: (f64, f64),
}

impl Row {
    pub fn rate(&self) -> f64 {
        self.events as f64 / self.secs
    }
}

/// `producers` tasks, each creating runs of [`RUN_LEN`] events and appending them in
/// batches of `batch` (the last batch terminal), for `secs`.
async fn drive(
    store: Arc<dyn RunStore>,
    tag: &str,
    batch: usize,
    producers: usize,
    secs: f64,
    payload: &Bytes,
) -> (u64, f64, Vec<f64>) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for p in 0..producers {
        let store = store.clone();
        let payload = payload.clone();
        let tag = tag.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(4096);
            let mut events = 0u64;
            let mut n = 0u64;
            'runs: while Instant::now() < deadline {
                let run_id = format!("{tag}-p{p}-r{n}");
                n += 1;
                let key = RunKey::derive("bench", "store", &run_id);
                let created = store
                    .create(NewRun {
                        key: key.clone(),
                        run_id,
                        thread_id: "bench-thread".into(),
                        agent: "store".into(),
                        body_hash: "0".repeat(64),
                        replica: "bench-replica".into(),
                        lease: Duration::from_secs(30),
                        thread: None,
                    })
                    .await
                    .expect("create");
                let Created::New(fence) = created else {
                    panic!("run exists already")
                };
                let mut head = 0usize;
                while head < RUN_LEN {
                    let k = batch.min(RUN_LEN - head);
                    let terminal = (head + k == RUN_LEN).then_some(RunStatus::Finished);
                    let evs = vec![payload.clone(); k];
                    let t = Instant::now();
                    store
                        .append(&key, fence, head as u64 + 1, evs, terminal)
                        .await
                        .expect("append");
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                    head += k;
                    events += k as u64;
                    if Instant::now() >= deadline {
                        break 'runs;
                    }
                }
            }
            (events, lat)
        }));
    }
    let mut events = 0;
    let mut lat = Vec::new();
    for t in tasks {
        let (e, l) = t.await.expect("producer");
        events += e;
        lat.extend(l);
    }
    (events, start.elapsed().as_secs_f64(), lat)
}

pub async fn run(
    redis_url: &str,
    secs: f64,
    rounds: usize,
    batches: &[usize],
    producers: &[usize],
) -> Vec<Row> {
    let payload = common::content_json("bench-message-0001");
    assert_eq!(payload.len(), common::EVENT_BYTES);
    let mut rows = Vec::new();
    let mut con = common::redis_con(redis_url).await;
    let base = common::unique_prefix("store");

    // Warm-up: the allocator, the runtime, Redis's script cache.
    {
        let mem: Arc<dyn RunStore> = Arc::new(InMemoryRunStore::new(RunLimits::default()));
        drive(mem, "warm", 16, 8, 0.3, &payload).await;
        let prefix = format!("{base}-warm");
        let redis: Arc<dyn RunStore> = Arc::new(
            RedisRunStore::connect(redis_url, &prefix, limits())
                .await
                .expect("Redis store"),
        );
        drive(redis, "warm", 16, 8, 0.3, &payload).await;
        common::redis_delete_prefix(&mut con, &prefix).await;
    }

    for round in 0..rounds {
        for &batch in batches {
            for &prods in producers {
                for kind in ["memory", "redis"] {
                    let prefix = format!("{base}-b{batch}-p{prods}-{round}");
                    let store: Arc<dyn RunStore> = if kind == "memory" {
                        Arc::new(InMemoryRunStore::new(RunLimits::default()))
                    } else {
                        Arc::new(
                            RedisRunStore::connect(redis_url, &prefix, limits())
                                .await
                                .expect("Redis store"),
                        )
                    };
                    let idle = if kind == "redis" {
                        Some(IdleReplica::start(redis_url, &prefix).await)
                    } else {
                        None
                    };
                    let cpu0 = common::process_cpu();
                    let rcpu0 = common::redis_cpu(&mut con).await;
                    let (events, el, mut lat) =
                        drive(store.clone(), kind, batch, prods, secs, &payload).await;
                    let cpu = (common::process_cpu() - cpu0).as_secs_f64();
                    let rcpu = common::redis_cpu(&mut con).await - rcpu0;
                    let idle_cpu = match idle {
                        Some(i) => i.stop().await,
                        None => 0.0,
                    };
                    let appends = lat.len() as u64;
                    drop(store);
                    if kind == "redis" {
                        common::redis_delete_prefix(&mut con, &prefix).await;
                    }
                    let row = Row {
                        store: kind,
                        batch,
                        producers: prods,
                        events,
                        secs: el,
                        append_p50_us: quantile(&mut lat, 0.5),
                        append_p99_us: quantile(&mut lat, 0.99),
                        cpu_us: cpu * 1e6 / events.max(1) as f64,
                        redis_cpu_us: if kind == "redis" {
                            rcpu * 1e6 / events.max(1) as f64
                        } else {
                            0.0
                        },
                        spread: (0.0, 0.0),
                        idle_replica_us: idle_cpu * 1e6 / appends.max(1) as f64,
                    };
                    eprintln!(
                    "round {round} store {kind:6} batch {batch:3} producers {prods:2}: {:>10.0} events/s, append p50 {:.0} us p99 {:.0} us",
                    row.rate(),
                    row.append_p50_us,
                    row.append_p99_us
                );
                    rows.push(row);
                }
            }
        }
    }
    crate::common::medians(
        rows,
        |r| (r.store, r.batch, r.producers),
        Row::rate,
        |r, s| r.spread = s,
    )
}

/// Another replica: a child process holding a [`RedisRunStore`] on the same prefix,
/// with no runs and no viewers, for the CPU its wake-up listener spends.
struct IdleReplica {
    child: tokio::process::Child,
}

impl IdleReplica {
    async fn start(redis_url: &str, prefix: &str) -> Self {
        use tokio::io::AsyncBufReadExt;
        let exe = std::env::current_exe().expect("current exe");
        let mut child = tokio::process::Command::new(exe)
            .args(["idle-replica", "--redis", redis_url, "--prefix", prefix])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("idle replica");
        let out = child.stdout.as_mut().expect("stdout");
        let mut line = String::new();
        tokio::io::BufReader::new(out)
            .read_line(&mut line)
            .await
            .expect("idle replica ready");
        assert_eq!(line.trim(), "ready", "idle replica");
        IdleReplica { child }
    }

    /// Stops it; the CPU seconds it used since it was ready.
    async fn stop(mut self) -> f64 {
        drop(self.child.stdin.take());
        let out = self.child.wait_with_output().await.expect("idle replica");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("cpu "))
            .and_then(|v| v.trim().parse().ok())
            .expect("idle replica CPU")
    }
}

/// The idle replica's process: connects, says `ready`, waits for its standard input to
/// close, prints `cpu SECONDS` (used after it said `ready`).
pub async fn idle_replica(redis_url: &str, prefix: &str) {
    use std::io::Write;
    use tokio::io::AsyncReadExt;
    let store = RedisRunStore::connect(redis_url, prefix, limits())
        .await
        .expect("Redis store");
    // Let the pattern subscription settle.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cpu0 = common::process_cpu();
    println!("ready");
    std::io::stdout().flush().expect("stdout");
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    println!("cpu {:.6}", (common::process_cpu() - cpu0).as_secs_f64());
    drop(store);
}

/// Short retention, so that what the phase leaves behind expires by itself even if the
/// clean-up does not run.
fn limits() -> RunLimits {
    RunLimits::shared().retention(Duration::from_secs(60))
}

/// The markdown table of `rows`, with the Redis/memory ratio per configuration.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| batch | producers | in-memory events/s | Redis events/s (min–max) | Redis per producer | Redis / in-memory | Redis append p50 / p99 (µs) | bench process CPU µs/event: in-memory; Redis | Redis server CPU µs/event | idle replica CPU µs per append |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for m in rows.iter().filter(|r| r.store == "memory") {
        let Some(r) = rows
            .iter()
            .find(|r| r.store == "redis" && r.batch == m.batch && r.producers == m.producers)
        else {
            continue;
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} ({}–{}) | {} | {:.3} | {:.0} / {:.0} | {:.2}; {:.2} | {:.2} | {:.1} |\n",
            m.batch,
            m.producers,
            fmt_rate(m.rate()),
            fmt_rate(r.rate()),
            fmt_k(r.spread.0),
            fmt_k(r.spread.1),
            fmt_rate(r.rate() / r.producers as f64),
            r.rate() / m.rate(),
            r.append_p50_us,
            r.append_p99_us,
            m.cpu_us,
            r.cpu_us,
            r.redis_cpu_us,
            r.idle_replica_us,
        ));
    }
    s
}

/// `238364.0` as `238k`, `12118540.0` as `12.1M`.
pub fn fmt_k(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else {
        format!("{:.0}k", x / 1e3)
    }
}

/// `1234567.0` as `1,234,567`.
pub fn fmt_rate(x: f64) -> String {
    let n = x.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
