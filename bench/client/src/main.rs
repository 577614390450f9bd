//! Client benchmark: one loopback server, several clients, each in a fresh process.
//!
//! The server (axum, in the driver process) answers `POST /run?events=N&enc=sse|proto`
//! with a stream of N events: `RUN_STARTED` (echoing the request's thread and run ids),
//! 1,000 assistant text messages of 20-byte `TEXT_MESSAGE_CONTENT` deltas, and
//! `RUN_FINISHED`. The body is encoded once, before any client runs, and written from
//! memory in 1 MiB chunks, so the server does little work per event.
//!
//! Peak RSS is VmHWM from `/proc/self/status` in every client, Node included: getrusage's
//! `ru_maxrss` (Node's `process.resourceUsage().maxRSS`) keeps the peak of the process
//! image before exec, i.e. the driver's resident size with its prebuilt bodies.
//!
//! The clients (each a child process, so peak RSS is its own):
//! - `agui-raw`: `agui_sdk_client::HttpAgent::run`, the raw event stream (decode only);
//! - `agui-sdk-agent`: `agui_sdk_client::Conversation::run_agent`, the whole pipeline (decode, chunk
//!   expansion, verification, reducer) keeping the conversation (events counted by a
//!   middleware);
//! - `agui-sdk-agent-sub`: the same with a subscriber whose `on_event` counts the events
//!   (as the Node script counts them);
//! - `node-ref`: the reference `HttpAgent.runAgent` (`@ag-ui/client` 1.0.0, Node), via
//!   `ref-client-bench.mjs`;
//! - `agrs-raw`: the `ag-ui` crate's `HttpAgent::run_events` (decode and its schema
//!   enforcement);
//! - `agrs-thread`: the `ag-ui` crate's `Thread::run` + `collect_report` (its whole
//!   pipeline, keeping the conversation). The crate's HTTP client reads SSE only.
//!
//! Usage: `client-bench [--events N] [--encodings sse,proto] [--clients a,b]
//! [--slow-divisor D] [--timeout SECS] [--no-write]`. Ours run at N and N/10; the slow
//! clients (Node, the `ag-ui` crate) at N/D and N/(10·D) (D = 10 by default), labelled.
//! Child mode (used by the driver): `client-bench client KIND URL N ENCODING`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agui_sdk_core::encoding::{Encoding, EventEncoder};
use agui_sdk_core::Event;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Value};

const MESSAGES: u64 = 1_000;
const DELTAS: [&str; 4] = [
    "the quick brown fox ",
    "jumps over the lazy ",
    "dog, again and again",
    " while tokens flow. ",
];
const WRITE_CHUNK: usize = 1 << 20;
const THREAD: &str = "thread-bench";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("client") {
        client_main(&args[1..]);
    } else {
        driver_main(&args);
    }
}

// ---------------------------------------------------------------------------------
// The workload and the server.

fn enc_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Sse => "sse",
        Encoding::Proto => "proto",
    }
}

fn parse_enc(s: &str) -> Encoding {
    match s {
        "proto" => Encoding::Proto,
        _ => Encoding::Sse,
    }
}

/// Everything between `RUN_STARTED` and `RUN_FINISHED` for a stream of `n` events.
fn middle(n: u64, encoding: Encoding) -> Vec<u8> {
    let encoder = EventEncoder::new(encoding);
    let body_events = n.saturating_sub(2);
    let messages = MESSAGES.min(body_events / 3).max(1);
    let deltas = body_events.saturating_sub(2 * messages);
    let mut out = Vec::with_capacity((deltas as usize) * 96);
    for m in 0..messages {
        let id = format!("msg-{m:04}");
        encoder.encode(&Event::text_message_start(&id), &mut out);
        let k = deltas / messages + u64::from(m < deltas % messages);
        // One frame per (message, delta text); repeated from memory.
        let frames: Vec<Vec<u8>> = DELTAS
            .iter()
            .map(|d| encoder.encode_to_vec(&Event::text_message_content(&id, *d)))
            .collect();
        for i in 0..k {
            out.extend_from_slice(&frames[(i % 4) as usize]);
        }
        encoder.encode(&Event::text_message_end(&id), &mut out);
    }
    out
}

