//! The driver: starts the fake endpoint and the AG-UI server (each its own process),
//! plays the client with reqwest, and writes the tables.
//!
//! The paths, the same client code, the same token texts:
//!
//! * `upstream`: the client reads the fake endpoint's stream itself (what the model costs
//!   on its own: the floor);
//! * `adapter`: the client runs the `/chat` agent, which reads the endpoint (two hops);
//! * `alone`: the client runs the `/alone` agent, which emits the same events with no
//!   upstream (`agui-sdk-server`'s own cost);
//! * `alone, hand-off` (throughput only): `/alone` taking each token from another task
//!   through a one-slot channel, the way the HTTP client hands the adapter the body.

use std::process::Command;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::procs::{loadavg, others, snapshot, Agent, Proc};
use crate::report::{pct, signed_us, us, Report};
use crate::{now_ns, Ask};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Path {
    Upstream,
    Adapter,
    Alone,
    Handoff,
}

/// The paths of the delay phases.
const PATHS: [Path; 3] = [Path::Upstream, Path::Adapter, Path::Alone];

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Upstream => "upstream",
            Path::Adapter => "adapter",
            Path::Alone => "alone",
            Path::Handoff => "alone, hand-off",
        }
    }
}

struct Opts {
    phases: Vec<String>,
    out: Option<String>,
    ttft_rounds: usize,
    burst_tokens: usize,
    burst_reps: usize,
    paced_rate: f64,
    paced_tokens: usize,
    paced_streams: Vec<usize>,
    throughput: Vec<(usize, usize)>,
    throughput_reps: usize,
    callgrind_dir: String,
    callgrind_tokens: (usize, usize),
    agent_workers: Option<String>,
    current_thread_too: bool,
    paced_rounds: usize,
}

