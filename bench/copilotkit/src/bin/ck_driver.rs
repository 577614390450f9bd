//! The driver: measures `connect` (a thread's replay) and the memory of stored threads
//! on each server it is given, one server at a time, with the same requests.
//!
//! ```text
//! ck-driver --server rust='target/release/ck-server' \
//!           --server node='node --expose-gc node/server.mjs' \
//!           [--runs 100] [--connects 50] [--warmup 10] \
//!           [--threads 200] [--thread-runs 10] [--concurrency 4] [--out last-run.md]
//! ```
//!
//! Each server command must print `listening <port>` on its first line of standard
//! output, serve the CopilotKit routes at `/copilotkit` (agent `bench`) and answer
//! `POST /debug/gc`. For each server, in a fresh process:
//!
//! 1. **history**: one thread of `--runs` runs, each a `POST …/agent/bench/run` sending
//!    the whole conversation so far, as CopilotKit's client does (user message, the
//!    assistant message with its tool call, the tool's result, next user message…);
//! 2. **connect**: `--warmup` then `--connects` measured `POST …/agent/bench/connect`
//!    on that thread: time from sending the request to receiving the last replayed
//!    event, response bytes, event count;
//! 3. **memory**: `POST /debug/gc` and the server's `VmRSS` (from `/proc/PID/status`),
//!    then `--threads` new threads of `--thread-runs` runs each (`--concurrency`
//!    threads at a time), then gc and `VmRSS` again: growth per thread. The Node
//!    server's gc answer also gives its heap, reported too.
//!
//! Last, the replays of the servers are compared: the same messages (ids and text), tool
//! calls (ids and arguments) and recorded input messages, in the same order.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};

struct Options {
    servers: Vec<(String, String)>,
    runs: usize,
    connects: usize,
    warmup: usize,
    threads: usize,
    thread_runs: usize,
    concurrency: usize,
    out: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        servers: Vec::new(),
        runs: 100,
        connects: 50,
        warmup: 10,
        threads: 200,
        thread_runs: 10,
        concurrency: 4,
        out: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| panic!("{a} needs a value"))
        };
        match a.as_str() {
            "--server" => {
                let v = value();
                let (name, cmd) = v
                    .split_once('=')
                    .unwrap_or_else(|| panic!("--server NAME=COMMAND, not {v:?}"));
                o.servers.push((name.to_owned(), cmd.to_owned()));
            }
            "--runs" => o.runs = value().parse().expect("--runs N"),
            "--connects" => o.connects = value().parse().expect("--connects N"),
            "--warmup" => o.warmup = value().parse().expect("--warmup N"),
            "--threads" => o.threads = value().parse().expect("--threads N"),
            "--thread-runs" => o.thread_runs = value().parse().expect("--thread-runs N"),
            "--concurrency" => o.concurrency = value().parse().expect("--concurrency N"),
            "--out" => o.out = Some(value()),
            other => panic!("unknown argument {other:?} (see the source's header)"),
        }
    }
    assert!(!o.servers.is_empty(), "give at least one --server NAME=COMMAND");
    o
}

/// A server process, killed when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(cmd: &str) -> Server {
        let mut parts = cmd.split_whitespace();
        let prog = parts.next().expect("empty server command");
        let mut child = Command::new(prog)
            .args(parts)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        let mut reader = BufReader::new(stdout);
        reader.read_line(&mut line).expect("server output");
        let port: u16 = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{cmd:?} printed {line:?}, not `listening <port>`"));
        // Keep draining its output so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `VmRSS` of a process, in KiB.
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

/// One SSE response, read to its end.
struct Sse {
    /// From sending the request to receiving the last complete event.
    to_last_event: Duration,
    bytes: usize,
    /// The `data:` payloads.
    frames: Vec<String>,
}

