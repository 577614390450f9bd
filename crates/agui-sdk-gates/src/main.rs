//! `agui-sdk-gates`: deterministic cost gates for the hot paths.
//!
//! Each gate (see [`workloads::GATES`]) measures one path's cost per operation, as
//! counts that do not depend on the machine's speed or load:
//!
//! - **allocations** and **bytes** allocated, by a counting global allocator, in this
//!   process;
//! - **instructions**, by `valgrind --tool=callgrind`, in a child process running the
//!   same workload (`agui-sdk-gates probe NAME CONTEXT OPS`), counting only inside
//!   [`measured`].
//!
//! The cost of one operation is the difference between running `2n` and `n`
//! operations, divided by `n`, so that set-up and first-use costs cancel out. Each
//! path is measured at two contexts (a small and a large conversation, state, stream
//! or server history), and a gate fails when:
//!
//! - a figure passes its budget in `budgets.txt` by more than the margin (5 % for
//!   allocations, which are exact, 10 % for bytes, 15 % for instructions, plus a small
//!   constant), or
//! - the figure at the large context passes the one at the small context by more than
//!   25 % (bytes: twice, as buffers double at different points): the path has started
//!   to cost in proportion to what it holds.
//!
//! Budgets are per operation, one line per gate and metric; changing one is a
//! deliberate one-line edit, with its reason in the commit.
//!
//! ```sh
//! cargo run --release -p agui-sdk-gates              # every gate (needs valgrind)
//! cargo run --release -p agui-sdk-gates -- --only reducer-patch --no-instructions
//! ```

mod workloads;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use workloads::{Gate, Workload, GATES};

/// Counts allocations (and reallocations) and their bytes while [`COUNTING`] is on.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

#[allow(unsafe_code)]
// SAFETY: every call is forwarded to the system allocator unchanged; the counters
// are atomics, and counting allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(
                new_size.saturating_sub(layout.size()) as u64,
                Ordering::Relaxed,
            );
        }
        // SAFETY: `ptr` came from System with `layout`, as GlobalAlloc::realloc requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs the workload: the only code callgrind counts (`--toggle-collect`).
#[inline(never)]
fn measured(w: &mut dyn Workload) {
    w.run();
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Metric {
    Allocations,
    Bytes,
    Instructions,
}

impl Metric {
    const ALL: [Metric; 3] = [Metric::Allocations, Metric::Bytes, Metric::Instructions];

    fn name(self) -> &'static str {
        match self {
            Metric::Allocations => "allocations",
            Metric::Bytes => "bytes",
            Metric::Instructions => "instructions",
        }
    }

    fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The most a figure may be against its budget.
    fn limit(self, budget: f64) -> f64 {
        match self {
            Metric::Allocations => budget * 1.05 + 0.3,
            Metric::Bytes => budget * 1.10 + 64.0,
            Metric::Instructions => budget * 1.15 + 100.0,
        }
    }

    /// The most the large context's figure may be against the small context's.
    fn scaling_limit(self, small: f64) -> f64 {
        match self {
            Metric::Allocations => small * 1.25 + 0.5,
            // Bytes include buffers' doublings, which land at different operations
            // for different contexts: the allocation and instruction counts are what
            // tell a path that grows.
            Metric::Bytes => small * 2.0 + 256.0,
            Metric::Instructions => small * 1.25 + 300.0,
        }
    }
}

/// The budgets file, compiled in: `gate metric budget` per line, `#` comments.
const BUDGETS: &str = include_str!("../budgets.txt");

fn budgets() -> Result<BTreeMap<(String, Metric), f64>, String> {
    let mut out = BTreeMap::new();
    for (n, line) in BUDGETS.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("budgets.txt line {}", n + 1);
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [gate, metric, budget] = parts[..] else {
            return Err(format!(
                "{}: expected `gate metric budget`, found {line:?}",
                at()
            ));
        };
        if workloads::gate(gate).is_none() {
            return Err(format!("{}: no gate named {gate:?}", at()));
        }
        let metric =
            Metric::parse(metric).ok_or_else(|| format!("{}: no metric {metric:?}", at()))?;
        let budget: f64 = budget
            .parse()
            .map_err(|_| format!("{}: {budget:?} is not a number", at()))?;
        if out.insert((gate.to_owned(), metric), budget).is_some() {
            return Err(format!(
                "{}: a second budget for {gate} {}",
                at(),
                metric.name()
            ));
        }
    }
    Ok(out)
}