fn parse_opts(args: &[String]) -> Opts {
    let mut o = Opts {
        phases: vec![
            "ttft".into(),
            "burst".into(),
            "paced".into(),
            "throughput".into(),
        ],
        out: None,
        ttft_rounds: 300,
        burst_tokens: 2000,
        burst_reps: 5,
        paced_rate: 50.0,
        paced_tokens: 250,
        paced_streams: vec![1, 100],
        throughput: vec![(1, 100_000), (4, 25_000), (16, 6_250)],
        throughput_reps: 3,
        callgrind_dir: "callgrind".into(),
        callgrind_tokens: (1_000, 6_000),
        agent_workers: None,
        current_thread_too: true,
        paced_rounds: 5,
    };
    let mut it = args.iter();
    let list = |s: &str| -> Vec<String> { s.split(',').map(str::to_owned).collect() };
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| panic!("{a} needs a value"))
        };
        match a.as_str() {
            "--phases" => o.phases = list(&val()),
            "--out" => o.out = Some(val()),
            "--ttft-rounds" => o.ttft_rounds = val().parse().expect("number"),
            "--burst" => {
                let v = val();
                let (t, r) = v.split_once('x').expect("--burst TOKENSxREPS");
                o.burst_tokens = t.parse().expect("number");
                o.burst_reps = r.parse().expect("number");
            }
            "--paced-rate" => o.paced_rate = val().parse().expect("number"),
            "--paced-tokens" => o.paced_tokens = val().parse().expect("number"),
            "--paced-streams" => {
                o.paced_streams = list(&val())
                    .iter()
                    .map(|s| s.parse().expect("number"))
                    .collect()
            }
            "--throughput" => {
                // e.g. 1x100000,4x25000: runs at once x tokens each.
                o.throughput = list(&val())
                    .iter()
                    .map(|s| {
                        let (c, n) = s.split_once('x').expect("RUNSxTOKENS");
                        (c.parse().expect("number"), n.parse().expect("number"))
                    })
                    .collect()
            }
            "--throughput-reps" => o.throughput_reps = val().parse().expect("number"),
            "--callgrind-dir" => o.callgrind_dir = val(),
            "--agent-workers" => o.agent_workers = Some(val()),
            "--no-current-thread" => o.current_thread_too = false,
            "--paced-rounds" => o.paced_rounds = val().parse().expect("number"),
            "--callgrind-tokens" => {
                let v = val();
                let (a, b) = v.split_once(',').expect("--callgrind-tokens SMALL,BIG");
                o.callgrind_tokens = (a.parse().expect("number"), b.parse().expect("number"));
            }
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

/// What the client sends and where.
struct Target {
    client: reqwest::Client,
    upstream: String,
    agent: String,
}

impl Target {
    fn request(&self, path: Path, mut ask: Ask, run: u64) -> reqwest::RequestBuilder {
        ask.handoff = path == Path::Handoff;
        let (url, body) = match path {
            Path::Upstream => (
                format!("{}/chat/completions", self.upstream),
                json!({
                    "model": "bench-model",
                    "stream": true,
                    "stream_options": { "include_usage": true },
                    "messages": [{ "role": "user", "content": ask.prompt() }],
                }),
            ),
            Path::Adapter | Path::Alone | Path::Handoff => (
                format!(
                    "{}/{}",
                    self.agent,
                    if path == Path::Adapter {
                        "chat"
                    } else {
                        "alone"
                    }
                ),
                json!({
                    "threadId": "bench-thread",
                    "runId": format!("run-{run}"),
                    "state": {},
                    "messages": [{ "id": format!("u-{run}"), "role": "user", "content": ask.prompt() }],
                    "tools": [],
                    "context": [],
                    "forwardedProps": {},
                }),
            ),
        };
        self.client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(serde_json::to_vec(&body).expect("json"))
    }
}

/// What one run received.
#[derive(Default)]
struct Got {
    frames: usize,
    bytes: usize,
    sent: u64,
    first: Option<u64>,
    /// Per token: receive time minus write time, ns (measured runs only).
    delays: Vec<u64>,
    tail: Vec<u8>,
}

/// The text of a token event, if `frame` is one.
fn token_text(path: Path, frame: &[u8]) -> Option<String> {
    let data = frame.strip_prefix(b"data: ")?;
    if data == b"[DONE]" {
        return None;
    }
    let v: Value = serde_json::from_slice(data).ok()?;
    let text = match path {
        Path::Upstream => v["choices"][0]["delta"]["content"].as_str()?,
        _ if v["type"] == "TEXT_MESSAGE_CONTENT" => v["delta"].as_str()?,
        _ => return None,
    };
    (!text.is_empty()).then(|| text.to_owned())
}

/// One run. `measure`: every frame parsed and each token's delay taken; otherwise frames
/// are only counted (a cheap client, for throughput).
async fn one(t: &Target, path: Path, ask: Ask, measure: bool, run: u64) -> Result<Got, String> {
    let req = t.request(path, ask, run);
    let mut got = Got {
        sent: now_ns(),
        ..Got::default()
    };
    let resp = req.send().await.map_err(|e| format!("send: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("{}: HTTP {}", path.name(), resp.status()));
    }
    let mut body = resp.bytes_stream();
    let mut pending: Vec<u8> = Vec::new();
    let mut prev_nl = false;
    let mut next = 0usize;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| format!("read: {e}"))?;
        let now = now_ns();
        got.bytes += chunk.len();
        if measure {
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(p) = memchr::memmem::find(&pending[start..], b"\n\n") {
                let frame = &pending[start..start + p];
                got.frames += 1;
                if let Some(text) = token_text(path, frame) {
                    let (i, at) = text
                        .split_once(':')
                        .and_then(|(i, at)| {
                            Some((i.parse::<usize>().ok()?, at.parse::<u64>().ok()?))
                        })
                        .ok_or_else(|| format!("token text {text:?}"))?;
                    if i != next {
                        return Err(format!("{}: token {i} where {next} was due", path.name()));
                    }
                    next += 1;
                    got.delays.push(now.saturating_sub(at));
                    got.first.get_or_insert(now);
                }
                got.tail.clear();
                got.tail.extend_from_slice(frame);
                start += p + 2;
            }
            pending.drain(..start);
        } else {
            for p in memchr::memchr_iter(b'\n', &chunk) {
                let prev = if p == 0 {
                    prev_nl
                } else {
                    chunk[p - 1] == b'\n'
                };
                if prev {
                    got.frames += 1;
                }
            }
            prev_nl = chunk.last() == Some(&b'\n');
            got.tail.extend_from_slice(&chunk);
            if got.tail.len() > 8192 {
                got.tail.drain(..got.tail.len() - 1024);
            }
        }
    }
    // upstream: role, N tokens, finish, usage, [DONE]; AG-UI: RUN_STARTED,
    // TEXT_MESSAGE_START, N contents, TEXT_MESSAGE_END, RUN_FINISHED.
    if got.frames != ask.tokens + 4 {
        return Err(format!(
            "{}: {} frames for {} tokens; last: {}",
            path.name(),
            got.frames,
            ask.tokens,
            String::from_utf8_lossy(&got.tail)
        ));
    }
    let end = if path == Path::Upstream {
        "[DONE]"
    } else {
        "RUN_FINISHED"
    };
    if memchr::memmem::find(&got.tail, end.as_bytes()).is_none() {
        return Err(format!(
            "{}: the stream did not end with {end}: {}",
            path.name(),
            String::from_utf8_lossy(&got.tail)
        ));
    }
    if measure && next != ask.tokens {
        return Err(format!("{}: {next} tokens of {}", path.name(), ask.tokens));
    }
    Ok(got)
}

