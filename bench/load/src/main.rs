//! Load benchmark (loopback only, bounded in time): agui-sdk-server against the `ag-ui`
//! crate's axum integration, the Python reference SDK on uvicorn and the TypeScript
//! reference encoder on Node `http`, all serving the same agent (see `srv_agui.rs`).
//!
//! ```text
//! scripts/setup-interop.sh
//! cd bench/load && cargo run --release -- [servers...]   # default: all four
//! ```
//!
//! For each server, each phase on a fresh server process:
//! * `open C` (C = 1,000 and 10,000): C concurrent streams, each emitting one event a
//!   second for a few seconds: server memory per open stream (RSS growth / C), how many
//!   streams opened and completed, and emit-to-receive delay.
//! * `throughput`: 64 streams emitting as fast as they can for at most 10 s: events
//!   per second delivered to the clients.
//! * `latency`: 100 streams, one event every 10 ms: emit-to-receive delay, median and
//!   p99 (microseconds, same machine clock on both ends).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn command(server: &str) -> Command {
    let exe_dir = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let interop = repo().join("interop");
    let mut c = match server {
        "agui-sdk-server" => Command::new(exe_dir.join("srv_agui")),
        "ag-ui-crate" => Command::new(exe_dir.join("srv_agrs")),
        "bare-axum" => Command::new(exe_dir.join("srv_bare")),
        "ts-encoder" => {
            let mut c = Command::new("node");
            c.arg(interop.join("bench-server.mjs"));
            c
        }
        "py-sdk" => {
            let mut c = Command::new(interop.join(".venv/bin/python"));
            c.arg(interop.join("bench_server.py"));
            c
        }
        other => panic!("unknown server {other}"),
    };
    c.arg("0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    c
}