/// Allocations and bytes of `gate`'s workload at `context` for `ops` operations.
fn count_allocations(gate: &Gate, context: usize, ops: usize) -> (u64, u64) {
    let mut w = (gate.setup)(context, ops);
    ALLOCATIONS.store(0, Ordering::SeqCst);
    BYTES.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    measured(w.as_mut());
    COUNTING.store(false, Ordering::SeqCst);
    let counts = (
        ALLOCATIONS.load(Ordering::SeqCst),
        BYTES.load(Ordering::SeqCst),
    );
    drop(w);
    counts
}

/// Instructions inside [`measured`] for `gate`'s workload at `context` for `ops`
/// operations, in a child process under callgrind.
fn count_instructions(gate: &Gate, context: usize, ops: usize) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let out = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--collect-atstart=no",
            "--toggle-collect=*agui_sdk_gates*measured*",
        ])
        .arg(&exe)
        .args(["probe", gate.name, &context.to_string(), &ops.to_string()])
        .output()
        .map_err(|e| {
            format!("cannot run valgrind ({e}): install it (Debian: apt-get install valgrind), or pass --no-instructions")
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "the probe of {} failed under valgrind:\n{stderr}",
            gate.name
        ));
    }
    stderr
        .lines()
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, n)| n.trim().replace(',', ""))
        })
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("no instruction count in callgrind's output:\n{stderr}"))
}

/// Per-operation figures at one context.
#[derive(Debug, Default, Clone, Copy)]
struct PerOp {
    allocations: f64,
    bytes: f64,
    instructions: Option<f64>,
}

impl PerOp {
    fn get(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Allocations => Some(self.allocations),
            Metric::Bytes => Some(self.bytes),
            Metric::Instructions => self.instructions,
        }
    }
}

fn per_op(later: u64, first: u64, ops: usize) -> f64 {
    (later as f64 - first as f64) / ops as f64
}

fn measure(gate: &Gate, context: usize, instructions: bool) -> Result<PerOp, String> {
    let n = gate.ops;
    let (a1, b1) = count_allocations(gate, context, n);
    let (a2, b2) = count_allocations(gate, context, 2 * n);
    let instructions = if instructions {
        let i1 = count_instructions(gate, context, n)?;
        let i2 = count_instructions(gate, context, 2 * n)?;
        Some(per_op(i2, i1, n))
    } else {
        None
    };
    Ok(PerOp {
        allocations: per_op(a2, a1, n),
        bytes: per_op(b2, b1, n),
        instructions,
    })
}

