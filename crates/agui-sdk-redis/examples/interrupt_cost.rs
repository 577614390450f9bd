//! What the interrupt ledger adds to a run, on the in-memory store and on Redis, in
//! one process: for `n` threads, the time of the ledger's work for a run that answers
//! nothing (the check), a run that pauses (check and record), and a resumed run (check
//! and claim, then consume), with the store round trips each takes.
//!
//! ```text
//! cargo run --release -p agui-sdk-redis --example interrupt_cost -- 2000 [redis://127.0.0.1:6379]
//! ```
//!
//! The Redis keys go under a fresh prefix and expire; the store is Redis as a replica
//! reaches it over loopback, so its figures are mostly the round trips.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_agent::agui_sdk_core::{Interrupt, ResumeEntry, RunAgentInput};
use agui_sdk_agent::runs::{
    InMemoryRunStore, InterruptKey, InterruptLedger, InterruptPolicy, Interrupts, LedgerEntry,
    RunStoreFuture,
};
use agui_sdk_agent::serde_json::json;
use agui_sdk_redis::{RedisRunStore, RunLimits};

/// Counts the ledger's round trips.
struct Counted {
    inner: Arc<dyn InterruptLedger>,
    trips: AtomicU64,
}

impl InterruptLedger for Counted {
    fn load<'a>(&'a self, key: &'a InterruptKey) -> RunStoreFuture<'a, Option<LedgerEntry>> {
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.inner.load(key)
    }

    fn swap<'a>(
        &'a self,
        key: &'a InterruptKey,
        expected: Option<u64>,
        new: LedgerEntry,
        ttl: Duration,
    ) -> RunStoreFuture<'a, bool> {
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.inner.swap(key, expected, new, ttl)
    }
}

fn input(thread: &str, run: &str, resume: Option<Vec<ResumeEntry>>) -> RunAgentInput {
    let mut i = RunAgentInput::new(thread, run, Vec::new());
    i.resume = resume;
    i
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

struct Phase {
    name: &'static str,
    times: Vec<Duration>,
    trips: u64,
}

impl Phase {
    fn print(&mut self, store: &str, n: usize) {
        self.times.sort();
        println!(
            "| {store} | {} | {:.1} | {:.1} | {:.2} |",
            self.name,
            percentile(&self.times, 0.5).as_secs_f64() * 1e6,
            percentile(&self.times, 0.99).as_secs_f64() * 1e6,
            self.trips as f64 / n as f64
        );
    }
}

async fn measure(store: &str, ledger: Arc<dyn InterruptLedger>, n: usize) {
    let counted = Arc::new(Counted {
        inner: ledger,
        trips: AtomicU64::new(0),
    });
    let ix = Interrupts::new(counted.clone(), InterruptPolicy::default());
    let schema = json!({"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]});
    let mut phases = [
        Phase {
            name: "run answering nothing (check)",
            times: Vec::new(),
            trips: 0,
        },
        Phase {
            name: "run that pauses (check, record)",
            times: Vec::new(),
            trips: 0,
        },
        Phase {
            name: "resumed run (check and claim, consume)",
            times: Vec::new(),
            trips: 0,
        },
    ];
    let key = |i: usize| InterruptKey::derive("cost", "agent", &format!("t{i}"));
    for (p, phase) in phases.iter_mut().enumerate() {
        let before = counted.trips.load(Ordering::Relaxed);
        for i in 0..n {
            let t = Instant::now();
            match p {
                0 => {
                    let (s, _) = ix
                        .begin(key(i + n), &input("x", "r0", None))
                        .await
                        .expect("nothing open");
                    s.settle(None).await.expect("settle");
                }
                1 => {
                    let (s, _) = ix
                        .begin(key(i), &input("x", "r1", None))
                        .await
                        .expect("nothing open");
                    let ask = Interrupt::new("ask", "approval")
                        .with_message("Send it?")
                        .with_response_schema(schema.clone());
                    s.settle(Some(vec![ask])).await.expect("pause");
                }
                _ => {
                    let resume = vec![ResumeEntry::resolved("ask", json!({"approved": true}))];
                    let (s, answers) = ix
                        .begin(key(i), &input("x", "r2", Some(resume)))
                        .await
                        .expect("a valid resume");
                    assert_eq!(answers.len(), 1);
                    s.settle(None).await.expect("consume");
                }
            }
            phase.times.push(t.elapsed());
        }
        phase.trips = counted.trips.load(Ordering::Relaxed) - before;
    }
    for phase in &mut phases {
        phase.print(store, n);
    }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let url = args
        .next()
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into());
    println!("{n} threads each\n");
    println!("| store | ledger work | p50 µs | p99 µs | round trips per run |");
    println!("|---|---|---|---|---|");
    measure(
        "memory",
        Arc::new(InMemoryRunStore::new(RunLimits::default())),
        n,
    )
    .await;
    let prefix = format!("agui-interrupt-cost-{}", std::process::id());
    let redis = RedisRunStore::connect(&url, &prefix, RunLimits::shared())
        .await
        .expect("connect to Redis");
    measure("Redis", Arc::new(redis), n).await;
}
