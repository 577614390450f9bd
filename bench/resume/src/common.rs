//! What every phase shares: the event payload, clocks, process figures, Redis
//! housekeeping, percentiles and the HTTP server under test.

use std::net::SocketAddr;
use std::time::Duration;

use agui_sdk_core::Event;
use agui_sdk_server::runs::Resumable;
use agui_sdk_server::{agent_fn, AgentError, AgentRouter, Emitter, RunContext};
use axum::serve::ListenerExt;
use bytes::Bytes;

/// The owner token every request of the benchmark carries.
pub const TOKEN: &str = "bench_token_0123456789abcdefghijklmnop";

/// The size of one benchmark event's canonical JSON, in bytes.
pub const EVENT_BYTES: usize = 150;

/// A `TEXT_MESSAGE_CONTENT` whose canonical JSON is exactly [`EVENT_BYTES`] bytes.
pub fn content_event(message_id: &str) -> Event {
    let probe = Event::text_message_content(message_id, "");
    let base = probe.to_json_string().len();
    let delta: String = "the quick brown fox jumps over the lazy dog "
        .chars()
        .cycle()
        .take(EVENT_BYTES.saturating_sub(base))
        .collect();
    Event::text_message_content(message_id, delta)
}

/// The canonical JSON of [`content_event`].
pub fn content_json(message_id: &str) -> Bytes {
    let mut out = Vec::new();
    content_event(message_id).write_json(&mut out);
    Bytes::from(out)
}

/// CPU time used by this process so far (user + system).
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// This process's resident set, in bytes (`VmRSS` of `/proc/self/status`).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Bytes glibc malloc has handed out and not had back (small blocks in every arena
/// plus mmapped blocks): the live heap.
pub fn heap_bytes() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's statistics (glibc 2.33 and later).
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

/// The `p`-quantile (0..=1) of `v` (sorted here), nearest rank.
pub fn quantile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// A Redis connection for housekeeping (never the store's own).
pub async fn redis_con(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("Redis reachable")
}

/// CPU seconds the Redis server has used (user + system), from `INFO cpu`.
pub async fn redis_cpu(con: &mut redis::aio::MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(con)
        .await
        .unwrap_or_default();
    info.lines()
        .filter(|l| l.starts_with("used_cpu_sys:") || l.starts_with("used_cpu_user:"))
        .filter_map(|l| {
            l.split_once(':')
                .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        })
        .sum()
}

/// Bytes the Redis server holds (`used_memory` of `INFO memory`).
pub async fn redis_used_memory(con: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(con)
        .await
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Deletes every key under `prefix` (SCAN + DEL); returns how many went.
pub async fn redis_delete_prefix(con: &mut redis::aio::MultiplexedConnection, prefix: &str) -> u64 {
    let pattern = format!("{prefix}:*");
    let mut cursor: u64 = 0;
    let mut deleted = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(con)
            .await
            .expect("SCAN");
        if !keys.is_empty() {
            let n: u64 = redis::cmd("DEL")
                .arg(&keys)
                .query_async(con)
                .await
                .expect("DEL");
            deleted += n;
        }
        if next == 0 {
            return deleted;
        }
        cursor = next;
    }
}

/// A key prefix no other run of the benchmark (or anything else) uses.
pub fn unique_prefix(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("agui-bench-resume-{}-{nanos:x}-{what}", std::process::id())
}

/// The `events` and `tickUs` numbers of a request's `forwardedProps`.
fn props(input: &agui_sdk_core::RunAgentInput) -> (u64, u64, bool) {
    let p = input.forwarded_props.as_ref().map(|p| p.to_value());
    let p = p.as_ref();
    let num = |k: &str| p.and_then(|p| p.get(k)).and_then(|v| v.as_u64());
    let hold = p
        .and_then(|p| p.get("hold"))
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    (
        num("events").unwrap_or(1000),
        num("tickUs").unwrap_or(0),
        hold,
    )
}

/// The agent under test, in the emitter shape (`agent_fn`, the default buffer of 16):
/// `TEXT_MESSAGE_START`, `events - 2` contents of [`EVENT_BYTES`] bytes,
/// `TEXT_MESSAGE_END`, as fast as it can or one every `tickUs` microseconds; with
/// `hold`, it then waits until the run is cancelled (a run left running).
pub fn emitter_agent() -> agui_sdk_server::FnAgent {
    agent_fn(|input, ctx: RunContext, tx: Emitter| async move {
        let (n, tick_us, hold) = props(&input);
        let msg = format!("{}-m", input.run_id);
        let content = content_event(&msg);
        tx.emit(Event::text_message_start(&msg)).await?;
        let mut tick = (tick_us > 0).then(|| {
            let mut i = tokio::time::interval(Duration::from_micros(tick_us));
            i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            i
        });
        for _ in 0..n.saturating_sub(2) {
            if let Some(t) = tick.as_mut() {
                t.tick().await;
            }
            tx.emit(content.clone()).await?;
        }
        tx.emit(Event::text_message_end(&msg)).await?;
        if hold {
            ctx.cancelled().await;
        }
        Ok::<(), AgentError>(())
    })
}

