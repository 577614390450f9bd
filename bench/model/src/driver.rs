//! The driver: starts the fake upstream, the Rust AG-UI server and (with `--node`) the
//! Node one, plays the AG-UI client, measures, writes the tables.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use crate::Ask;

const APIS: [&str; 3] = ["chat", "responses", "anthropic"];

struct Proc {
    child: Child,
    port: u16,
}

impl Proc {
    fn spawn(cmd: &[String], envs: &[(String, String)]) -> Proc {
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the port");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{cmd:?} printed {line:?}"));
        Proc { child, port }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop(mut self) {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU seconds (user + system, every thread, ended ones too) of a process, from
/// `/proc/PID/stat`.
fn cpu_of(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    // Fields after the name start at 3 (state); utime is 14, stime 15.
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    ticks / (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// Busy CPU seconds of the whole machine (all cores), from `/proc/stat`.
fn machine_busy() -> f64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<f64> = s
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return 0.0;
    }
    // user nice system idle iowait irq softirq steal …: busy is all but idle and iowait.
    let total: f64 = v.iter().take(8).sum();
    // SAFETY: sysconf has no preconditions.
    (total - v[3] - v[4]) / (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// Resident set size of a process, KiB.
fn rss_kib(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// A server under test: its name, its process, and the URL of each API's agent.
struct Server {
    name: &'static str,
    proc: Proc,
    urls: Vec<(&'static str, String)>,
    gc: Option<String>,
}

#[derive(Debug, Default, Clone)]
struct Seen {
    bytes: usize,
    frames: usize,
    reasoning: usize,
    text: usize,
    encrypted: usize,
    finished: bool,
    error: Option<String>,
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    memchr::memmem::find_iter(hay, needle).count()
}

impl Seen {
    fn frames_of(&mut self, done: &[u8]) {
        self.frames += count(done, b"\n\n");
        self.reasoning += count(done, b"\"type\":\"REASONING_MESSAGE_CONTENT\"");
        self.text += count(done, b"\"type\":\"TEXT_MESSAGE_CONTENT\"");
        self.encrypted += count(done, b"\"type\":\"REASONING_ENCRYPTED_VALUE\"");
        if memchr::memmem::find(done, b"\"type\":\"RUN_FINISHED\"").is_some() {
            self.finished = true;
        }
        if let Some(at) = memchr::memmem::find(done, b"\"type\":\"RUN_ERROR\"") {
            let end = (at + 300).min(done.len());
            self.error = Some(String::from_utf8_lossy(&done[at..end]).into_owned());
        }
    }
}

fn body(ask: Ask, n: usize) -> String {
    serde_json::json!({
        "threadId": format!("bench-thread-{n}"), "runId": format!("bench-run-{n}"),
        "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{ "id": format!("u-{n}"), "role": "user", "content": ask.prompt() }],
    })
    .to_string()
}

static RUN: AtomicUsize = AtomicUsize::new(0);

/// One run read to its end; `first` is told when its first content event came.
async fn run(
    client: &reqwest::Client,
    url: &str,
    ask: Ask,
    first: Option<Arc<AtomicUsize>>,
) -> Seen {
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    let mut seen = Seen::default();
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body(ask, n))
        .send()
        .await;
    let resp = match resp {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => {
            seen.error = Some(format!(
                "{}: {}",
                r.status(),
                r.text().await.unwrap_or_default()
            ));
            return seen;
        }
        Err(e) => {
            seen.error = Some(e.to_string());
            return seen;
        }
    };
    let mut stream = resp.bytes_stream();
    let mut carry: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut told = false;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else { break };
        seen.bytes += chunk.len();
        carry.extend_from_slice(&chunk);
        // Only whole frames are counted (CRLF-free: both servers write "\n\n").
        if let Some(end) = memchr::memmem::rfind(&carry, b"\n\n") {
            seen.frames_of(&carry[..end + 2]);
            carry.drain(..end + 2);
        }
        // Open: its first event came (`RUN_STARTED`; a server may drop the deltas it
        // does not map, so content is not waited for).
        if !told && seen.frames > 0 {
            told = true;
            if let Some(f) = &first {
                f.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    seen
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

struct CpuRow {
    server: &'static str,
    api: &'static str,
    per_token: Vec<f64>,
    upstream_per_token: Vec<f64>,
    rate: Vec<f64>,
    others: Vec<f64>,
    bytes_per_token: f64,
    check: String,
}

struct MemRow {
    server: &'static str,
    api: &'static str,
    idle_mib: f64,
    open_mib: f64,
    per_run_kib: f64,
}

pub fn main(args: &[String]) {
    let mut tokens = 100_000usize;
    let mut reasoning_share = 0.5f64;
    let mut reps = 3usize;
    let mut open = 100usize;
    let mut node: Option<String> = None;
    let mut out: Option<String> = None;
    let mut phases = "memory,cpu".to_owned();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut v = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| panic!("{a} needs a value"))
        };
        match a.as_str() {
            "--tokens" => tokens = v().parse().expect("--tokens N"),
            "--reasoning-share" => reasoning_share = v().parse().expect("--reasoning-share F"),
            "--reps" => reps = v().parse().expect("--reps N"),
            "--open" => open = v().parse().expect("--open N"),
            "--node" => node = Some(v()),
            "--out" => out = Some(v()),
            "--phases" => phases = v(),
            other => panic!("unknown argument {other}"),
        }
    }
    let me = std::env::current_exe()
        .expect("own path")
        .display()
        .to_string();
    let upstream = Proc::spawn(&[me.clone(), "upstream".into()], &[]);
    let base = format!("http://127.0.0.1:{}/v1", upstream.port);
    let spawn = |name: &'static str| -> Server {
        if name == "rust" {
            let p = Proc::spawn(
                &[
                    me.clone(),
                    "agent".into(),
                    "--upstream".into(),
                    base.clone(),
                ],
                &[],
            );
            return Server {
                name,
                urls: APIS
                    .iter()
                    .map(|a| (*a, format!("http://127.0.0.1:{}/{a}", p.port)))
                    .collect(),
                proc: p,
                gc: None,
            };
        }
        let cmd: Vec<String> = node
            .as_deref()
            .unwrap_or("")
            .split(' ')
            .map(str::to_owned)
            .collect();
        let p = Proc::spawn(&cmd, &[("BENCH_UPSTREAM".into(), base.clone())]);
        Server {
            name,
            urls: APIS
                .iter()
                .map(|a| {
                    (
                        *a,
                        format!("http://127.0.0.1:{}/copilotkit/agent/{a}/run", p.port),
                    )
                })
                .collect(),
            gc: Some(format!("http://127.0.0.1:{}/debug/gc", p.port)),
            proc: p,
        }
    };
    let names: Vec<&'static str> = if node.is_some() {
        vec!["rust", "node"]
    } else {
        vec!["rust"]
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1000)
        .build()
        .expect("client");
    let reasoning = (tokens as f64 * reasoning_share).round() as usize;
    let big = Ask {
        reasoning,
        tokens: tokens - reasoning,
        rate: 0.0,
        words: false,
        tool: false,
        redacted: false,
    };
    let mut cpu_rows: Vec<CpuRow> = Vec::new();
    let mut mem_rows: Vec<MemRow> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let servers = rt.block_on(async {
        // Memory: a fresh server process for each API (an allocator keeps what earlier
        // runs freed, which would hide a later row's growth), warmed up on that API.
        if phases.contains("memory") {
            for name in &names {
                for api in APIS {
                    let s = spawn(name);
                    let url = &s.urls.iter().find(|(a, _)| *a == api).expect("api").1;
                    for _ in 0..2 {
                        let seen = run(
                            &client,
                            url,
                            Ask {
                                reasoning: 2000,
                                tokens: 2000,
                                rate: 0.0,
                                words: false,
                                tool: false,
                                redacted: false,
                            },
                            None,
                        )
                        .await;
                        if !seen.finished || seen.error.is_some() {
                            notes.push(format!("warm-up {} {api}: {seen:?}", s.name));
                        }
                    }
                    let gc = || async {
                        if let Some(g) = &s.gc {
                            let _ = client.post(g).send().await;
                        }
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    };
                    gc().await;
                    let idle = rss_kib(s.proc.pid());
                    let first = Arc::new(AtomicUsize::new(0));
                    // Slow runs: 2 deltas a second, a reasoning span open for minutes.
                    let slow = Ask {
                        reasoning: 1000,
                        tokens: 1000,
                        rate: 2.0,
                        words: false,
                        tool: false,
                        redacted: false,
                    };
                    let tasks: Vec<_> = (0..open)
                        .map(|_| {
                            let (c, u, f) = (client.clone(), url.clone(), first.clone());
                            tokio::spawn(async move { run(&c, &u, slow, Some(f)).await })
                        })
                        .collect();
                    let until = Instant::now() + Duration::from_secs(60);
                    while first.load(Ordering::SeqCst) < open && Instant::now() < until {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let opened = first.load(Ordering::SeqCst);
                    // A few deltas each, then the runs' steady state.
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    gc().await;
                    let busy = rss_kib(s.proc.pid());
                    for t in &tasks {
                        t.abort();
                    }
                    if opened < open {
                        notes.push(format!(
                            "memory {} {api}: only {opened} of {open} runs streamed",
                            s.name
                        ));
                    }
                    mem_rows.push(MemRow {
                        server: s.name,
                        api,
                        idle_mib: idle / 1024.0,
                        open_mib: busy / 1024.0,
                        per_run_kib: (busy - idle) / opened.max(1) as f64,
                    });
                    eprintln!(
                        "memory {} {api}: idle {idle} KiB, {opened} open {busy} KiB",
                        s.name
                    );
                    s.proc.stop();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
        let servers: Vec<Server> = names.iter().map(|n| spawn(n)).collect();
        // Warm-up: every path twice, small (the JIT, lazy set-up).
        for s in &servers {
            for (api, url) in &s.urls {
                for _ in 0..2 {
                    let seen = run(
                        &client,
                        url,
                        Ask {
                            reasoning: 2000,
                            tokens: 2000,
                            rate: 0.0,
                            words: false,
                            tool: false,
                            redacted: false,
                        },
                        None,
                    )
                    .await;
                    if !seen.finished || seen.error.is_some() {
                        notes.push(format!("warm-up {} {api}: {seen:?}", s.name));
                    }
                }
            }
        }
        if phases.contains("cpu") {
            for s in &servers {
                for (api, _) in &s.urls {
                    cpu_rows.push(CpuRow {
                        server: s.name,
                        api,
                        per_token: vec![],
                        upstream_per_token: vec![],
                        rate: vec![],
                        others: vec![],
                        bytes_per_token: 0.0,
                        check: String::new(),
                    });
                }
            }
            for _ in 0..reps {
                let mut row = 0;
                for s in &servers {
                    for (api, url) in &s.urls {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        let me = std::process::id();
                        let (c0, u0, t0) =
                            (cpu_of(s.proc.pid()), cpu_of(upstream.pid()), Instant::now());
                        let (m0, d0) = (machine_busy(), cpu_of(me));
                        let seen = run(&client, url, big, None).await;
                        let (c1, u1, t1) =
                            (cpu_of(s.proc.pid()), cpu_of(upstream.pid()), Instant::now());
                        let (m1, d1) = (machine_busy(), cpu_of(me));
                        let others = ((m1 - m0) - (c1 - c0) - (u1 - u0) - (d1 - d0)).max(0.0)
                            / (t1 - t0).as_secs_f64();
                        let n = tokens as f64;
                        let r = &mut cpu_rows[row];
                        r.per_token.push((c1 - c0) * 1e6 / n);
                        r.upstream_per_token.push((u1 - u0) * 1e6 / n);
                        r.rate.push(n / (t1 - t0).as_secs_f64());
                        r.others.push(others);
                        r.bytes_per_token = seen.bytes as f64 / n;
                        let ok = seen.finished
                            && seen.error.is_none()
                            && seen.reasoning == big.reasoning
                            && seen.text == big.tokens;
                        let whole =
                            seen.finished && seen.error.is_none() && seen.text == big.tokens;
                        r.check = format!(
                            "{}: {} reasoning + {} text deltas, {} encrypted value(s){}",
                            if ok {
                                "ok"
                            } else if whole && seen.reasoning == 0 {
                                "reasoning not streamed"
                            } else {
                                "WRONG"
                            },
                            seen.reasoning,
                            seen.text,
                            seen.encrypted,
                            seen.error
                                .as_deref()
                                .map(|e| format!(", error {e}"))
                                .unwrap_or_default()
                        );
                        eprintln!(
                            "cpu {} {api}: {:.2} µs/token ({})",
                            s.name,
                            (c1 - c0) * 1e6 / n,
                            r.check
                        );
                        row += 1;
                    }
                }
            }
        }
        servers
    });
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut md = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        md,
        "Machine: {} cores; load average at start {}, at the end {}.\n",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        load_end
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    if !cpu_rows.is_empty() {
        let _ = writeln!(md, "### CPU per streamed token ({} runs of {} deltas: {} reasoning, then {} text; as fast as the upstream writes; median of {reps}, rows interleaved)\n", reps, tokens, big.reasoning, big.tokens);
        let _ = writeln!(md, "CPU time (user + system, `/proc/PID/stat`) of the AG-UI server process over the run, per delta (µs); min–max of the runs; the fake upstream's for scale.\n");
        let _ = writeln!(md, "| server | API | CPU/token (µs) | min–max | tokens/s | AG-UI bytes/token | upstream CPU/token (µs) | other processes (cores) | events |");
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---|");
        for r in &mut cpu_rows {
            let mut v = r.per_token.clone();
            let lo = v.iter().cloned().fold(f64::MAX, f64::min);
            let hi = v.iter().cloned().fold(0.0, f64::max);
            let _ = writeln!(
                md,
                "| {} | {} | {:.2} | {:.2}–{:.2} | {:.0} | {:.0} | {:.2} | {:.2} | {} |",
                r.server,
                r.api,
                median(&mut v),
                lo,
                hi,
                median(&mut r.rate.clone()),
                r.bytes_per_token,
                median(&mut r.upstream_per_token.clone()),
                median(&mut r.others.clone()),
                r.check
            );
        }
        if servers.len() > 1 {
            let _ = writeln!(md, "\n| API | node CPU/token ÷ rust CPU/token |");
            let _ = writeln!(md, "|---|---:|");
            for api in APIS {
                let m = |name: &str| {
                    cpu_rows
                        .iter()
                        .find(|r| r.server == name && r.api == api)
                        .map(|r| median(&mut r.per_token.clone()))
                };
                if let (Some(rs), Some(nd)) = (m("rust"), m("node")) {
                    let _ = writeln!(md, "| {api} | {:.1} |", nd / rs);
                }
            }
        }
    }
    if !mem_rows.is_empty() {
        let _ = writeln!(md, "\n### Memory per open model run ({open} concurrent runs, each streaming 2 deltas a second, its reasoning open)\n");
        let _ = writeln!(md, "`VmRSS` of the AG-UI server process before the runs and with all {open} open (3 s after the last one's first delta); the Node server collects garbage (twice) before each reading.\n");
        let _ = writeln!(
            md,
            "| server | API | idle RSS (MiB) | {open} open (MiB) | per open run (KiB) |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|");
        for r in &mem_rows {
            let _ = writeln!(
                md,
                "| {} | {} | {:.1} | {:.1} | {:.1} |",
                r.server, r.api, r.idle_mib, r.open_mib, r.per_run_kib
            );
        }
    }
    for n in &notes {
        let _ = writeln!(md, "\nNote: {n}");
    }
    print!("{md}");
    if let Some(path) = out {
        std::fs::write(path, &md).expect("write --out");
    }
    for s in servers {
        s.proc.stop();
    }
    upstream.stop();
}