pub fn main(args: &[String]) {
    let opts = parse_opts(args);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(drive(opts));
}

async fn drive(opts: Opts) {
    let exe = std::env::current_exe()
        .expect("exe")
        .to_string_lossy()
        .into_owned();
    let upstream = Proc::spawn(&[exe.clone(), "upstream".into()]);
    let up_url = format!("http://127.0.0.1:{}/v1", upstream.port);
    let mut r = Report {
        text: String::new(),
    };
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    r.line(format!(
        "Machine: {cores} cores ({cpu_model}); load average at start {}.",
        loadavg()
    ));
    r.line("");

    if opts.phases.iter().any(|p| p == "callgrind") {
        callgrind(&opts, &exe, &up_url, &mut r).await;
    }
    let measured = ["ttft", "burst", "paced", "throughput"];
    if opts.phases.iter().any(|p| measured.contains(&p.as_str())) {
        let mut agents = vec![Agent::spawn(
            &exe,
            &up_url,
            opts.agent_workers.as_deref(),
            match opts.agent_workers.as_deref() {
                None => "multi-thread",
                Some("0") => "current-thread (--agent-workers 0)",
                Some(_) => "multi-thread (--agent-workers)",
            },
        )];
        if opts.current_thread_too {
            agents.push(Agent::spawn(&exe, &up_url, Some("0"), "current-thread"));
        }
        measure(&opts, &upstream, &agents, &up_url, &mut r).await;
        r.line(format!("Load average at the end: {}.", loadavg()));
        for a in agents {
            a.proc.stop(Duration::from_secs(5));
        }
    }
    upstream.stop(Duration::from_secs(1));
    if let Some(out) = &opts.out {
        std::fs::write(out, &r.text).expect("write the report");
    }
}

