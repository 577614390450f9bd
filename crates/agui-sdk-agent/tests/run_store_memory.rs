//! What the in-memory run store counts for its retained runs against
//! `RunLimits::max_total_bytes`, against what the process really holds for them: 40,000
//! finished resumable runs, the resident memory they add read from `/proc/self/status`.
//!
//! A file of its own (its own process): it measures the process's memory.

use std::time::Duration;

use agui_sdk_agent::runs::{
    Created, InMemoryRunStore, NewRun, RunKey, RunLimits, RunLog, RunStatus,
};
use bytes::Bytes;

fn rss_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: usize = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// A finished run as a resumable run leaves it: a few events, appended as they came.
async fn finished_run(store: &InMemoryRunStore, i: usize) {
    let run_id = format!("{:08x}-7d1c-4c3e-9a55-{i:012x}", i * 7919);
    let key = RunKey::derive("user-0001", "weather-agent", &run_id);
    let new = NewRun {
        key: key.clone(),
        run_id: run_id.clone(),
        thread_id: format!("thread-{i:08x}-2f4e-4b7a-8c1d-0b9e5d3a7c21"),
        agent: "weather-agent".into(),
        body_hash: agui_sdk_agent::runs::sha256_hex(run_id.as_bytes()),
        replica: "replica-3f9a1c".into(),
        lease: Duration::from_secs(10),
        thread: None,
    };
    let Ok(Created::New(fence)) = store.create(new).await else {
        panic!("a new run")
    };
    let event = |kind: &str, extra: &str| {
        Bytes::from(format!(
            "{{\"type\":\"{kind}\",\"threadId\":\"thread-{i:08x}\",\"runId\":\"{run_id}\"{extra}}}"
        ))
    };
    let batches = [
        vec![event("RUN_STARTED", "")],
        vec![event(
            "TEXT_MESSAGE_START",
            ",\"messageId\":\"m1\",\"role\":\"assistant\"",
        )],
        vec![
            event(
                "TEXT_MESSAGE_CONTENT",
                ",\"messageId\":\"m1\",\"delta\":\"It is sunny\"",
            ),
            event(
                "TEXT_MESSAGE_CONTENT",
                ",\"messageId\":\"m1\",\"delta\":\" in Rome today.\"",
            ),
        ],
        vec![event("TEXT_MESSAGE_END", ",\"messageId\":\"m1\"")],
    ];
    let mut seq = 1;
    for events in batches {
        let n = events.len() as u64;
        store.append(&key, fence, seq, events, None).await.unwrap();
        seq += n;
    }
    store
        .append(
            &key,
            fence,
            seq,
            vec![event("RUN_FINISHED", "")],
            Some(RunStatus::Finished),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn retained_runs_are_counted_at_what_the_process_holds_for_them() {
    let Some(_) = rss_bytes() else {
        println!("skipped: no /proc/self/status to read resident memory from");
        return;
    };
    let n = 40_000;
    let store = InMemoryRunStore::new(RunLimits::default().max_total_bytes(u64::MAX));
    // Warm the allocator and the runtime up with runs of another store, dropped.
    {
        let warm = InMemoryRunStore::new(RunLimits::default());
        for i in 0..1_000 {
            finished_run(&warm, n + i).await;
        }
    }
    let before = rss_bytes().unwrap();
    for i in 0..n {
        finished_run(&store, i).await;
    }
    let real = rss_bytes().unwrap().saturating_sub(before);
    let counted = store.bytes();
    let ratio = counted as f64 / real as f64;
    println!(
        "{n} finished runs: counted {counted} bytes ({} a run), resident memory +{real} ({} a run): counted/real {ratio:.2}",
        counted / n,
        real / n
    );
    assert_eq!(store.len(), n);
    assert!(
        (0.67..=1.5).contains(&ratio),
        "a retained run is counted at {} bytes but holds {} (counted/real {ratio:.2}, outside [0.67, 1.5])",
        counted / n,
        real / n
    );
}