#[derive(Default)]
struct Server {
    bodies: Mutex<HashMap<(u64, &'static str), Bytes>>,
    last_body_len: AtomicU64,
}

impl Server {
    fn body(&self, n: u64, encoding: Encoding) -> Bytes {
        let mut bodies = self.bodies.lock().unwrap();
        bodies
            .entry((n, enc_name(encoding)))
            .or_insert_with(|| Bytes::from(middle(n, encoding)))
            .clone()
    }
}

async fn run_handler(
    State(server): State<Arc<Server>>,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let n: u64 = q
        .get("events")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let encoding = parse_enc(q.get("enc").map(String::as_str).unwrap_or("sse"));
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let thread = input["threadId"].as_str().unwrap_or(THREAD).to_owned();
    let run = input["runId"].as_str().unwrap_or("run").to_owned();
    let encoder = EventEncoder::new(encoding);
    let head = Bytes::from(encoder.encode_to_vec(&Event::run_started(&thread, &run)));
    let tail = Bytes::from(encoder.encode_to_vec(&Event::run_finished(&thread, &run)));
    let mid = server.body(n, encoding);
    server.last_body_len.store(
        (head.len() + mid.len() + tail.len()) as u64,
        Ordering::Relaxed,
    );
    let mut chunks = vec![head];
    let mut at = 0;
    while at < mid.len() {
        let end = (at + WRITE_CHUNK).min(mid.len());
        chunks.push(mid.slice(at..end));
        at = end;
    }
    chunks.push(tail);
    Response::builder()
        .header(CONTENT_TYPE, encoding.content_type())
        .body(Body::from_stream(futures_util::stream::iter(
            chunks.into_iter().map(Ok::<_, Infallible>),
        )))
        .unwrap()
}

// ---------------------------------------------------------------------------------
// Child mode: one client, one run.

fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn client_main(args: &[String]) {
    let [kind, url, n, enc] = args else {
        eprintln!("usage: client-bench client KIND URL N ENCODING");
        std::process::exit(2);
    };
    let expected: u64 = n.parse().expect("N is a number");
    let encoding = parse_enc(enc);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let start = Instant::now();
    let (events, conversation_bytes) = rt
        .block_on(async {
            match kind.as_str() {
                "agui-raw" => agui_raw(url, encoding).await,
                "agui-sdk-agent" => agui_sdk_agent(url, encoding, false).await,
                "agui-sdk-agent-sub" => agui_sdk_agent(url, encoding, true).await,
                "agrs-raw" => agrs_raw(url).await,
                "agrs-thread" => agrs_thread(url).await,
                other => Err(format!("unknown client {other}")),
            }
        })
        .unwrap_or_else(|e| {
            eprintln!("{kind}: {e}");
            std::process::exit(1);
        });
    let seconds = start.elapsed().as_secs_f64();
    if events != expected {
        eprintln!("{kind}: expected {expected} events, got {events}");
        std::process::exit(1);
    }
    println!(
        "{}",
        json!({
            "events": events,
            "seconds": seconds,
            "peak_rss_kb": match RSS_AFTER_RUN.load(Ordering::Relaxed) {
                0 => peak_rss_kb(),
                kb => kb,
            },
            "conversation_bytes": conversation_bytes,
            "peak_rss_at_finish_kb": match RSS_AT_FINISH.load(Ordering::Relaxed) {
                0 => Value::Null,
                kb => json!(kb),
            },
        })
    );
}

async fn agui_raw(url: &str, encoding: Encoding) -> Result<(u64, Option<u64>), String> {
    let http = agui_sdk_client::HttpAgent::builder(url)
        .encoding(encoding)
        .build()
        .map_err(|e| e.to_string())?;
    let input = agui_sdk_core::RunAgentInput::new(THREAD, "run-bench", Vec::new());
    let mut stream = http.run(&input);
    let mut n = 0;
    while let Some(e) = stream.next().await {
        e.map_err(|e| e.to_string())?;
        n += 1;
    }
    Ok((n, None))
}

/// Peak RSS when `RUN_FINISHED` went by (before `run_agent` builds its result).
static RSS_AT_FINISH: AtomicU64 = AtomicU64::new(0);
/// Peak RSS when the run was over, before the conversation is serialized to measure it.
static RSS_AFTER_RUN: AtomicU64 = AtomicU64::new(0);

fn run_over() {
    RSS_AFTER_RUN.store(peak_rss_kb(), Ordering::Relaxed);
}

/// Counts the events `Conversation` hands its subscribers.
struct Count(Arc<AtomicU64>);

impl agui_sdk_client::Subscriber for Count {
    fn on_event(&mut self, event: &Event) -> agui_sdk_client::Flow {
        self.0.fetch_add(1, Ordering::Relaxed);
        if let Event::RunFinished(_) = event {
            RSS_AT_FINISH.store(peak_rss_kb(), Ordering::Relaxed);
        }
        agui_sdk_client::Flow::Continue
    }
}

/// Counts the events coming out of the transport (a middleware: no subscriber).
struct CountMiddleware(Arc<AtomicU64>);

impl agui_sdk_client::Middleware for CountMiddleware {
    fn transform(
        &self,
        _input: &agui_sdk_core::RunAgentInput,
        events: agui_sdk_client::EventStream,
    ) -> agui_sdk_client::EventStream {
        let count = self.0.clone();
        agui_sdk_client::EventStream::from_stream(events.inspect(move |e| {
            count.fetch_add(1, Ordering::Relaxed);
            if let Ok(Event::RunFinished(_)) = e {
                RSS_AT_FINISH.store(peak_rss_kb(), Ordering::Relaxed);
            }
        }))
    }
}

async fn agui_sdk_agent(
    url: &str,
    encoding: Encoding,
    subscriber: bool,
) -> Result<(u64, Option<u64>), String> {
    let http = agui_sdk_client::HttpAgent::builder(url)
        .encoding(encoding)
        .build()
        .map_err(|e| e.to_string())?;
    let count = Arc::new(AtomicU64::new(0));
    let builder = agui_sdk_client::Conversation::builder(http).thread_id(THREAD);
    let mut agent = if subscriber {
        builder.subscribe(Count(count.clone()))
    } else {
        builder.use_middleware(CountMiddleware(count.clone()))
    }
    .build();
    agent
        .run_agent(agui_sdk_client::RunParams::new())
        .await
        .map_err(|e| e.to_string())?;
    run_over();
    let conv = serde_json::to_vec(agent.messages()).map_err(|e| e.to_string())?;
    Ok((count.load(Ordering::Relaxed), Some(conv.len() as u64)))
}

async fn agrs_raw(url: &str) -> Result<(u64, Option<u64>), String> {
    let agent = ag_ui::client::HttpAgent::new(url).map_err(|e| e.to_string())?;
    let mut stream = agent.run_events(ag_ui::client::RunParams::new(THREAD, "run-bench"));
    let mut n = 0;
    while let Some(e) = stream.next().await {
        e.map_err(|e| e.to_string())?;
        n += 1;
    }
    Ok((n, None))
}

async fn agrs_thread(url: &str) -> Result<(u64, Option<u64>), String> {
    let agent = ag_ui::client::HttpAgent::new(url).map_err(|e| e.to_string())?;
    let mut thread = agent.thread(THREAD);
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    thread.on_event(move |_| {
        c.fetch_add(1, Ordering::Relaxed);
    });
    let report = thread
        .run()
        .map_err(|e| e.to_string())?
        .collect_report()
        .await;
    match report.end {
        ag_ui::client::RunEnd::Success { .. } => {}
        other => return Err(format!("run ended {other:?}")),
    }
    run_over();
    let conv = serde_json::to_vec(thread.messages()).map_err(|e| e.to_string())?;
    Ok((count.load(Ordering::Relaxed), Some(conv.len() as u64)))
}

// ---------------------------------------------------------------------------------
// The driver.

struct Opts {
    events: u64,
    encodings: Vec<Encoding>,
    clients: Vec<String>,
    slow_divisor: u64,
    timeout: Duration,
    write: bool,
}

fn parse_opts(args: &[String]) -> Opts {
    let mut o = Opts {
        events: 1_000_000,
        encodings: vec![Encoding::Sse, Encoding::Proto],
        clients: [
            "agui-raw",
            "agui-sdk-agent",
            "agui-sdk-agent-sub",
            "node-ref",
            "agrs-raw",
            "agrs-thread",
        ]
        .map(String::from)
        .to_vec(),
        slow_divisor: 10,
        timeout: Duration::from_secs(600),
        write: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--events" => o.events = val().parse().expect("--events N"),
            "--encodings" => o.encodings = val().split(',').map(parse_enc).collect(),
            "--clients" => o.clients = val().split(',').map(String::from).collect(),
            "--slow-divisor" => o.slow_divisor = val().parse().expect("--slow-divisor D"),
            "--timeout" => o.timeout = Duration::from_secs(val().parse().expect("--timeout S")),
            "--no-write" => o.write = false,
            other => {
                eprintln!("unknown option {other}");
                std::process::exit(2);
            }
        }
    }
    o
}