struct Args {
    only: Vec<String>,
    instructions: bool,
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: agui-sdk-gates [--only GATE]... [--no-instructions]\n       agui-sdk-gates probe GATE CONTEXT OPS\ngates: {}",
        GATES.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("probe") {
        return probe(&argv[1..]);
    }
    let mut args = Args {
        only: Vec::new(),
        instructions: true,
    };
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--only" => match it.next() {
                Some(g) if workloads::gate(&g).is_some() => args.only.push(g),
                _ => return usage(),
            },
            "--no-instructions" => args.instructions = false,
            _ => return usage(),
        }
    }
    let budgets = match budgets() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("agui-sdk-gates: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut failures = Vec::new();
    println!(
        "{:<17} {:<12} {:>12} {:>12} {:>12} {:>12}  verdict",
        "gate", "metric", "small ctx", "large ctx", "budget", "limit"
    );
    for gate in GATES {
        if !args.only.is_empty() && !args.only.iter().any(|g| g == gate.name) {
            continue;
        }
        let [small_ctx, large_ctx] = gate.contexts;
        let figures = measure(gate, small_ctx, args.instructions)
            .and_then(|s| measure(gate, large_ctx, args.instructions).map(|l| (s, l)));
        let (small, large) = match figures {
            Ok(f) => f,
            Err(e) => {
                eprintln!("agui-sdk-gates: {e}");
                return ExitCode::FAILURE;
            }
        };
        for metric in Metric::ALL {
            let (Some(s), Some(l)) = (small.get(metric), large.get(metric)) else {
                continue;
            };
            let Some(&budget) = budgets.get(&(gate.name.to_owned(), metric)) else {
                failures.push(format!(
                    "{} {}: no budget in budgets.txt (measured {s:.1} per op)",
                    gate.name,
                    metric.name()
                ));
                continue;
            };
            let limit = metric.limit(budget);
            let worst = s.max(l);
            let mut verdicts = Vec::new();
            if worst > limit {
                verdicts.push("OVER BUDGET");
                failures.push(format!(
                    "{} ({}): {:.1} {} per op, over its budget of {budget} (limit {limit:.1}); small context ({} {}) {s:.1}, large ({}) {l:.1}",
                    gate.name, gate.op, worst, metric.name(), small_ctx, gate.context_unit, large_ctx
                ));
            }
            let scaling = metric.scaling_limit(s);
            if l > scaling {
                verdicts.push("GROWS WITH CONTEXT");
                failures.push(format!(
                    "{} ({}): {} per op grow with the context: {s:.1} at {small_ctx} {}, {l:.1} at {large_ctx} (at most {scaling:.1} allowed): the path costs in proportion to what it holds",
                    gate.name, gate.op, metric.name(), gate.context_unit
                ));
            }
            if verdicts.is_empty() {
                verdicts.push(if worst < budget * 0.6 && budget > 4.0 {
                    "ok (well under: the budget could come down)"
                } else {
                    "ok"
                });
            }
            let verdict = verdicts.join(", ");
            println!(
                "{:<17} {:<12} {:>12.1} {:>12.1} {:>12} {:>12.1}  {verdict}",
                gate.name,
                metric.name(),
                s,
                l,
                budget,
                limit
            );
        }
    }
    if failures.is_empty() {
        println!("cost gates: all within budget");
        ExitCode::SUCCESS
    } else {
        eprintln!("\ncost gates failed:");
        for f in &failures {
            eprintln!("- {f}");
        }
        ExitCode::FAILURE
    }
}

/// `probe GATE CONTEXT OPS`: sets up and runs one workload (under callgrind).
fn probe(args: &[String]) -> ExitCode {
    let [name, context, ops] = args else {
        return usage();
    };
    let (Some(gate), Ok(context), Ok(ops)) = (workloads::gate(name), context.parse(), ops.parse())
    else {
        return usage();
    };
    let mut w = (gate.setup)(context, ops);
    measured(w.as_mut());
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every gate has a budget for every metric, and nothing else (called from the one
    /// test below).
    fn every_gate_has_a_budget_for_every_metric_and_nothing_else() {
        let b = budgets().expect("budgets.txt reads");
        for g in GATES {
            for m in Metric::ALL {
                assert!(
                    b.contains_key(&(g.name.to_owned(), m)),
                    "{} {}",
                    g.name,
                    m.name()
                );
            }
        }
        assert_eq!(b.len(), GATES.len() * Metric::ALL.len());
    }

    /// The only test of this binary, so that no other test allocates while it counts
    /// (two tests ran on two threads, and one's allocations showed in the other's count).
    #[test]
    fn counting_counts_every_workload_runs_and_every_gate_has_a_budget() {
        COUNTING.store(true, Ordering::SeqCst);
        ALLOCATIONS.store(0, Ordering::SeqCst);
        BYTES.store(0, Ordering::SeqCst);
        let v: Vec<u8> = Vec::with_capacity(1000);
        COUNTING.store(false, Ordering::SeqCst);
        drop(std::hint::black_box(v));
        assert_eq!(ALLOCATIONS.load(Ordering::SeqCst), 1);
        assert_eq!(BYTES.load(Ordering::SeqCst), 1000);
        for g in GATES {
            let (few, _) = count_allocations(g, 3, 3);
            let (more, _) = count_allocations(g, 3, 6);
            assert!(more >= few, "{}: {few} then {more}", g.name);
        }
        every_gate_has_a_budget_for_every_metric_and_nothing_else();
    }
}
