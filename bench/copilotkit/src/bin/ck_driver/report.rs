//! The tables: the figures of every server measured, side by side.

use std::fmt::Write as _;
use std::time::Duration;

use crate::{median_of, Figures, Options};

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn ratio(x: f64, y: f64) -> String {
    if y > 0.0 {
        format!("{:.3}", x / y)
    } else {
        "-".into()
    }
}

pub(crate) fn report(o: &Options, figs: &[Figures]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "History: 1 thread of {} runs. Connect: {} warm-up, {} measured, on that thread. \
         Memory: fresh server, THREADS x RUNS ({} threads at a time).\n",
        o.runs, o.warmup, o.connects, o.concurrency
    );
    let _ = writeln!(s, "Connect (replay of the {}-run thread):\n", o.runs);
    let _ = writeln!(
        s,
        "| server | median ms | p90 ms | min ms | response bytes | events |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
    for f in figs {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            f.name,
            ms(f.connect_median),
            ms(f.connect_p90),
            ms(f.connect_min),
            f.bytes,
            f.events
        );
    }
    let _ = writeln!(
        s,
        "\nMemory per stored thread (growth after gc / thread count):\n"
    );
    let _ = writeln!(
        s,
        "| server | threads x runs | RSS KiB per thread | heap KiB per thread | RSS before / after MiB | fill s |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---|---:|");
    for f in figs {
        for m in &f.memory {
            let heap = m
                .heap_per_thread_kib()
                .map(|h| format!("{h:.1}"))
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "| {} | {} x {} | {:.1} | {} | {:.1} / {:.1} | {:.1} |",
                f.name,
                m.threads,
                m.runs,
                m.rss_per_thread_kib(),
                heap,
                m.rss_before_kib as f64 / 1024.0,
                m.rss_after_kib as f64 / 1024.0,
                m.fill.as_secs_f64()
            );
        }
    }
    let _ = writeln!(
        s,
        "\nThe {}-run history (each run sends the conversation so far):\n",
        o.runs
    );
    let _ = writeln!(
        s,
        "| server | run median ms, runs 1-10 | run median ms, last 10 | all runs s | RSS after start / after history MiB |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---|");
    for f in figs {
        let n = f.run_times.len();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.2} | {:.1} / {:.1} |",
            f.name,
            ms(median_of(&f.run_times[..n.min(10)])),
            ms(median_of(&f.run_times[n.saturating_sub(10)..])),
            f.fill.as_secs_f64(),
            f.rss_start_kib as f64 / 1024.0,
            f.rss_history_kib as f64 / 1024.0
        );
    }
    if figs.len() >= 2 {
        let (a, b) = (&figs[0], &figs[1]);
        let _ = writeln!(s, "\nRatios {}/{}:\n", a.name, b.name);
        let _ = writeln!(s, "| figure | ratio |");
        let _ = writeln!(s, "|---|---:|");
        let mut row = |label: String, r: String| {
            let _ = writeln!(s, "| {label} | {r} |");
        };
        row(
            "connect median".into(),
            ratio(
                a.connect_median.as_secs_f64(),
                b.connect_median.as_secs_f64(),
            ),
        );
        row(
            "connect p90".into(),
            ratio(a.connect_p90.as_secs_f64(), b.connect_p90.as_secs_f64()),
        );
        row(
            "connect bytes".into(),
            ratio(a.bytes as f64, b.bytes as f64),
        );
        row(
            "connect events".into(),
            ratio(a.events as f64, b.events as f64),
        );
        for (ma, mb) in a.memory.iter().zip(&b.memory) {
            row(
                format!("RSS per thread, {} x {}", ma.threads, ma.runs),
                ratio(ma.rss_per_thread_kib(), mb.rss_per_thread_kib()),
            );
            if let (Some(ha), Some(hb)) = (ma.heap_per_thread_kib(), mb.heap_per_thread_kib()) {
                row(
                    format!("heap per thread, {} x {}", ma.threads, ma.runs),
                    ratio(ha, hb),
                );
            }
        }
        let n = a.run_times.len().min(b.run_times.len());
        row(
            "run median, last 10 runs of the history".into(),
            ratio(
                median_of(&a.run_times[n.saturating_sub(10)..]).as_secs_f64(),
                median_of(&b.run_times[n.saturating_sub(10)..]).as_secs_f64(),
            ),
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
        let _ = writeln!(s, "- events by type: {}", same(ra.types == rb.types));
        for (ty, n) in &ra.types {
            let _ = writeln!(
                s,
                "  - {ty}: {n} / {}",
                rb.types.get(ty).copied().unwrap_or(0)
            );
        }
        for (ty, n) in &rb.types {
            if !ra.types.contains_key(ty) {
                let _ = writeln!(s, "  - {ty}: 0 / {n}");
            }
        }
        for (i, (x, y)) in ra.messages.iter().zip(&rb.messages).enumerate() {
            if x != y {
                let _ = writeln!(s, "- first differing message, #{i}: {x:?} / {y:?}");
                break;
            }
        }
    }
    s
}
