//! Reducer benchmark: `TEXT_MESSAGE_CONTENT` deltas (20 bytes each, spread over many
//! messages) interleaved with `STATE_DELTA` patches on a large state, at several sizes,
//! each measured in a fresh process (time and peak resident memory).
//!
//! At scale 1: 1,000,000 deltas over 1,000 messages and 10,000 patches on a 1 MB
//! state, each patch a `copy` of one entry and a `replace` of another (the `copy` is
//! what once made every patch cost the whole state). Scales 0.1 and 10 multiply the number of events (the messages and state keep
//! their number and size, so each message ends 10 times longer or shorter) and show
//! that the cost per event does not grow.
//!
//! Usage (a `harness = false` bench):
//! - `cargo bench -p agui-sdk-core --bench apply` runs scales 0.1, 1 and 10 (run without
//!   `--bench`, as `cargo test --all-targets` does, it only smoke-tests scale 0.001);
//! - `... -- --scales 0.01,0.1` picks the scales;
//! - `... -- --write-jsonl SCALE PATH` writes the workload as JSON Lines (the input
//!   `scripts/bench-apply.sh` gives to both us and the reference);
//! - `... -- --apply-jsonl PATH` decodes a JSON Lines file, then times applying it.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::Command;
use std::time::Instant;

use agui_sdk_core::semantics::Reducer;
use agui_sdk_core::{Event, JsonObject, PatchOperation};
use serde_json::Value;

const DELTA: &str = "0123456789abcdefghij"; // 20 bytes
const BATCH: usize = 65_536;

struct Workload {
    messages: usize,
    deltas: usize,
    patches: usize,
    state_keys: usize,
}

impl Workload {
    fn at(scale: f64) -> Workload {
        let n = |x: f64| ((x * scale).round() as usize).max(1);
        // The conversation's shape is fixed (1,000 messages, a 1 MB state); the scale
        // multiplies the number of events, so messages grow longer as it rises.
        Workload {
            messages: 1_000,
            deltas: n(1_000_000.0),
            patches: n(10_000.0),
            // ~112 bytes per entry: 1 MB.
            state_keys: 9_000,
        }
    }

    /// Calls `f` with every event of the workload, in order, without keeping them.
    fn for_each(&self, mut f: impl FnMut(Event)) {
        f(Event::run_started("thread", "run"));
        let mut state = JsonObject::new();
        for k in 0..self.state_keys {
            state.insert(format!("key{k:06}"), Value::String(format!("{k:0100}")));
        }
        f(Event::state_snapshot(Value::Object(state)));
        for m in 0..self.messages {
            f(Event::text_message_start(format!("msg-{m:06}")));
        }
        let every = (self.deltas / self.patches.max(1)).max(1);
        let mut patches = 0;
        for d in 0..self.deltas {
            f(Event::text_message_content(
                format!("msg-{:06}", d % self.messages),
                DELTA,
            ));
            if d % every == every - 1 && patches < self.patches {
                let k = (patches * 7919) % self.state_keys;
                let from = (patches * 104_729) % self.state_keys;
                f(Event::state_delta(vec![
                    PatchOperation::copy(format!("/key{from:06}"), "/copied"),
                    PatchOperation::replace(
                        format!("/key{k:06}"),
                        Value::String(format!("{patches:0100}")),
                    ),
                ]));
                patches += 1;
            }
        }
        for m in 0..self.messages {
            f(Event::text_message_end(format!("msg-{m:06}")));
        }
        f(Event::run_finished("thread", "run"));
    }
}

/// CPU time this thread has run, in nanoseconds (Linux schedstat; 0 elsewhere). The
/// machine may be shared, so CPU time is reported next to wall time.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn child(scale: f64) {
    let w = Workload::at(scale);
    let mut reducer = Reducer::new(Vec::new(), None);
    let mut events = 0u64;
    let mut apply_ns = 0u128;
    // Events are built in batches outside the timed section; only applying is timed.
    let mut batch: Vec<Event> = Vec::with_capacity(BATCH);
    let mut cpu_ns = 0u64;
    let mut run = |batch: &mut Vec<Event>, reducer: &mut Reducer| {
        let c = thread_cpu_ns();
        let t = Instant::now();
        for e in batch.drain(..) {
            let _ = std::hint::black_box(reducer.apply_owned(e));
        }
        apply_ns += t.elapsed().as_nanos();
        cpu_ns += thread_cpu_ns().saturating_sub(c);
    };
    w.for_each(|e| {
        events += 1;
        batch.push(e);
        if batch.len() == BATCH {
            run(&mut batch, &mut reducer);
        }
    });
    run(&mut batch, &mut reducer);
    let total_len: usize = reducer
        .messages()
        .iter()
        .map(|m| match m {
            agui_sdk_core::Message::Assistant(a) => a.content.as_ref().map_or(0, String::len),
            _ => 0,
        })
        .sum();
    assert_eq!(total_len, w.deltas * DELTA.len(), "every delta applied");
    println!(
        "{{\"scale\":{scale},\"events\":{events},\"deltas\":{},\"patches\":{},\"messages\":{},\"seconds\":{:.4},\"cpu_seconds\":{:.4},\"peak_rss_kb\":{}}}",
        w.deltas,
        w.patches,
        w.messages,
        apply_ns as f64 / 1e9,
        cpu_ns as f64 / 1e9,
        peak_rss_kb()
    );
}

