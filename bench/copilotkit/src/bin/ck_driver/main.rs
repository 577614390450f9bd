//! The driver: measures `connect` (a thread's replay) and the memory of stored threads
//! on each server it is given, one server at a time, with the same requests.
//!
//! ```text
//! ck-driver --server rust='target/release/ck-server' \
//!           --server node='node --expose-gc node/server.mjs' \
//!           [--runs 100] [--connects 50] [--warmup 10] \
//!           [--memory 200x10] [--memory 20x100] [--concurrency 4] [--out last-run.md]
//! ```
//!
//! Each server command must print `listening <port>` on its first line of standard
//! output, serve the CopilotKit routes at `/copilotkit` (agent `bench`) and answer
//! `POST /debug/gc` with `{"heapUsed": bytes}` after collecting what it can. For each
//! server, one server at a time:
//!
//! 1. **history** (a fresh process): one thread of `--runs` runs, each a
//!    `POST …/agent/bench/run` sending the whole conversation so far, as CopilotKit's
//!    client does (user message, the assistant message with its tool call, the tool's
//!    result, next user message…);
//! 2. **connect** (the same process): `--warmup` then `--connects` measured
//!    `POST …/agent/bench/connect` on that thread: time from sending the request to
//!    receiving the last replayed event, response bytes, event count;
//! 3. **memory** (a fresh process for each `--memory THREADSxRUNS`): `POST /debug/gc`
//!    and the server's `VmRSS` (from `/proc/PID/status`) after a warm-up of the same
//!    shape (`--concurrency` threads of RUNS runs), then THREADS new threads of RUNS
//!    runs each (`--concurrency` threads at a time), then gc and both figures again:
//!    growth per thread.
//!
//! Last, the replays of the servers are compared: the same messages (ids and text), tool
//! calls (ids and arguments), recorded input messages and states, in the same order.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use agui_copilotkit_bench::{gc, http_client, rss_kib, JsonOrNull, Server};

mod report;
use report::report;
use serde_json::{json, Value};

struct Options {
    servers: Vec<(String, String)>,
    runs: usize,
    connects: usize,
    warmup: usize,
    memory: Vec<(usize, usize)>,
    concurrency: usize,
    out: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        servers: Vec::new(),
        runs: 100,
        connects: 50,
        warmup: 10,
        memory: Vec::new(),
        concurrency: 4,
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
            "--runs" => o.runs = value().parse().expect("--runs N"),
            "--connects" => o.connects = value().parse().expect("--connects N"),
            "--warmup" => o.warmup = value().parse().expect("--warmup N"),
            "--memory" => {
                let v = value();
                let shape = v
                    .split_once('x')
                    .and_then(|(t, r)| Some((t.parse().ok()?, r.parse().ok()?)))
                    .unwrap_or_else(|| panic!("--memory THREADSxRUNS, not {v:?}"));
                o.memory.push(shape);
            }
            "--concurrency" => o.concurrency = value().parse().expect("--concurrency N"),
            "--out" => o.out = Some(value()),
            other => panic!("unknown argument {other:?} (see the source's header)"),
        }
    }
    assert!(
        !o.servers.is_empty(),
        "give at least one --server NAME=COMMAND"
    );
    if o.memory.is_empty() {
        o.memory = vec![(200, 10), (20, 100)];
    }
    o
}

/// One SSE response, read to its end.
struct Sse {
    /// From sending the request to receiving the last complete event.
    to_last_event: Duration,
    bytes: usize,
    events: usize,
    /// The `data:` payloads, when asked for.
    frames: Vec<String>,
}

fn has_data(frame: &[u8]) -> bool {
    frame.starts_with(b"data:") || frame.windows(6).any(|w| w == b"\ndata:")
}

fn data_of(frame: &[u8]) -> String {
    let text = std::str::from_utf8(frame).expect("UTF-8 SSE");
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect::<Vec<_>>()
        .join("\n")
}

/// POSTs `body` and reads the SSE answer to its end; keeps the payloads when `keep`.
async fn post_sse(client: &reqwest::Client, url: &str, body: String, keep: bool) -> Sse {
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
    let mut sse = Sse {
        to_last_event: Duration::ZERO,
        bytes: 0,
        events: 0,
        frames: Vec::new(),
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("reading {url}: {e}"));
        sse.bytes += chunk.len();
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        let mut got = false;
        while let Some(i) = buf[start..].windows(2).position(|w| w == b"\n\n") {
            let frame = &buf[start..start + i];
            if has_data(frame) {
                sse.events += 1;
                got = true;
                if keep {
                    sse.frames.push(data_of(frame));
                }
            }
            start += i + 2;
        }
        buf.drain(..start);
        if got {
            sse.to_last_event = started.elapsed();
        }
    }
    sse
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
            true,
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
            "TEXT_MESSAGE_CONTENT" => text
                .entry(s("messageId"))
                .or_default()
                .push_str(&s("delta")),
            "TOOL_CALL_START" => {
                call_order.push(s("toolCallId"));
                args.entry(s("toolCallId")).or_default();
            }
            "TOOL_CALL_ARGS" => args
                .entry(s("toolCallId"))
                .or_default()
                .push_str(&s("delta")),
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