async fn spawn(server: &str) -> (Child, SocketAddr) {
    let mut child = command(server)
        .spawn()
        .unwrap_or_else(|e| panic!("{server}: {e}"));
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .expect("server starts")
        .unwrap()
        .expect("server prints its port");
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .unwrap()
        .parse()
        .unwrap();
    tokio::spawn(async move { while let Ok(Some(_)) = out.next_line().await {} });
    tokio::time::sleep(Duration::from_millis(300)).await;
    (child, SocketAddr::from(([127, 0, 0, 1], port)))
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[derive(Default)]
struct Shared {
    first_content: AtomicUsize,
    events: AtomicU64,
    completed: AtomicUsize,
    failed: AtomicUsize,
}

/// One stream: POST, read the SSE body, record the delay of every content event.
async fn one_stream(
    addr: SocketAddr,
    run: usize,
    events: u64,
    interval_ms: u64,
    deadline: Instant,
    shared: Arc<Shared>,
) -> Vec<u32> {
    let mut lat = Vec::with_capacity(events.min(100_000) as usize);
    let body = format!(
        r#"{{"threadId":"t{run}","runId":"r{run}","messages":[],"forwardedProps":{{"events":{events},"intervalMs":{interval_ms}}}}}"#
    );
    let mut sock = None;
    for _ in 0..50 {
        match TcpStream::connect(addr).await {
            Ok(s) => {
                sock = Some(s);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let Some(mut sock) = sock else {
        shared.failed.fetch_add(1, Ordering::Relaxed);
        return lat;
    };
    let _ = sock.set_nodelay(true);
    let req = format!(
        "POST /bench HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if sock.write_all(req.as_bytes()).await.is_err() {
        shared.failed.fetch_add(1, Ordering::Relaxed);
        return lat;
    }
    // The body is read as raw bytes: chunk-size lines never contain `data: `, and an
    // event line never spans a chunk boundary in a way that matters for counting,
    // because we scan for complete `\n\n`-terminated blocks after stripping chunk
    // framing loosely (lines are split on '\n').
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut tmp = vec![0u8; 64 * 1024];
    let mut seen_first = false;
    let mut finished = false;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            break;
        }
        let n = match tokio::time::timeout(remaining, sock.read(&mut tmp)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => n,
        };
        let t_recv = now_us();
        buf.extend_from_slice(&tmp[..n]);
        let mut consumed = 0;
        while let Some(pos) = buf[consumed..].iter().position(|&b| b == b'\n') {
            let line = &buf[consumed..consumed + pos];
            consumed += pos + 1;
            let Some(data) = line.strip_prefix(b"data: ") else {
                continue;
            };
            shared.events.fetch_add(1, Ordering::Relaxed);
            if data.windows(20).any(|w| w == b"TEXT_MESSAGE_CONTENT") {
                if let Some(i) = find(data, b"\"delta\":\"") {
                    let digits = &data[i + 9..];
                    let end = digits.iter().position(|b| !b.is_ascii_digit()).unwrap_or(0);
                    if let Ok(t) = std::str::from_utf8(&digits[..end])
                        .unwrap_or("")
                        .parse::<u64>()
                    {
                        lat.push(t_recv.saturating_sub(t).min(u32::MAX as u64) as u32);
                    }
                }
                if !seen_first {
                    seen_first = true;
                    shared.first_content.fetch_add(1, Ordering::Relaxed);
                }
            } else if find(data, b"\"RUN_FINISHED\"").is_some() {
                finished = true;
            }
        }
        buf.drain(..consumed);
        if finished {
            break;
        }
    }
    if finished {
        shared.completed.fetch_add(1, Ordering::Relaxed);
    } else {
        shared.failed.fetch_add(1, Ordering::Relaxed);
    }
    lat
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

struct PhaseResult {
    streams: usize,
    opened: usize,
    completed: usize,
    events: u64,
    secs: f64,
    rss_base_kib: u64,
    rss_peak_kib: u64,
    p50_us: u32,
    p99_us: u32,
}

async fn phase(
    server: &str,
    streams: usize,
    events: u64,
    interval_ms: u64,
    limit: Duration,
) -> PhaseResult {
    let (child, addr) = spawn(server).await;
    let pid = child.id().unwrap_or(0);
    let rss_base = rss_kib(pid);
    let shared = Arc::new(Shared::default());
    let t0 = Instant::now();
    let deadline = t0 + limit;
    let mut tasks = Vec::with_capacity(streams);
    for i in 0..streams {
        tasks.push(tokio::spawn(one_stream(
            addr,
            i,
            events,
            interval_ms,
            deadline,
            shared.clone(),
        )));
        if i % 250 == 249 {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    // Memory with every stream open.
    let mut rss_peak = rss_kib(pid);
    let mut open_at = None;
    while Instant::now() < deadline {
        rss_peak = rss_peak.max(rss_kib(pid));
        if open_at.is_none() && shared.first_content.load(Ordering::Relaxed) >= streams {
            open_at = Some(Instant::now());
        }
        if let Some(t) = open_at {
            // A few samples after all are open.
            if t.elapsed() > Duration::from_millis(500) {
                break;
            }
        }
        if shared.completed.load(Ordering::Relaxed) + shared.failed.load(Ordering::Relaxed)
            >= streams
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut lat = Vec::new();
    for t in tasks {
        if let Ok(l) = t.await {
            lat.extend(l);
        }
    }
    let secs = t0.elapsed().as_secs_f64().min(limit.as_secs_f64());
    drop(child);
    lat.sort_unstable();
    let pct = |p: f64| -> u32 {
        if lat.is_empty() {
            0
        } else {
            lat[((lat.len() - 1) as f64 * p) as usize]
        }
    };
    PhaseResult {
        streams,
        opened: shared.first_content.load(Ordering::Relaxed),
        completed: shared.completed.load(Ordering::Relaxed),
        events: shared.events.load(Ordering::Relaxed),
        secs,
        rss_base_kib: rss_base,
        rss_peak_kib: rss_peak,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
    }
}

#[tokio::main]
async fn main() {
    let mut servers: Vec<String> = std::env::args().skip(1).collect();
    if servers.is_empty() {
        servers = ["agui-sdk-server", "ag-ui-crate", "ts-encoder", "py-sdk"]
            .map(String::from)
            .to_vec();
    }
    println!("| server | phase | streams opened/completed | events | events/s | RSS base → peak (MiB) | KiB per stream | delay p50 / p99 (µs) |");
    println!("|---|---|---|---|---|---|---|---|");
    for s in &servers {
        for (name, streams, events, interval, limit) in [
            ("open 1000", 1_000usize, 5u64, 1_000u64, 40u64),
            ("open 10000", 10_000, 5, 1_000, 60),
            ("throughput", 64, 200_000, 0, 10),
            ("latency", 100, 100, 10, 20),
        ] {
            let r = phase(s, streams, events, interval, Duration::from_secs(limit)).await;
            let per_stream = if name.starts_with("open") {
                format!(
                    "{:.1}",
                    r.rss_peak_kib.saturating_sub(r.rss_base_kib) as f64 / r.streams as f64
                )
            } else {
                "-".into()
            };
            println!(
                "| {s} | {name} | {}/{} of {} | {} | {:.0} | {:.1} → {:.1} | {per_stream} | {} / {} |",
                r.opened,
                r.completed,
                r.streams,
                r.events,
                r.events as f64 / r.secs,
                r.rss_base_kib as f64 / 1024.0,
                r.rss_peak_kib as f64 / 1024.0,
                r.p50_us,
                r.p99_us
            );
        }
    }
}