/// The agent under test as a plain stream: the same events as [`emitter_agent`] (as
/// fast as it can), every one ready at once.
pub struct IterAgent;

impl agui_sdk_server::Agent for IterAgent {
    fn run(&self, input: agui_sdk_core::RunAgentInput, _ctx: RunContext) -> agui_sdk_server::AgentStream {
        use futures_util::StreamExt;
        let (n, _, _) = props(&input);
        let msg = format!("{}-m", input.run_id);
        let content = content_event(&msg);
        let start = Event::text_message_start(&msg);
        let end = Event::text_message_end(&msg);
        let body = (0..n.saturating_sub(2)).map(move |_| content.clone());
        futures_util::stream::iter(
            std::iter::once(start)
                .chain(body)
                .chain(std::iter::once(end))
                .map(Ok::<_, AgentError>),
        )
        .boxed()
    }
}

/// Serves `emit` ([`emitter_agent`]) and `iter` ([`IterAgent`]) on a free loopback
/// port, with `TCP_NODELAY` on accepted sockets; resumable runs when `resumable` is
/// given.
pub async fn start_server(
    resumable: Option<Resumable>,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let mut router = AgentRouter::new()
        .agent("emit", emitter_agent())
        .agent("iter", IterAgent)
        .verify(false);
    if let Some(r) = resumable {
        router = router.resumable(r);
    }
    let app = router.into_router();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, task)
}

/// The JSON body starting run `run_id` with these `forwardedProps`.
pub fn run_body(run_id: &str, props: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "threadId": "bench-thread",
        "runId": run_id,
        "messages": [],
        "forwardedProps": props,
    }))
    .expect("json")
}

/// Starts a run over HTTP; `resumable` adds the opt-in and the owner token.
pub async fn post_run(
    client: &reqwest::Client,
    addr: SocketAddr,
    agent: &str,
    run_id: &str,
    props: serde_json::Value,
    resumable: bool,
) -> reqwest::Response {
    let mut req = client
        .post(format!("http://{addr}/{agent}"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(run_body(run_id, props));
    if resumable {
        req = req
            .header("agui-resumable", "1")
            .header("agui-resume-token", TOKEN);
    }
    let res = req.send().await.expect("POST");
    assert!(res.status().is_success(), "POST /{agent}: {}", res.status());
    res
}

/// Reads an SSE body line by line: counts `data:` lines, remembers the last `id:`.
#[derive(Debug, Default)]
pub struct SseReader {
    partial: Vec<u8>,
    /// `data:` lines seen.
    pub events: u64,
    /// Bytes seen.
    pub bytes: u64,
    /// The seq of the last `id: {runId}:{seq}` line.
    pub last_seq: u64,
}

impl SseReader {
    /// Feeds a chunk; returns how many `data:` lines it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> u64 {
        self.bytes += chunk.len() as u64;
        let before = self.events;
        let mut rest = chunk;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(nl);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line(line);
            } else {
                let mut l = std::mem::take(&mut self.partial);
                l.extend_from_slice(line);
                self.line(&l);
            }
        }
        self.partial.extend_from_slice(rest);
        self.events - before
    }

    fn line(&mut self, line: &[u8]) {
        if line.starts_with(b"data:") {
            self.events += 1;
        } else if let Some(id) = line.strip_prefix(b"id: ") {
            if let Some(seq) = id
                .iter()
                .rposition(|&b| b == b':')
                .and_then(|i| std::str::from_utf8(&id[i + 1..]).ok())
                .and_then(|s| s.parse().ok())
            {
                self.last_seq = seq;
            }
        }
    }
}

/// Groups `rows` by `key` (in first-seen order) and keeps, for each group, the row of
/// median `rate`, told the group's lowest and highest rate through `set`.
pub fn medians<T, K: PartialEq>(
    rows: Vec<T>,
    key: impl Fn(&T) -> K,
    rate: impl Fn(&T) -> f64,
    set: impl Fn(&mut T, (f64, f64)),
) -> Vec<T> {
    let mut groups: Vec<(K, Vec<T>)> = Vec::new();
    for r in rows {
        let k = key(&r);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(r),
            None => groups.push((k, vec![r])),
        }
    }
    groups
        .into_iter()
        .map(|(_, mut v)| {
            v.sort_by(|a, b| rate(a).partial_cmp(&rate(b)).unwrap());
            let lo = rate(&v[0]);
            let hi = rate(&v[v.len() - 1]);
            let mut m = v.swap_remove(v.len() / 2);
            set(&mut m, (lo, hi));
            m
        })
        .collect()
}