async fn measure(opts: &Opts, up: &Proc, agents: &[Agent], up_url: &str, r: &mut Report) {
    let client = reqwest::Client::new();
    let targets: Vec<Target> = agents
        .iter()
        .map(|a| Target {
            client: client.clone(),
            upstream: up_url.to_owned(),
            agent: a.url.clone(),
        })
        .collect();
    let t = &targets[0];
    let a = &agents[0];
    let mut run = 0u64;
    let mut next_run = || {
        run += 1;
        run
    };
    // Warm-up: connections, allocators, caches.
    for t in &targets {
        for _ in 0..20 {
            for p in [Path::Upstream, Path::Adapter, Path::Alone, Path::Handoff] {
                one(t, p, Ask::new(50, 0.0), true, next_run())
                    .await
                    .expect("warm-up");
            }
        }
        one(t, Path::Adapter, Ask::new(20_000, 0.0), false, next_run())
            .await
            .expect("warm-up");
    }

    if opts.phases.iter().any(|p| p == "ttft") {
        let before = snapshot(up, a);
        let mut firsts: [Vec<u64>; 3] = Default::default();
        for round in 0..opts.ttft_rounds {
            for k in 0..3 {
                let idx = (round + k) % 3;
                let g = one(t, PATHS[idx], Ask::new(1, 0.0), true, next_run())
                    .await
                    .expect("ttft run");
                firsts[idx].push(g.first.expect("a token") - g.sent);
            }
        }
        let after = snapshot(up, a);
        for v in firsts.iter_mut() {
            v.sort_unstable();
        }
        r.line(format!(
            "### Time to the first token ({} runs of one token per path, interleaved; other processes used {:.2} cores)",
            opts.ttft_rounds,
            others(before, after)
        ));
        r.line("");
        r.line(
            "From the client sending its request to its receiving the first token's event (µs).",
        );
        r.line("");
        r.line("| path | p50 | p90 | p99 | p50 added to `upstream` |");
        r.line("|---|---:|---:|---:|---:|");
        let base = pct(&firsts[0], 0.5) as i64;
        for (i, p) in PATHS.iter().enumerate() {
            let v = &firsts[i];
            r.line(format!(
                "| {} | {} | {} | {} | {} |",
                p.name(),
                us(pct(v, 0.5)),
                us(pct(v, 0.9)),
                us(pct(v, 0.99)),
                if i == 0 {
                    "".into()
                } else {
                    signed_us(pct(v, 0.5) as i64 - base)
                }
            ));
        }
        r.line("");
    }

    if opts.phases.iter().any(|p| p == "burst") {
        let before = snapshot(up, a);
        let mut delays: [Vec<u64>; 3] = Default::default();
        let mut walls: [Vec<u64>; 3] = Default::default();
        for rep in 0..opts.burst_reps {
            for k in 0..3 {
                let idx = (rep + k) % 3;
                let ask = Ask::new(opts.burst_tokens, 0.0);
                let g = one(t, PATHS[idx], ask, true, next_run())
                    .await
                    .expect("burst run");
                walls[idx].push(now_ns() - g.sent);
                delays[idx].extend(g.delays);
            }
        }
        let after = snapshot(up, a);
        r.line(format!(
            "### Delay per token, upstream as fast as it can ({} runs of {} tokens per path, interleaved; other processes used {:.2} cores)",
            opts.burst_reps,
            opts.burst_tokens,
            others(before, after)
        ));
        r.line("");
        r.line("From the token's write (by the endpoint, or by the `alone` agent) to the client's receiving its event (µs); every token of every run. A burst queues: the delay includes waiting behind earlier tokens, so it grows along the answer when a hop is slower than the writer.");
        r.line("");
        r.line("| path | p50 | p90 | p99 | max | whole answer (ms, median) |");
        r.line("|---|---:|---:|---:|---:|---:|");
        for (i, p) in PATHS.iter().enumerate() {
            let v = &mut delays[i];
            v.sort_unstable();
            walls[i].sort_unstable();
            r.line(format!(
                "| {} | {} | {} | {} | {} | {:.1} |",
                p.name(),
                us(pct(v, 0.5)),
                us(pct(v, 0.9)),
                us(pct(v, 0.99)),
                us(*v.last().unwrap_or(&0)),
                pct(&walls[i], 0.5) as f64 / 1e6
            ));
        }
        r.line("");
    }

    if opts.phases.iter().any(|p| p == "paced") {
        let seg = (opts.paced_tokens / opts.paced_rounds.max(1)).max(1);
        r.line(format!(
            "### Delay per token at {} tokens/s ({} tokens per stream and path, in {} rounds of {seg} with the paths interleaved; streams start spread over one token interval)",
            opts.paced_rate,
            seg * opts.paced_rounds.max(1),
            opts.paced_rounds.max(1)
        ));
        r.line("");
        r.line("From the token's write to the client's receiving its event (µs), every token of every stream; CPU time per token of each process (µs). At this pace every token is its own write on every hop. The `alone` agent's CPU includes its own pacing timer per token (the endpoint's work on the other paths).");
        r.line("");
        r.line("| streams | path | p50 | p90 | p99 | max | p50 added to `upstream` | p99 added | CPU/token: endpoint | AG-UI server | client | other processes (cores) |");
        r.line("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for &streams in &opts.paced_streams {
            let mut delays: [Vec<u64>; 3] = Default::default();
            let mut busy = [0f64; 3];
            let mut wall = [0f64; 3];
            // CPU seconds of the endpoint, the server and the client, per path.
            let mut cpu = [[0f64; 3]; 3];
            for round in 0..opts.paced_rounds.max(1) {
                for k in 0..3 {
                    let idx = (round + k) % 3;
                    let p = PATHS[idx];
                    let ask = Ask::new(seg, opts.paced_rate);
                    let gap = Duration::from_secs_f64(1.0 / opts.paced_rate / streams as f64);
                    let runs: Vec<u64> = (0..streams).map(|_| next_run()).collect();
                    let before = snapshot(up, a);
                    let all = futures_util::future::join_all(runs.iter().enumerate().map(
                        |(k, &run)| async move {
                            tokio::time::sleep(gap * k as u32).await;
                            one(t, p, ask, true, run).await
                        },
                    ))
                    .await;
                    let after = snapshot(up, a);
                    let secs = (after.wall - before.wall) as f64 / 1e9;
                    busy[idx] += others(before, after) * secs;
                    wall[idx] += secs;
                    cpu[idx][0] += after.upstream - before.upstream;
                    cpu[idx][1] += after.agent - before.agent;
                    cpu[idx][2] += after.driver - before.driver;
                    for g in all {
                        delays[idx].extend(g.expect("paced run").delays);
                    }
                }
            }
            let mut base = (0i64, 0i64);
            for (i, p) in PATHS.iter().enumerate() {
                let v = &mut delays[i];
                v.sort_unstable();
                let (p50, p99) = (pct(v, 0.5) as i64, pct(v, 0.99) as i64);
                if i == 0 {
                    base = (p50, p99);
                }
                let n = v.len().max(1) as f64;
                let c = |x: f64, used: bool| {
                    let v = x / n * 1e6;
                    if used {
                        format!("{v:.2}")
                    } else {
                        format!("({v:.2})")
                    }
                };
                r.line(format!(
                    "| {streams} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                    p.name(),
                    us(p50 as u64),
                    us(pct(v, 0.9)),
                    us(p99 as u64),
                    us(*v.last().unwrap_or(&0)),
                    if i == 0 {
                        "".into()
                    } else {
                        signed_us(p50 - base.0)
                    },
                    if i == 0 {
                        "".into()
                    } else {
                        signed_us(p99 - base.1)
                    },
                    c(cpu[i][0], *p != Path::Alone),
                    c(cpu[i][1], *p != Path::Upstream),
                    c(cpu[i][2], true),
                    busy[i] / wall[i].max(1e-9)
                ));
            }
        }
        r.line("");
    }

    if opts.phases.iter().any(|p| p == "throughput") {
        throughput(opts, up, agents, &targets, &mut next_run, r).await;
    }
}

