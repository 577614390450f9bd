//! The thread-list driver: how long `GET /copilotkit/threads` takes to answer the first
//! page of one user's threads among many users', and what a stored thread costs, on
//! each server it is given, one server at a time, with the same requests.
//!
//! ```text
//! ck-list --server rust='target/release/ck-server --short' \
//!         --server node='node --expose-gc node175/list-server.mjs' --by-agent node \
//!         [--threads 100000] [--mine 10000] [--page 50] [--lists 30] [--warmup 5] \
//!         [--redis rust-redis=127.0.0.1:6379] [--concurrency 8] [--out list-last-run.md]
//! ```
//!
//! For each server, in a fresh process:
//!
//! 1. a warm-up of 200 runs on threads of their own, then `POST /debug/gc` and the
//!    server's `VmRSS` and heap;
//! 2. `--threads` threads of one short run each (`POST …/agent/{agent}/run`,
//!    `--concurrency` at a time), every `threads / mine`-th of them "mine": mine run as
//!    the user `Bearer me`, the others as one of 99 other users. A server named with
//!    `--by-agent` has no notion of users (CopilotKit's in-memory runner keeps every
//!    thread in one map): there mine run on the agent `bench` and the others on the
//!    agent `other`, the one filter its list has;
//! 3. gc, `VmRSS` and heap again (and `used_memory` of the Redis a server named with
//!    `--redis` keeps its threads in): the growth divided by `--threads` is the memory
//!    per stored thread;
//! 4. `--warmup`, then `--lists` measured `GET …/threads?agentId=bench&limit={page}` as
//!    `Bearer me`: from sending the request to the last byte of the answer (median,
//!    p90), its size and how many threads it holds;
//! 5. the whole list, following `nextCursor` page after page: how many threads in all
//!    (it must be `--mine`) and how long it took.

use std::time::{Duration, Instant};

use agui_copilotkit_bench::{gc, http_client, rss_kib, Server};
use futures_util::StreamExt;
use serde_json::{json, Value};

struct Options {
    servers: Vec<(String, String)>,
    /// Servers whose threads live in this Redis (`NAME=HOST:PORT`): its `used_memory`
    /// counts as theirs.
    redis: Vec<(String, String)>,
    by_agent: Vec<String>,
    threads: usize,
    mine: usize,
    page: usize,
    lists: usize,
    warmup: usize,
    concurrency: usize,
    out: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        servers: Vec::new(),
        redis: Vec::new(),
        by_agent: Vec::new(),
        threads: 100_000,
        mine: 10_000,
        page: 50,
        lists: 30,
        warmup: 5,
        concurrency: 8,
        out: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--server" => {
                let v = value();
                let (name, cmd) = v
                    .split_once('=')
                    .unwrap_or_else(|| panic!("--server NAME=COMMAND, not {v:?}"));
                o.servers.push((name.to_owned(), cmd.to_owned()));
            }
            "--by-agent" => o.by_agent.push(value()),
            "--redis" => {
                let v = value();
                let (name, addr) = v
                    .split_once('=')
                    .unwrap_or_else(|| panic!("--redis NAME=HOST:PORT, not {v:?}"));
                o.redis.push((name.to_owned(), addr.to_owned()));
            }
            "--threads" => o.threads = value().parse().expect("--threads N"),
            "--mine" => o.mine = value().parse().expect("--mine N"),
            "--page" => o.page = value().parse().expect("--page N"),
            "--lists" => o.lists = value().parse().expect("--lists N"),
            "--warmup" => o.warmup = value().parse().expect("--warmup N"),
            "--concurrency" => o.concurrency = value().parse().expect("--concurrency N"),
            "--out" => o.out = Some(value()),
            other => panic!("unknown argument {other:?}"),
        }
    }
    assert!(!o.servers.is_empty(), "at least one --server NAME=COMMAND");
    assert!(
        o.mine > 0 && o.mine <= o.threads,
        "--mine must be in 1..=--threads"
    );
    o
}

/// Which user and agent thread `i` of the fill runs as.
fn who(o: &Options, by_agent: bool, i: usize) -> (String, &'static str) {
    let mine = i % (o.threads / o.mine) == 0 && i / (o.threads / o.mine) < o.mine;
    match (mine, by_agent) {
        (true, _) => ("Bearer me".to_owned(), "bench"),
        (false, true) => ("Bearer me".to_owned(), "other"),
        (false, false) => (format!("Bearer user-{}", i % 99), "bench"),
    }
}

/// One short run on thread `thread`, read to its end.
async fn run(client: &reqwest::Client, base: &str, auth: &str, agent: &str, thread: &str) {
    let body = json!({
        "threadId": thread, "runId": format!("{thread}-r"), "state": {}, "tools": [],
        "context": [], "forwardedProps": {},
        "messages": [{"id": format!("{thread}-u"), "role": "user", "content": "hello"}],
    });
    let res = client
        .post(format!("{base}/copilotkit/agent/{agent}/run"))
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("POST /run");
    assert!(res.status().is_success(), "run answered {}", res.status());
    let text = res.text().await.expect("the run's stream");
    assert!(
        text.contains("RUN_FINISHED"),
        "a run without its end: {text}"
    );
}

/// A list page: the time to its last byte, its size, its threads and next cursor.
async fn list(
    client: &reqwest::Client,
    base: &str,
    page: usize,
    cursor: Option<&str>,
) -> (Duration, usize, Vec<Value>, Option<String>) {
    let mut url = format!("{base}/copilotkit/threads?agentId=bench&limit={page}");
    if let Some(c) = cursor {
        url.push_str("&cursor=");
        url.push_str(&urlencode(c));
    }
    let t = Instant::now();
    let res = client
        .get(url)
        .header("authorization", "Bearer me")
        .send()
        .await
        .expect("GET /threads");
    assert!(res.status().is_success(), "list answered {}", res.status());
    let bytes = res.bytes().await.expect("the list");
    let took = t.elapsed();
    let v: Value = serde_json::from_slice(&bytes).expect("a JSON list");
    let threads = v["threads"].as_array().cloned().unwrap_or_default();
    let next = v["nextCursor"].as_str().map(str::to_owned);
    (took, bytes.len(), threads, next)
}