async fn post_sse(client: &reqwest::Client, url: &str, body: String) -> Sse {
    let started = Instant::now();
    let res = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = res.status();
    if !status.is_success() {
        let text = res.text().await.unwrap_or_default();
        panic!("POST {url}: HTTP {status}: {text}");
    }
    let mut stream = res.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut bytes = 0usize;
    let mut frames = Vec::new();
    let mut to_last_event = Duration::ZERO;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("reading {url}: {e}"));
        bytes += chunk.len();
        buf.extend_from_slice(&chunk);
        let mut got = false;
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let frame: Vec<u8> = buf.drain(..end + 2).collect();
            let text = String::from_utf8(frame).expect("UTF-8 SSE");
            let data: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                frames.push(data.join("\n"));
                got = true;
            }
        }
        if got {
            to_last_event = started.elapsed();
        }
    }
    Sse {
        to_last_event,
        bytes,
        frames,
    }
}

fn tools() -> Value {
    json!([{
        "name": "show_card",
        "description": "Shows a card with a title and a list of items on the page.",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "items": {"type": "array", "items": {"type": "string"}},
                "priority": {"type": "string", "enum": ["low", "normal", "high"]},
                "note": {"type": "string"}
            },
            "required": ["title", "items"]
        }
    }])
}

/// A thread as a CopilotKit page keeps it: the conversation and the agent state.
struct Conversation {
    thread: String,
    messages: Vec<Value>,
    state: Value,
    turns: usize,
}

impl Conversation {
    fn new(thread: String) -> Self {
        Conversation {
            thread,
            messages: Vec::new(),
            state: json!({}),
            turns: 0,
        }
    }

    /// One turn: the user's message, the run, and what the page adds from its answer
    /// (the assistant message with its tool call, and the tool's result).
    async fn turn(&mut self, client: &reqwest::Client, base: &str) -> Duration {
        self.turns += 1;
        let k = self.turns;
        self.messages.push(json!({
            "id": format!("{}-u{k}", self.thread),
            "role": "user",
            "content": format!("Turn {k}: what is still open on the ledger this week?"),
        }));
        let body = json!({
            "threadId": self.thread,
            "runId": format!("{}-r{k}", self.thread),
            "state": self.state,
            "messages": self.messages,
            "tools": tools(),
            "context": [],
            "forwardedProps": {},
        });
        let sse = post_sse(
            client,
            &format!("{base}/copilotkit/agent/bench/run"),
            body.to_string(),
        )
        .await;
        let mut text = String::new();
        let mut msg_id = None;
        let mut calls: Vec<(String, String, String)> = Vec::new();
        let mut finished = false;
        for f in &sse.frames {
            let e: Value = serde_json::from_str(f).expect("event JSON");
            match e["type"].as_str().unwrap_or("") {
                "TEXT_MESSAGE_START" => msg_id = e["messageId"].as_str().map(str::to_owned),
                "TEXT_MESSAGE_CONTENT" => text.push_str(e["delta"].as_str().unwrap_or("")),
                "TOOL_CALL_START" => calls.push((
                    e["toolCallId"].as_str().unwrap_or("").to_owned(),
                    e["toolCallName"].as_str().unwrap_or("").to_owned(),
                    String::new(),
                )),
                "TOOL_CALL_ARGS" => {
                    if let Some(c) = calls.last_mut() {
                        c.2.push_str(e["delta"].as_str().unwrap_or(""));
                    }
                }
                "STATE_SNAPSHOT" => self.state = e["snapshot"].clone(),
                "RUN_FINISHED" => finished = true,
                "RUN_ERROR" => panic!("run {k} of {} failed: {f}", self.thread),
                _ => {}
            }
        }
        assert!(finished, "run {k} of {} did not finish", self.thread);
        let msg_id = msg_id.expect("a text message");
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
            })
            .collect();
        self.messages.push(json!({
            "id": msg_id, "role": "assistant", "content": text, "toolCalls": tool_calls,
        }));
        for (id, _, _) in &calls {
            self.messages.push(json!({
                "id": format!("{id}-r"), "role": "tool", "toolCallId": id,
                "content": "{\"shown\":true}",
            }));
        }
        sse.to_last_event
    }
}