fn write_jsonl(scale: f64, path: &str) {
    let f = std::fs::File::create(path).expect("create output");
    let mut out = BufWriter::new(f);
    let mut buf = Vec::with_capacity(256);
    Workload::at(scale).for_each(|e| {
        buf.clear();
        e.write_json(&mut buf);
        buf.push(b'\n');
        out.write_all(&buf).expect("write");
    });
    out.flush().expect("flush");
}

fn apply_jsonl(path: &str) {
    let f = std::fs::File::open(path).expect("open input");
    let events: Vec<Event> = BufReader::new(f)
        .lines()
        .map(|l| Event::from_json_str(&l.expect("read")).expect("decode"))
        .collect();
    let n = events.len();
    let c = thread_cpu_ns();
    let t = Instant::now();
    let mut reducer = Reducer::new(Vec::new(), None);
    for e in events {
        let _ = std::hint::black_box(reducer.apply_owned(e));
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = thread_cpu_ns().saturating_sub(c) as f64 / 1e9;
    println!(
        "{{\"impl\":\"rust\",\"events\":{n},\"seconds\":{secs:.6},\"cpu_seconds\":{cpu:.6},\"peak_rss_kb\":{}}}",
        peak_rss_kb()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    if let Some(s) = arg("--child") {
        return child(s.parse().expect("scale"));
    }
    if let Some(i) = args.iter().position(|a| a == "--write-jsonl") {
        let (Some(scale), Some(path)) = (args.get(i + 1), args.get(i + 2)) else {
            panic!("usage: --write-jsonl SCALE PATH");
        };
        return write_jsonl(scale.parse().expect("scale"), path);
    }
    if let Some(p) = arg("--apply-jsonl") {
        return apply_jsonl(&p);
    }
    if !args.iter().any(|a| a == "--bench" || a == "--scales") {
        // `cargo test --all-targets` runs bench targets without `--bench`: a quick
        // smoke run (scale 0.001) instead of the full measurement.
        return child(0.001);
    }
    let scales: Vec<f64> = arg("--scales")
        .unwrap_or_else(|| "0.1,1,10".into())
        .split(',')
        .map(|s| s.parse().expect("scale"))
        .collect();
    let exe = std::env::current_exe().expect("own path");
    println!(
        "reducer: 20-byte TEXT_MESSAGE_CONTENT deltas + STATE_DELTA patches of a copy and a replace (1 per 100 deltas)"
    );
    println!(
        "{:>6} {:>9} {:>8} {:>9} {:>9} {:>8} {:>8} {:>9} {:>11}",
        "scale",
        "deltas",
        "patches",
        "messages",
        "state MB",
        "wall s",
        "cpu s",
        "ns/event",
        "peak RSS MB"
    );
    for s in scales {
        let out = Command::new(&exe)
            .args(["--child", &s.to_string()])
            .output()
            .expect("run child");
        let line = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(line.trim())
            .unwrap_or_else(|_| panic!("child failed: {}", String::from_utf8_lossy(&out.stderr)));
        let cpu = v["cpu_seconds"].as_f64().unwrap_or(0.0);
        let events = v["events"].as_f64().unwrap_or(1.0);
        println!(
            "{:>6} {:>9} {:>8} {:>9} {:>9.2} {:>8.3} {:>8.3} {:>9.0} {:>11.1}",
            s,
            v["deltas"],
            v["patches"],
            v["messages"],
            Workload::at(s).state_keys as f64 * 112.0 / 1e6,
            v["seconds"].as_f64().unwrap_or(0.0),
            cpu,
            cpu * 1e9 / events,
            v["peak_rss_kb"].as_f64().unwrap_or(0.0) / 1024.0
        );
    }
}