/// Events per second end to end, and CPU per token of every process.
async fn throughput(
    opts: &Opts,
    up: &Proc,
    agents: &[Agent],
    targets: &[Target],
    next_run: &mut impl FnMut() -> u64,
    r: &mut Report,
) {
    // The rows: the endpoint read directly, then each path through each server.
    let mut rows: Vec<(Path, usize)> = vec![(Path::Upstream, 0)];
    for i in 0..agents.len() {
        for p in [Path::Adapter, Path::Alone, Path::Handoff] {
            rows.push((p, i));
        }
    }
    r.line(format!(
        "### Throughput, upstream as fast as it can (median of {} repetitions, rows interleaved)",
        opts.throughput_reps
    ));
    r.line("");
    r.line("Token events per second the client received (one `TEXT_MESSAGE_CONTENT`, or one upstream chunk, per token); CPU time per token of each process (µs: user + system, all threads, from `/proc/PID/task/*/schedstat`); context switches of the AG-UI server per token. The client only counts frames here.");
    r.line("");
    r.line("| runs × tokens | path | AG-UI server runtime | tokens/s | × `upstream` | bytes/token | CPU/token: endpoint | AG-UI server | client | server context switches/token | other processes (cores) |");
    r.line("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &(runs, tokens) in &opts.throughput {
        // Per row: tokens/s, CPU endpoint, CPU server, CPU client, others, bytes/token,
        // switches/token.
        let mut got: Vec<Vec<[f64; 7]>> = vec![Vec::new(); rows.len()];
        for rep in 0..opts.throughput_reps {
            for k in 0..rows.len() {
                let idx = (rep + k) % rows.len();
                let (p, ai) = rows[idx];
                let t = &targets[ai];
                let ask = Ask::new(tokens, 0.0);
                let ids: Vec<u64> = (0..runs).map(|_| next_run()).collect();
                let before = snapshot(up, &agents[ai]);
                let all = futures_util::future::join_all(
                    ids.iter().map(|&run| one(t, p, ask, false, run)),
                )
                .await;
                let after = snapshot(up, &agents[ai]);
                let mut bytes = 0usize;
                for g in all {
                    bytes += g.expect("throughput run").bytes;
                }
                let n = (runs * tokens) as f64;
                let wall = (after.wall - before.wall) as f64 / 1e9;
                got[idx].push([
                    n / wall,
                    (after.upstream - before.upstream) / n * 1e6,
                    (after.agent - before.agent) / n * 1e6,
                    (after.driver - before.driver) / n * 1e6,
                    others(before, after),
                    bytes as f64 / n,
                    (after.agent_switches - before.agent_switches) as f64 / n,
                ]);
            }
        }
        let med: Vec<[f64; 7]> = got
            .iter_mut()
            .map(|v| {
                v.sort_by(|a, b| a[0].total_cmp(&b[0]));
                v[v.len() / 2]
            })
            .collect();
        for (i, &(p, ai)) in rows.iter().enumerate() {
            let m = med[i];
            let direct = p == Path::Upstream;
            r.line(format!(
                "| {runs} × {tokens} | {} | {} | {:.0} | {:.2} | {:.0} | {} | {} | {:.2} | {} | {:.2} |",
                p.name(),
                if direct { "" } else { agents[ai].label },
                m[0],
                m[0] / med[0][0],
                m[5],
                if matches!(p, Path::Alone | Path::Handoff) {
                    format!("({:.2})", m[1])
                } else {
                    format!("{:.2}", m[1])
                },
                if direct {
                    format!("({:.2})", m[2])
                } else {
                    format!("{:.2}", m[2])
                },
                m[3],
                if direct { "".to_owned() } else { format!("{:.2}", m[6]) },
                m[4]
            ));
        }
    }
    r.line("");
    r.line("A figure in parentheses is a process the path does not use (idle CPU, for scale).");
    r.line("");
}