struct Memory {
    threads: usize,
    runs: usize,
    rss_before_kib: u64,
    rss_after_kib: u64,
    heap_before: Option<u64>,
    heap_after: Option<u64>,
    fill: Duration,
}

impl Memory {
    fn rss_per_thread_kib(&self) -> f64 {
        self.rss_after_kib.saturating_sub(self.rss_before_kib) as f64 / self.threads as f64
    }
    fn heap_per_thread_kib(&self) -> Option<f64> {
        Some(
            self.heap_after?.saturating_sub(self.heap_before?) as f64
                / 1024.0
                / self.threads as f64,
        )
    }
}

struct Figures {
    name: String,
    fill: Duration,
    /// Each run of the history, in order: time to its last event.
    run_times: Vec<Duration>,
    connect_median: Duration,
    connect_p90: Duration,
    connect_min: Duration,
    bytes: usize,
    events: usize,
    rss_start_kib: u64,
    rss_history_kib: u64,
    memory: Vec<Memory>,
    replay: Replay,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn median_of(times: &[Duration]) -> Duration {
    let mut v = times.to_vec();
    v.sort();
    percentile(&v, 0.5)
}

/// Starts the server and checks it serves the agent.
async fn start(name: &str, cmd: &str, client: &reqwest::Client) -> Server {
    eprintln!("[{name}] starting: {cmd}");
    let server = Server::start(cmd);
    let info = client
        .get(format!("{}/copilotkit/info", server.base))
        .send()
        .await
        .expect("GET /info")
        .json_or_null()
        .await;
    assert!(
        info["agents"]["bench"].is_object(),
        "{name}: /info lists no agent `bench`: {info}"
    );
    server
}

async fn measure(o: &Options, name: &str, cmd: &str) -> Figures {
    let client = http_client();
    let server = start(name, cmd, &client).await;
    let base = server.base.clone();
    let pid = server.pid();
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

    // 2. Connect.
    eprintln!(
        "[{name}] connect: {} warm-up + {} measured",
        o.warmup, o.connects
    );
    let url = format!("{base}/copilotkit/agent/bench/connect");
    for i in 0..o.warmup {
        post_sse(&client, &url, connect_body(&thread, i), false).await;
    }
    let mut times = Vec::with_capacity(o.connects);
    let (mut bytes, mut events) = (0, 0);
    for i in 0..o.connects {
        let sse = post_sse(&client, &url, connect_body(&thread, o.warmup + i), false).await;
        times.push(sse.to_last_event);
        if i > 0 {
            assert_eq!(sse.bytes, bytes, "{name}: replays differ in size");
            assert_eq!(sse.events, events, "{name}: replays differ in events");
        }
        bytes = sse.bytes;
        events = sse.events;
    }
    times.sort();
    let kept = post_sse(&client, &url, connect_body(&thread, usize::MAX), true).await;
    let replay = replay(&kept.frames);
    gc(&client, &base).await;
    let rss_history_kib = rss_kib(pid);
    drop(server);

    // 3. Memory per stored thread, each shape in a fresh process.
    let mut memory = Vec::new();
    for &(threads, runs) in &o.memory {
        let server = start(name, cmd, &client).await;
        let (base, pid) = (server.base.clone(), server.pid());
        eprintln!("[{name}] memory: {threads} threads x {runs} runs");
        // Warm-up: the same shape on `--concurrency` threads, so that code loading,
        // compilation, connections and their buffers are in the baseline.
        fill_threads(
            &client,
            &base,
            "warm",
            o.concurrency.max(1),
            runs,
            o.concurrency,
        )
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let heap_before = gc(&client, &base).await;
        let rss_before_kib = rss_kib(pid);
        let started = Instant::now();
        fill_threads(&client, &base, "mem", threads, runs, o.concurrency).await;
        let fill = started.elapsed();
        // Let anything deferred settle, then collect.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let heap_after = gc(&client, &base).await;
        let rss_after_kib = rss_kib(pid);
        drop(server);
        memory.push(Memory {
            threads,
            runs,
            rss_before_kib,
            rss_after_kib,
            heap_before,
            heap_after,
            fill,
        });
    }

    Figures {
        name: name.to_owned(),
        fill,
        run_times,
        connect_median: percentile(&times, 0.5),
        connect_p90: percentile(&times, 0.9),
        connect_min: times.first().copied().unwrap_or_default(),
        bytes,
        events,
        rss_start_kib,
        rss_history_kib,
        memory,
        replay,
    }
}

/// `threads` new threads of `runs` runs each, `concurrency` threads at a time.
async fn fill_threads(
    client: &reqwest::Client,
    base: &str,
    prefix: &str,
    threads: usize,
    runs: usize,
    concurrency: usize,
) {
    futures_util::stream::iter(0..threads)
        .map(|t| {
            let client = client.clone();
            let base = base.to_owned();
            let thread = format!("{prefix}-{t}");
            async move {
                let mut c = Conversation::new(thread);
                for _ in 0..runs {
                    c.turn(&client, &base).await;
                }
            }
        })
        .buffer_unordered(concurrency.max(1))
        .collect::<Vec<()>>()
        .await;
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