fn connect_body(thread: &str, i: usize) -> String {
    json!({
        "threadId": thread,
        "runId": format!("connect-{i}"),
        "state": {},
        "messages": [],
        "tools": tools(),
        "context": [],
        "forwardedProps": {},
    })
    .to_string()
}

/// What a replay holds, to compare servers.
#[derive(Debug, Default, PartialEq)]
struct Replay {
    types: BTreeMap<String, usize>,
    /// (message id, text), in order.
    messages: Vec<(String, String)>,
    /// (tool call id, arguments), in order.
    tool_calls: Vec<(String, String)>,
    /// Ids of the messages recorded in `RUN_STARTED` inputs, in order.
    input_messages: Vec<String>,
    /// The state snapshots, in order.
    states: Vec<Value>,
}

fn replay(frames: &[String]) -> Replay {
    let mut r = Replay::default();
    let mut text: BTreeMap<String, String> = BTreeMap::new();
    let mut args: BTreeMap<String, String> = BTreeMap::new();
    let mut msg_order = Vec::new();
    let mut call_order = Vec::new();
    for f in frames {
        let e: Value = serde_json::from_str(f).expect("event JSON");
        let ty = e["type"].as_str().unwrap_or("?").to_owned();
        *r.types.entry(ty.clone()).or_default() += 1;
        let s = |k: &str| e[k].as_str().unwrap_or("").to_owned();
        match ty.as_str() {
            "TEXT_MESSAGE_START" => {
                msg_order.push(s("messageId"));
                text.entry(s("messageId")).or_default();
            }
            "TEXT_MESSAGE_CONTENT" => text.entry(s("messageId")).or_default().push_str(&s("delta")),
            "TOOL_CALL_START" => {
                call_order.push(s("toolCallId"));
                args.entry(s("toolCallId")).or_default();
            }
            "TOOL_CALL_ARGS" => args.entry(s("toolCallId")).or_default().push_str(&s("delta")),
            "RUN_STARTED" => {
                for m in e["input"]["messages"].as_array().into_iter().flatten() {
                    r.input_messages
                        .push(m["id"].as_str().unwrap_or("").to_owned());
                }
            }
            "STATE_SNAPSHOT" => r.states.push(e["snapshot"].clone()),
            _ => {}
        }
    }
    r.messages = msg_order
        .into_iter()
        .map(|id| {
            let t = text.get(&id).cloned().unwrap_or_default();
            (id, t)
        })
        .collect();
    r.tool_calls = call_order
        .into_iter()
        .map(|id| {
            let a = args.get(&id).cloned().unwrap_or_default();
            (id, a)
        })
        .collect();
    r
}