struct Row {
    client: String,
    label: &'static str,
    encoding: Encoding,
    events: u64,
    result: Result<Measure, String>,
}

struct Measure {
    seconds: f64,
    body_bytes: u64,
    peak_rss_kb: u64,
    conversation_bytes: Option<u64>,
    peak_rss_at_finish_kb: Option<u64>,
}

fn describe(client: &str) -> &'static str {
    match client {
        "agui-raw" => "ours: HttpAgent::run (decode only)",
        "agui-sdk-agent" => "ours: Agent::run_agent (whole pipeline)",
        "agui-sdk-agent-sub" => "ours: Agent::run_agent + an on_event subscriber",
        "node-ref" => "reference @ag-ui/client HttpAgent.runAgent (Node)",
        "agrs-raw" => "ag-ui crate: HttpAgent::run_events (decode + schema enforcement)",
        "agrs-thread" => "ag-ui crate: Thread::run + collect_report (whole pipeline)",
        _ => "?",
    }
}

fn run_child(mut cmd: Command, timeout: Duration) -> Result<Value, String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(st);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    match status {
        None => Err(format!("timed out after {} s", timeout.as_secs())),
        Some(st) if !st.success() => Err(format!("failed ({st}): {}", err.trim())),
        Some(_) => out
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .ok_or_else(|| format!("no result line in {out:?}")),
    }
}