/// Instruction counts of the AG-UI server under callgrind: two runs of different lengths
/// per path, each in a fresh process; the difference over the extra tokens is the
/// marginal count per token (start-up and per-run costs cancel).
async fn callgrind(opts: &Opts, exe: &str, up_url: &str, r: &mut Report) {
    let (small, big) = opts.callgrind_tokens;
    std::fs::create_dir_all(&opts.callgrind_dir).expect("callgrind dir");
    let mut totals = std::collections::HashMap::new();
    for p in [Path::Adapter, Path::Alone] {
        for n in [small, big] {
            let file = format!("{}/{}-{n}.out", opts.callgrind_dir, p.name());
            let agent = Proc::spawn(&[
                "valgrind".into(),
                "--tool=callgrind".into(),
                format!("--callgrind-out-file={file}"),
                exe.into(),
                "agent".into(),
                "--upstream".into(),
                up_url.into(),
            ]);
            let t = Target {
                client: reqwest::Client::new(),
                upstream: up_url.into(),
                agent: format!("http://127.0.0.1:{}", agent.port),
            };
            one(&t, p, Ask::new(n, 0.0), false, 1)
                .await
                .expect("callgrind run");
            drop(t);
            agent.stop(Duration::from_secs(60));
            let text = std::fs::read_to_string(&file).expect("callgrind output");
            let ir: u64 = text
                .lines()
                .find_map(|l| {
                    l.strip_prefix("totals:")
                        .or_else(|| l.strip_prefix("summary:"))
                })
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .expect("callgrind totals");
            totals.insert((p, n), ir);
        }
    }
    let per = |p: Path| (totals[&(p, big)] - totals[&(p, small)]) as f64 / (big - small) as f64;
    let (adapter, alone) = (per(Path::Adapter), per(Path::Alone));
    r.line(format!(
        "### Instructions per token in the AG-UI server process (callgrind; ({big} − {small} tokens) difference, fresh process each)"
    ));
    r.line("");
    r.line("| path | instructions/token |");
    r.line("|---|---:|");
    r.line(format!(
        "| adapter (`/chat`, reading the endpoint) | {adapter:.0} |"
    ));
    r.line(format!("| alone (`/alone`, no upstream) | {alone:.0} |"));
    r.line(format!(
        "| the adapter's own share (difference) | {:.0} |",
        adapter - alone
    ));
    r.line("");

    // Where the adapter's instructions go: inclusive counts in the long run.
    let file = format!("{}/adapter-{big}.out", opts.callgrind_dir);
    let out = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=99.9", &file])
        .output();
    let Ok(out) = out else {
        r.line("(callgrind_annotate not found: no breakdown)");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let parts: [(&str, &[&str]); 9] = [
        ("the adapter's turn (`agui_sdk_model::upstream::model_turn`: body read, SSE split, JSON, translation, emit)", &["agui_sdk_model::upstream::model_turn::{{closure}} ["]),
        ("  the body read under the per-read timeout (`tokio::time::Timeout::poll`)", &["tokio::time::timeout::Timeout<T> as core::future::future::Future>::poll ["]),
        ("  `SseReader::push` (SSE split, chunk JSON and translation)", &["agui_sdk_model::sse::SseReader::push ["]),
        ("    the chunk's JSON (`serde_json` into `Chunk`)", &["agui_sdk_model::chat::wire::parse ["]),
        ("    `Turn::push_chunk` (chunk to events)", &["agui_sdk_model::chat::translate::Turn::push_chunk ["]),
        ("  `Emitter::emit` (channel send)", &["agui_sdk_server::agent::Emitter::emit::{{closure}} ["]),
        ("the response body (`RunStream::poll_next`: agent poll, lifecycle, encoding; includes the turn)", &["<agui_sdk_server::response::RunStream as futures_core::stream::Stream>::poll_next ["]),
        ("  SSE encoding (`encode_into`)", &["agui_sdk_server::response::encode_into ["]),
        ("the upstream connection task (hyper client: socket read, chunked decoding)", &["<hyper::client::conn::http1::upgrades::UpgradeableConnection<I,B> as core::future::future::Future>::poll ["]),
    ];
    r.line(format!("Breakdown of the adapter run of {big} tokens (inclusive instructions per token; nested rows are part of the row above; what did not show in the profile is left out):"));
    r.line("");
    r.line("| part | instructions/token |");
    r.line("|---|---:|");
    for (label, pats) in parts {
        let mut best: Option<u64> = None;
        for line in text.lines() {
            if pats.iter().any(|p| line.contains(p)) {
                let n: Option<u64> = line
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.replace(',', "").parse().ok());
                if let Some(n) = n {
                    best = Some(best.map_or(n, |b: u64| b.max(n)));
                }
            }
        }
        if let Some(n) = best {
            r.line(format!("| {label} | {:.0} |", n as f64 / big as f64));
        }
    }
    r.line("");
}