/// Redis's `used_memory` (bytes), from `INFO memory`.
fn redis_used_memory(addr: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to Redis");
    s.write_all(b"INFO memory\r\n").expect("INFO");
    s.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut buf = vec![0u8; 16384];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

struct Figures {
    name: String,
    fill: Duration,
    rss_per_thread: f64,
    heap_per_thread: Option<f64>,
    redis_per_thread: Option<f64>,
    first_page_ms: (f64, f64),
    first_page_bytes: usize,
    first_page_threads: usize,
    walked: usize,
    walk: Duration,
    pages: usize,
}

async fn measure(o: &Options, name: &str, cmd: &str) -> Figures {
    let by_agent = o.by_agent.iter().any(|n| n == name);
    eprintln!("[{name}] starting: {cmd}");
    let server = Server::start(cmd);
    let client = http_client();
    let base = server.base.clone();
    // The warm-up's threads are no one's list: another user's, or the other agent's.
    let warm_agent = if by_agent { "other" } else { "bench" };
    for i in 0..200 {
        run(
            &client,
            &base,
            "Bearer warm-up",
            warm_agent,
            &format!("warm-{i}"),
        )
        .await;
    }
    let redis = o
        .redis
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, a)| a.clone());
    let heap_before = gc(&client, &base).await;
    let rss_before = rss_kib(server.pid());
    let redis_before = redis.as_deref().map(redis_used_memory);
    let t = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    futures_util::stream::iter(0..o.threads)
        .for_each_concurrent(o.concurrency, |i| {
            let (client, base, done) = (&client, &base, &done);
            async move {
                let (auth, agent) = who(o, by_agent, i);
                run(client, base, &auth, agent, &format!("thread-{i}")).await;
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if n % 10_000 == 0 {
                    eprintln!("[{name}] {n} threads");
                }
            }
        })
        .await;
    let fill = t.elapsed();
    let heap_after = gc(&client, &base).await;
    let rss_after = rss_kib(server.pid());
    let redis_after = redis.as_deref().map(redis_used_memory);
    let per = |a: u64, b: u64| (a.saturating_sub(b)) as f64 / o.threads as f64;

    for _ in 0..o.warmup {
        list(&client, &base, o.page, None).await;
    }
    let mut times = Vec::new();
    let (mut bytes, mut count) = (0, 0);
    for _ in 0..o.lists {
        let (took, b, threads, _) = list(&client, &base, o.page, None).await;
        times.push(took.as_secs_f64() * 1e3);
        (bytes, count) = (b, threads.len());
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];

    let t = Instant::now();
    let (mut walked, mut pages, mut cursor) = (0, 0, None::<String>);
    let mut seen = std::collections::HashSet::new();
    loop {
        let (_, _, threads, next) = list(&client, &base, o.page, cursor.as_deref()).await;
        pages += 1;
        for th in &threads {
            assert!(
                seen.insert(th["id"].as_str().unwrap_or_default().to_owned()),
                "[{name}] a thread listed twice: {th}"
            );
        }
        walked += threads.len();
        match next {
            Some(c) if !threads.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    let walk = t.elapsed();
    assert_eq!(
        walked, o.mine,
        "[{name}] the whole list holds every thread of mine"
    );
    Figures {
        name: name.to_owned(),
        fill,
        rss_per_thread: per(rss_after * 1024, rss_before * 1024),
        heap_per_thread: heap_after.zip(heap_before).map(|(a, b)| per(a, b)),
        redis_per_thread: redis_after.zip(redis_before).map(|(a, b)| per(a, b)),
        first_page_ms: (at(0.5), at(0.9)),
        first_page_bytes: bytes,
        first_page_threads: count,
        walked,
        walk,
        pages,
    }
}

fn report(o: &Options, figures: &[Figures]) -> String {
    let mut out = format!(
        "`GET /copilotkit/threads?agentId=bench&limit={}` as one user with {} threads among {} (one short run each), {} measured after {} warm-up.\n\n",
        o.page, o.mine, o.threads, o.lists, o.warmup
    );
    out.push_str("| server | first page: median | p90 | bytes | threads | whole list: pages | threads | time | memory per stored thread: RSS | heap | Redis | fill time |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for f in figures {
        out.push_str(&format!(
            "| {} | {:.2} ms | {:.2} ms | {} | {} | {} | {} | {:.0} ms | {:.0} B | {} | {} | {:.1} s |\n",
            f.name,
            f.first_page_ms.0,
            f.first_page_ms.1,
            f.first_page_bytes,
            f.first_page_threads,
            f.pages,
            f.walked,
            f.walk.as_secs_f64() * 1e3,
            f.rss_per_thread,
            f.heap_per_thread
                .map_or("-".to_owned(), |h| format!("{h:.0} B")),
            f.redis_per_thread
                .map_or("-".to_owned(), |h| format!("{h:.0} B")),
            f.fill.as_secs_f64(),
        ));
    }
    out
}

#[tokio::main]
async fn main() {
    let o = options();
    let mut figures = Vec::new();
    for (name, cmd) in &o.servers {
        figures.push(measure(&o, name, cmd).await);
    }
    let text = report(&o, &figures);
    print!("{text}");
    if let Some(path) = &o.out {
        std::fs::write(path, &text).expect("write --out");
    }
}