fn driver_main(args: &[String]) {
    let o = parse_opts(args);
    let server = Arc::new(Server::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    let app = axum::Router::new()
        .route("/run", axum::routing::post(run_handler))
        .with_state(server.clone());
    rt.spawn(async move { axum::serve(listener, app).await });

    // The plan: (client, label, encoding, events).
    let n = o.events;
    let d = o.slow_divisor.max(1);
    let mut plan: Vec<(String, &'static str, Encoding, u64)> = Vec::new();
    for &enc in &o.encodings {
        for c in &o.clients {
            let slow = matches!(c.as_str(), "node-ref" | "agrs-raw" | "agrs-thread");
            if c.starts_with("agrs") && enc == Encoding::Proto {
                continue; // its HTTP client reads SSE only
            }
            let sizes = if slow {
                [n / d, n / d / 10]
            } else {
                [n, n / 10]
            };
            let label = if slow && d > 1 { "capped" } else { "full" };
            for s in sizes {
                plan.push((c.clone(), label, enc, s));
            }
        }
    }
    // Encode every body before any client runs.
    for (_, _, enc, s) in &plan {
        server.body(*s, *enc);
    }
    eprintln!("server on {addr}; {} runs", plan.len());

    let exe = std::env::current_exe().expect("own path");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/ref-client-bench.mjs");
    let mut rows = Vec::new();
    for (client, label, enc, events) in plan {
        let url = format!("http://{addr}/run?events={events}&enc={}", enc_name(enc));
        let cmd = if client == "node-ref" {
            let mut c = Command::new("node");
            c.arg(script).arg(&url).arg(events.to_string());
            if enc == Encoding::Proto {
                c.arg("--proto");
            }
            c
        } else {
            let mut c = Command::new(&exe);
            c.args(["client", &client, &url, &events.to_string(), enc_name(enc)]);
            c
        };
        eprintln!("{client} {} {events} ...", enc_name(enc));
        let result = run_child(cmd, o.timeout).and_then(|v| {
            let got = v["events"].as_u64().unwrap_or(0);
            if got != events {
                return Err(format!("received {got} events of {events}"));
            }
            Ok(Measure {
                seconds: v["seconds"].as_f64().unwrap_or(f64::NAN),
                body_bytes: server.last_body_len.load(Ordering::Relaxed),
                peak_rss_kb: v["peak_rss_kb"].as_u64().unwrap_or(0),
                conversation_bytes: v["conversation_bytes"].as_u64(),
                peak_rss_at_finish_kb: v["peak_rss_at_finish_kb"].as_u64(),
            })
        });
        match &result {
            Ok(m) => eprintln!(
                "  {:.3} s, {:.0} events/s, peak RSS {:.1} MB",
                m.seconds,
                events as f64 / m.seconds,
                m.peak_rss_kb as f64 / 1024.0
            ),
            Err(e) => eprintln!("  {e}"),
        }
        rows.push(Row {
            client,
            label,
            encoding: enc,
            events,
            result,
        });
    }

    let table = render(&o, &rows);
    println!("{table}");
    if o.write {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/last-run.md");
        std::fs::write(path, &table).expect("write last-run.md");
        eprintln!("written to bench/client/last-run.md");
    }
}

fn render(o: &Opts, rows: &[Row]) -> String {
    // Ours (Agent, whole pipeline) at the full size, per encoding: the ratio's base.
    let base = |enc: Encoding| {
        rows.iter()
            .find(|r| r.client == "agui-sdk-agent" && r.encoding == enc && r.events == o.events)
            .and_then(|r| r.result.as_ref().ok().map(|m| r.events as f64 / m.seconds))
    };
    let mut s = String::new();
    let _ = writeln!(s, "# Client benchmark: last run\n");
    let _ = writeln!(
        s,
        "N = {} events (1,000 text messages of 20-byte deltas), loopback, each client in a \
         fresh process; server and client share the machine ({} cores). Slow clients run \
         at N/{d} and N/{}{}.\n",
        o.events,
        std::thread::available_parallelism().map_or(0, |p| p.get()),
        o.slow_divisor * 10,
        if o.slow_divisor > 1 {
            " (\"capped\")"
        } else {
            ""
        },
        d = o.slow_divisor,
    );
    let _ = writeln!(
        s,
        "| client | encoding | events | run | seconds | events/s | MB/s | peak RSS MB | peak RSS at RUN_FINISHED MB | conversation MB | ours (Agent) ÷ this |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        match &r.result {
            Ok(m) => {
                let eps = r.events as f64 / m.seconds;
                let ratio =
                    base(r.encoding).map_or("n/a".to_owned(), |b| format!("{:.1}×", b / eps));
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {:.3} | {:.0} | {:.1} | {:.1} | {} | {} | {} |",
                    describe(&r.client),
                    enc_name(r.encoding),
                    r.events,
                    r.label,
                    m.seconds,
                    eps,
                    m.body_bytes as f64 / 1e6 / m.seconds,
                    m.peak_rss_kb as f64 / 1024.0,
                    m.peak_rss_at_finish_kb
                        .map_or("–".to_owned(), |kb| format!("{:.1}", kb as f64 / 1024.0)),
                    m.conversation_bytes
                        .map_or("–".to_owned(), |b| format!("{:.1}", b as f64 / 1e6)),
                    ratio
                );
            }
            Err(e) => {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | | | | | | |",
                    describe(&r.client),
                    enc_name(r.encoding),
                    r.events,
                    r.label,
                    e.replace('|', "/").replace('\n', " ")
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "\nevents/s: events received ÷ wall time of the run (request to end of stream). \
         MB/s: response body bytes ÷ the same time. Peak RSS: the client process's VmHWM when \
         the run is over, before the conversation is serialized to measure it \
         (Node too: its `process.resourceUsage().maxRSS` carries the driver's peak across \
         exec); for ours with `Agent`, also the peak when \
         `RUN_FINISHED` went through (before `run_agent` builds its result). Conversation MB: \
         the messages the client holds afterwards, as JSON."
    );
    s
}