struct Figures {
    name: String,
    fill: Duration,
    run_median: Duration,
    connect_median: Duration,
    connect_p90: Duration,
    connect_min: Duration,
    bytes: usize,
    events: usize,
    rss_start_kib: u64,
    rss_before_kib: u64,
    rss_after_kib: u64,
    heap_before: Option<u64>,
    heap_after: Option<u64>,
    mem_fill: Duration,
    replay: Replay,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn gc(client: &reqwest::Client, base: &str) -> Option<u64> {
    let res = client
        .post(format!("{base}/debug/gc"))
        .send()
        .await
        .expect("POST /debug/gc");
    let v: Value = res.json_or_null().await;
    v["heapUsed"].as_u64()
}

trait JsonOrNull {
    async fn json_or_null(self) -> Value;
}

impl JsonOrNull for reqwest::Response {
    async fn json_or_null(self) -> Value {
        let bytes = self.bytes().await.unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }
}

async fn measure(o: &Options, name: &str, cmd: &str) -> Figures {
    eprintln!("[{name}] starting: {cmd}");
    let server = Server::start(cmd);
    let base = server.base.clone();
    let pid = server.pid();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client");
    let info = client
        .get(format!("{base}/copilotkit/info"))
        .send()
        .await
        .expect("GET /info")
        .json_or_null()
        .await;
    assert!(
        info["agents"]["bench"].is_object(),
        "{name}: /info lists no agent `bench`: {info}"
    );
    gc(&client, &base).await;
    let rss_start_kib = rss_kib(pid);

    // 1. The history.
    eprintln!("[{name}] history: 1 thread x {} runs", o.runs);
    let thread = "history-thread".to_owned();
    let mut conv = Conversation::new(thread.clone());
    let started = Instant::now();
    let mut run_times = Vec::with_capacity(o.runs);
    for _ in 0..o.runs {
        run_times.push(conv.turn(&client, &base).await);
    }
    let fill = started.elapsed();
    run_times.sort();

    // 2. Connect.
    eprintln!(
        "[{name}] connect: {} warm-up + {} measured",
        o.warmup, o.connects
    );
    let url = format!("{base}/copilotkit/agent/bench/connect");
    for i in 0..o.warmup {
        post_sse(&client, &url, connect_body(&thread, i)).await;
    }
    let mut times = Vec::with_capacity(o.connects);
    let mut last = None;
    let (mut bytes, mut events) = (0, 0);
    for i in 0..o.connects {
        let sse = post_sse(&client, &url, connect_body(&thread, o.warmup + i)).await;
        times.push(sse.to_last_event);
        if last.is_some() {
            assert_eq!(sse.bytes, bytes, "{name}: replays differ in size");
        }
        bytes = sse.bytes;
        events = sse.frames.len();
        last = Some(sse.frames);
    }
    times.sort();
    let replay = replay(&last.unwrap_or_default());

    // 3. Memory per stored thread.
    eprintln!(
        "[{name}] memory: {} threads x {} runs",
        o.threads, o.thread_runs
    );
    let heap_before = gc(&client, &base).await;
    let rss_before_kib = rss_kib(pid);
    let started = Instant::now();
    let thread_runs = o.thread_runs;
    futures_util::stream::iter(0..o.threads)
        .map(|t| {
            let client = client.clone();
            let base = base.clone();
            async move {
                let mut c = Conversation::new(format!("mem-{t}"));
                for _ in 0..thread_runs {
                    c.turn(&client, &base).await;
                }
            }
        })
        .buffer_unordered(o.concurrency.max(1))
        .collect::<Vec<()>>()
        .await;
    let mem_fill = started.elapsed();
    // Let anything deferred settle, then collect.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let heap_after = gc(&client, &base).await;
    let rss_after_kib = rss_kib(pid);
    drop(server);

    Figures {
        name: name.to_owned(),
        fill,
        run_median: percentile(&run_times, 0.5),
        connect_median: percentile(&times, 0.5),
        connect_p90: percentile(&times, 0.9),
        connect_min: times.first().copied().unwrap_or_default(),
        bytes,
        events,
        rss_start_kib,
        rss_before_kib,
        rss_after_kib,
        heap_before,
        heap_after,
        mem_fill,
        replay,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn per_thread_kib(f: &Figures, threads: usize) -> f64 {
    f.rss_after_kib.saturating_sub(f.rss_before_kib) as f64 / threads as f64
}

fn heap_per_thread_kib(f: &Figures, threads: usize) -> Option<f64> {
    Some(f.heap_after?.saturating_sub(f.heap_before?) as f64 / 1024.0 / threads as f64)
}

fn report(o: &Options, figs: &[Figures]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "History: 1 thread of {} runs. Connect: {} warm-up, {} measured. Memory: {} threads x {} runs ({} at a time).\n",
        o.runs, o.warmup, o.connects, o.threads, o.thread_runs, o.concurrency
    );
    let _ = writeln!(
        s,
        "| server | connect median ms | connect p90 ms | connect min ms | response bytes | events | run median ms (history) | RSS growth per thread KiB | heap growth per thread KiB | RSS after start / after history / after threads MiB |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for f in figs {
        let heap = heap_per_thread_kib(f, o.threads)
            .map(|h| format!("{h:.1}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {:.1} / {:.1} / {:.1} |",
            f.name,
            ms(f.connect_median),
            ms(f.connect_p90),
            ms(f.connect_min),
            f.bytes,
            f.events,
            ms(f.run_median),
            per_thread_kib(f, o.threads),
            heap,
            f.rss_start_kib as f64 / 1024.0,
            f.rss_before_kib as f64 / 1024.0,
            f.rss_after_kib as f64 / 1024.0,
        );
    }
    if figs.len() >= 2 {
        let (a, b) = (&figs[0], &figs[1]);
        let ratio = |x: f64, y: f64| if y > 0.0 { format!("{:.3}", x / y) } else { "-".into() };
        let _ = writeln!(s, "\nRatios {}/{}:\n", a.name, b.name);
        let _ = writeln!(s, "| connect median | connect p90 | bytes | events | RSS per thread | run median |");
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            ratio(a.connect_median.as_secs_f64(), b.connect_median.as_secs_f64()),
            ratio(a.connect_p90.as_secs_f64(), b.connect_p90.as_secs_f64()),
            ratio(a.bytes as f64, b.bytes as f64),
            ratio(a.events as f64, b.events as f64),
            ratio(per_thread_kib(a, o.threads), per_thread_kib(b, o.threads)),
            ratio(a.run_median.as_secs_f64(), b.run_median.as_secs_f64()),
        );
        let _ = writeln!(s, "\nReplayed content, {} against {}:\n", a.name, b.name);
        let (ra, rb) = (&a.replay, &b.replay);
        let same = |x: bool| if x { "same" } else { "DIFFERENT" };
        let _ = writeln!(
            s,
            "- text messages: {} / {} ({} ids and text)",
            ra.messages.len(),
            rb.messages.len(),
            same(ra.messages == rb.messages)
        );
        let _ = writeln!(
            s,
            "- tool calls: {} / {} ({} ids and arguments)",
            ra.tool_calls.len(),
            rb.tool_calls.len(),
            same(ra.tool_calls == rb.tool_calls)
        );
        let _ = writeln!(
            s,
            "- messages recorded in RUN_STARTED inputs: {} / {} ({} ids)",
            ra.input_messages.len(),
            rb.input_messages.len(),
            same(ra.input_messages == rb.input_messages)
        );
        let _ = writeln!(
            s,
            "- state snapshots: {} / {} ({})",
            ra.states.len(),
            rb.states.len(),
            same(ra.states == rb.states)
        );
        let _ = writeln!(
            s,
            "- events by type: {} ({:?} / {:?})",
            same(ra.types == rb.types),
            ra.types,
            rb.types
        );
        for (i, (x, y)) in ra.messages.iter().zip(&rb.messages).enumerate() {
            if x != y {
                let _ = writeln!(s, "- first differing message, #{i}: {x:?} / {y:?}");
                break;
            }
        }
    }
    for f in figs {
        let _ = writeln!(
            s,
            "\n{}: history filled in {:.1} s; memory threads filled in {:.1} s.",
            f.name,
            f.fill.as_secs_f64(),
            f.mem_fill.as_secs_f64()
        );
    }
    s
}

#[tokio::main]
async fn main() {
    let o = options();
    let mut figs = Vec::new();
    for (name, cmd) in &o.servers {
        figs.push(measure(&o, name, cmd).await);
    }
    let text = report(&o, &figs);
    println!("{text}");
    if let Some(path) = &o.out {
        std::fs::write(path, &text).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
}
