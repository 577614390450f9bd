//! What one retained event costs in the in-memory run store, in resident memory: the
//! measurement behind `runs::EVENT_OVERHEAD`.
//!
//! ```text
//! cargo run --release -p agui-sdk-agent --example store_cost -- 120   # event size in bytes
//! ```
//!
//! In a crate of your own this needs, besides `agui-sdk-agent` and `tokio`, `bytes = "1"`.

use agui_sdk_agent::runs::{Created, InMemoryRunStore, NewRun, RunKey, RunLimits, RunLog};
use bytes::Bytes;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let size: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(120);
    let (runs, per_run, batch) = (200usize, 5_000usize, 50usize);
    let store = InMemoryRunStore::new(RunLimits::default().max_total_bytes(u64::MAX));
    let before = rss_kib();
    for r in 0..runs {
        let id = format!("r{r}");
        let key = RunKey::derive("owner", "agent", &id);
        let new = NewRun {
            key: key.clone(),
            run_id: id,
            thread_id: "t".into(),
            agent: "agent".into(),
            body_hash: String::new(),
            replica: "here".into(),
            lease: std::time::Duration::from_secs(60),
            thread: None,
        };
        let Ok(Created::New(fence)) = store.create(new).await else {
            panic!("a new run");
        };
        for b in 0..per_run / batch {
            let events: Vec<Bytes> = (0..batch)
                .map(|_| Bytes::copy_from_slice(&vec![b'x'; size]))
                .collect();
            let first = (b * batch) as u64 + 1;
            store
                .append(&key, fence, first, events, None)
                .await
                .unwrap();
        }
    }
    let grown = (rss_kib() - before) * 1024;
    let events = runs * per_run;
    println!(
        "{events} events of {size} bytes: resident memory +{} KiB, {:.0} bytes per event ({:.0} over its JSON)",
        grown / 1024,
        grown as f64 / events as f64,
        grown as f64 / events as f64 - size as f64,
    );
}
