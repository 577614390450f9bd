//! The PostgreSQL run store's figures, in one run: appends of a streaming run against a
//! floor (plain INSERTs of the same bytes, same durability, same driver) and against
//! the Redis store; the replay of a 100-run thread; the first page of an owner's
//! threads among many. See README.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agui_sdk_agent::runs::{
    owner_scope, Created, Fence, NewRun, RunKey, RunLimits, RunStatus, ThreadEntry,
    ThreadEntryBuilder, ThreadIndex, ThreadKey, ThreadQuery,
};
use agui_sdk_postgres::PostgresRunStore;
use agui_sdk_redis::RedisRunStore;
use bytes::Bytes;
use futures_util::StreamExt;

/// The command line: `--name value` pairs, each with a default.
struct Args {
    postgres: String,
    redis: String,
    phases: Vec<String>,
    events: usize,
    event_bytes: usize,
    batches: Vec<usize>,
    rounds: usize,
    history_runs: usize,
    replays: usize,
    threads: usize,
    owner_threads: usize,
    lists: usize,
    concurrency: usize,
    out: Option<String>,
    keep: bool,
}

impl Args {
    fn parse() -> Self {
        let mut a = Args {
            postgres: "postgres://postgres@127.0.0.1:5432/test".into(),
            redis: "redis://127.0.0.1:6379".into(),
            phases: vec!["append".into(), "replay".into(), "list".into()],
            events: 10_000,
            event_bytes: 200,
            batches: vec![1, 16, 256],
            rounds: 3,
            history_runs: 100,
            replays: 200,
            threads: 100_000,
            owner_threads: 10_000,
            lists: 500,
            concurrency: 32,
            out: None,
            keep: false,
        };
        let list = |v: &str| -> Vec<usize> {
            v.split(',')
                .map(|n| n.trim().parse().expect("a number"))
                .collect()
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            if flag == "--keep" {
                a.keep = true;
                continue;
            }
            let v = it
                .next()
                .unwrap_or_else(|| panic!("{flag}: a value expected"));
            let n = || v.parse::<usize>().expect("a number");
            match flag.as_str() {
                "--postgres" => a.postgres = v,
                "--redis" => a.redis = v,
                "--phases" => a.phases = v.split(',').map(str::to_owned).collect(),
                "--events" => a.events = n(),
                "--event-bytes" => a.event_bytes = n(),
                "--batches" => a.batches = list(&v),
                "--rounds" => a.rounds = n().max(1),
                "--history-runs" => a.history_runs = n(),
                "--replays" => a.replays = n().max(1),
                "--threads" => a.threads = n(),
                "--owner-threads" => a.owner_threads = n(),
                "--lists" => a.lists = n().max(1),
                "--concurrency" => a.concurrency = n().max(1),
                "--out" => a.out = Some(v),
                other => panic!("unknown flag {other}"),
            }
        }
        a.owner_threads = a.owner_threads.min(a.threads);
        a
    }

    fn phase(&self, name: &str) -> bool {
        self.phases.iter().any(|p| p == name)
    }
}

/// The stores under test, by name.
struct Stores {
    postgres: Arc<PostgresRunStore>,
    redis: Arc<RedisRunStore>,
}

impl Stores {
    fn each(&self) -> [(&'static str, Arc<dyn ThreadIndex>); 2] {
        [
            ("PostgreSQL", self.postgres.clone() as Arc<dyn ThreadIndex>),
            ("Redis", self.redis.clone() as Arc<dyn ThreadIndex>),
        ]
    }
}

/// The latencies of one kind of operation.
struct Latencies(Vec<Duration>);

impl Latencies {
    fn pct(&self, q: f64) -> Duration {
        let mut v = self.0.clone();
        v.sort_unstable();
        if v.is_empty() {
            return Duration::ZERO;
        }
        v[((v.len() - 1) as f64 * q).round() as usize]
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// A `TEXT_MESSAGE_CONTENT` event of exactly `bytes` bytes of JSON (at least its frame).
fn content_event(message: &str, i: usize, bytes: usize) -> Bytes {
    let head = format!(
        "{{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"{message}\",\"delta\":\"{i:06} "
    );
    let tail = "\"}";
    let pad = bytes.saturating_sub(head.len() + tail.len());
    let mut s = head;
    s.extend(std::iter::repeat_n('x', pad));
    s.push_str(tail);
    Bytes::from(s)
}

fn new_run(owner: &str, run_id: &str, thread_id: &str, thread: Option<ThreadKey>) -> NewRun {
    NewRun {
        key: RunKey::derive(owner, "agent", run_id),
        run_id: run_id.into(),
        thread_id: thread_id.into(),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "bench".into(),
        lease: Duration::from_secs(600),
        thread,
    }
}

async fn create(store: &dyn ThreadIndex, run: NewRun) -> Fence {
    match store.create(run).await.expect("create") {
        Created::New(f) => f,
        Created::Existing(r) => panic!("run {} exists already", r.run_id),
    }
}

/// Phase 1: one run of `events` appended in batches of `batch` to each store, as a
/// producer does (the last batch ends the run), and the same batches inserted into the
/// floor's table (one statement, one transaction each, through the same driver), the
/// three targets taking turns batch by batch so that they share the machine's moments
/// alike. Each target's time (the sum of its appends) and each append's latency.
async fn append_round(
    stores: &Stores,
    floor: &tokio_postgres::Client,
    insert: &tokio_postgres::Statement,
    tag: &str,
    events: &[Bytes],
    batch: usize,
) -> [Latencies; 3] {
    let mut runs = Vec::new();
    for (name, store) in stores.each() {
        let run_id = format!("{tag}-{name}");
        let fence = create(store.as_ref(), new_run("bench-append", &run_id, "t", None)).await;
        runs.push((
            store,
            RunKey::derive("bench-append", "agent", &run_id),
            fence,
        ));
    }
    let mut lat: [Vec<Duration>; 3] = Default::default();
    let chunks: Vec<&[Bytes]> = events.chunks(batch).collect();
    let mut first = 1u64;
    for (i, chunk) in chunks.iter().enumerate() {
        let terminal = (i + 1 == chunks.len()).then_some(RunStatus::Finished);
        for (j, (store, key, fence)) in runs.iter().enumerate() {
            let t = Instant::now();
            store
                .append(key, *fence, first, chunk.to_vec(), terminal)
                .await
                .expect("append");
            lat[j].push(t.elapsed());
        }
        let seqs: Vec<i64> = (first as i64..(first + chunk.len() as u64) as i64).collect();
        let bytes: Vec<&[u8]> = chunk.iter().map(|b| b.as_ref()).collect();
        let t = Instant::now();
        floor
            .execute(insert, &[&tag, &seqs, &bytes])
            .await
            .expect("floor insert");
        lat[2].push(t.elapsed());
        first += chunk.len() as u64;
    }
    lat.map(Latencies)
}

/// The run's events of a thread run: its start, one message of `contents` pieces, its end.
fn thread_run_events(thread_id: &str, run_id: &str, contents: usize, bytes: usize) -> Vec<Bytes> {
    let msg = format!("{run_id}-m");
    let mut out = vec![
        Bytes::from(format!(
            "{{\"type\":\"RUN_STARTED\",\"threadId\":\"{thread_id}\",\"runId\":\"{run_id}\"}}"
        )),
        Bytes::from(format!(
            "{{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"{msg}\",\"role\":\"assistant\"}}"
        )),
    ];
    out.extend((0..contents).map(|i| content_event(&msg, i, bytes)));
    out.push(Bytes::from(format!(
        "{{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"{msg}\"}}"
    )));
    out.push(Bytes::from(format!(
        "{{\"type\":\"RUN_FINISHED\",\"threadId\":\"{thread_id}\",\"runId\":\"{run_id}\"}}"
    )));
    out
}

/// A thread run created, its events appended (all but the last in one batch) and ended
/// into its thread's history, as the CopilotKit runtime's producer does.
async fn thread_run(
    store: &dyn ThreadIndex,
    owner: &str,
    thread_id: &str,
    run_id: &str,
    events: Vec<Bytes>,
) {
    let thread = ThreadKey::derive(owner, thread_id);
    let fence = create(store, new_run(owner, run_id, thread_id, Some(thread))).await;
    let key = RunKey::derive(owner, "agent", run_id);
    let mut builder = ThreadEntryBuilder::new();
    for e in &events {
        builder.push_json(e);
    }
    let entry: ThreadEntry = builder.finish();
    let mut events = events;
    let last = events.pop().expect("an event");
    let n = events.len() as u64;
    if !events.is_empty() {
        store
            .append(&key, fence, 1, events, None)
            .await
            .expect("append");
    }
    store
        .end_thread_run(&key, fence, n + 1, vec![last], RunStatus::Finished, entry)
        .await
        .expect("end_thread_run");
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{what}_{}_{:x}", std::process::id(), nanos & 0xffff_ffff)
}

/// Deletes every Redis key under `prefix`.
async fn redis_delete_prefix(url: &str, prefix: &str) -> u64 {
    let client = redis::Client::open(url).expect("a Redis URL");
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis answers");
    let mut cursor: u64 = 0;
    let mut deleted = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
            .expect("SCAN");
        if !keys.is_empty() {
            let n: u64 = redis::cmd("DEL")
                .arg(&keys)
                .query_async(&mut con)
                .await
                .expect("DEL");
            deleted += n;
        }
        if next == 0 {
            return deleted;
        }
        cursor = next;
    }
}

/// Which way a figure is better, and the aim's bound on PostgreSQL against its reference.
fn verdict(pg: f64, reference: f64, bound: f64, higher_is_better: bool) -> String {
    let ratio = if higher_is_better {
        reference / pg
    } else {
        pg / reference
    };
    if ratio <= bound {
        format!("{ratio:.2}x: holds (≤ {bound}x)")
    } else {
        format!(
            "{ratio:.2}x: **missed** by {:.0}%",
            (ratio / bound - 1.0) * 100.0
        )
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args = Args::parse();
    let mut report = String::new();
    let mut say = |line: String| {
        println!("{line}");
        report.push_str(&line);
        report.push('\n');
    };

    let schema = unique("agui_bench");
    let prefix = unique("agui-bench-postgres");
    // Enough room that no thread of the list phase is evicted.
    let limits = RunLimits::shared().max_threads((args.threads as u64 + 50_000).max(100_000));
    let stores = Stores {
        postgres: Arc::new(
            PostgresRunStore::connect(&args.postgres, &schema, limits.clone())
                .await
                .expect("PostgreSQL store"),
        ),
        redis: Arc::new(
            RedisRunStore::connect(&args.redis, &prefix, limits)
                .await
                .expect("Redis store"),
        ),
    };
    let (admin, connection) = tokio_postgres::connect(&args.postgres, tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL answers");
    tokio::spawn(connection);
    let settings: Vec<String> = admin
        .query(
            "SELECT name || '=' || setting FROM pg_settings WHERE name IN \
             ('fsync', 'synchronous_commit', 'wal_sync_method', 'shared_buffers', 'server_version', 'autovacuum')",
            &[],
        )
        .await
        .expect("settings")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let appendonly: Vec<String> = {
        let client = redis::Client::open(args.redis.as_str()).expect("a Redis URL");
        let mut con = client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis answers");
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("appendonly")
            .query_async(&mut con)
            .await
            .unwrap_or_default()
    };
    say(format!(
        "Machine: {} cores, load average at start {}. PostgreSQL store in schema `{schema}` ({}); Redis store under prefix `{prefix}` (appendonly {}). One process: the callers and both stores' clients share one tokio runtime; one caller at a time except where said.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
        settings.join(", "),
        appendonly.get(1).map_or("?", |s| s.as_str()),
    ));

    if args.phase("append") {
        let floor_schema = format!("{schema}_floor");
        admin
            .batch_execute(&format!(
                "CREATE SCHEMA {floor_schema}; \
                 CREATE TABLE {floor_schema}.events (key text NOT NULL, seq bigint NOT NULL, \
                 event bytea NOT NULL, PRIMARY KEY (key, seq))"
            ))
            .await
            .expect("floor table");
        let (floor, connection) = tokio_postgres::connect(&args.postgres, tokio_postgres::NoTls)
            .await
            .expect("PostgreSQL answers");
        tokio::spawn(connection);
        let insert = floor
            .prepare(&format!(
                "INSERT INTO {floor_schema}.events (key, seq, event) \
                 SELECT $1, seq, event FROM unnest($2::bigint[], $3::bytea[]) AS e (seq, event)"
            ))
            .await
            .expect("prepare");
        let events: Vec<Bytes> = (0..args.events)
            .map(|i| content_event("bench-m", i, args.event_bytes))
            .collect();
        say(format!(
            "## Appends: one run of {} events of {} bytes per target, the targets taking turns batch by batch; events/s: the median of {} rounds (events over the sum of the appends' times); latencies: every append of every round\n",
            args.events, args.event_bytes, args.rounds
        ));
        say("| batch | target | events/s | append p50 ms | append p99 ms | PostgreSQL vs floor (aim: events/s within 2x) |".into());
        say("|---:|---|---:|---:|---:|---|".into());
        for &batch in &args.batches {
            let mut rates: [Vec<f64>; 3] = Default::default();
            let mut lats: [Vec<Duration>; 3] = Default::default();
            for round in 0..args.rounds {
                let tag = format!("append-{batch}-{round}");
                let l = append_round(&stores, &floor, &insert, &tag, &events, batch).await;
                for (i, l) in l.into_iter().enumerate() {
                    let took: Duration = l.0.iter().sum();
                    rates[i].push(args.events as f64 / took.as_secs_f64());
                    lats[i].extend(l.0);
                }
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(|a, b| a.partial_cmp(b).unwrap());
                v[v.len() / 2]
            };
            let r: Vec<f64> = rates.iter_mut().map(median).collect();
            let l: Vec<Latencies> = lats.into_iter().map(Latencies).collect();
            for (i, name) in ["PostgreSQL store", "Redis store", "floor: plain INSERT"]
                .iter()
                .enumerate()
            {
                let aim = if i == 0 {
                    format!(
                        "events/s {}; p50 {:.2}x",
                        verdict(r[0], r[2], 2.0, true),
                        l[0].pct(0.5).as_secs_f64() / l[2].pct(0.5).as_secs_f64()
                    )
                } else {
                    String::new()
                };
                say(format!(
                    "| {batch} | {name} | {:.0} | {} | {} | {aim} |",
                    r[i],
                    ms(l[i].pct(0.5)),
                    ms(l[i].pct(0.99))
                ));
            }
        }
        say(String::new());
        admin
            .batch_execute(&format!("DROP SCHEMA {floor_schema} CASCADE"))
            .await
            .expect("dropping the floor");
    }

    if args.phase("replay") {
        say(format!(
            "## Replay: `ThreadIndex::thread` of a thread of {} ended runs (each 24 events: a message of 20 pieces of {} bytes), its history's events read; {} reads\n",
            args.history_runs, args.event_bytes, args.replays
        ));
        say("| target | p50 ms | p99 ms | history events | history bytes | PostgreSQL vs Redis (p50; aim ≤ 3x) |".into());
        say("|---|---:|---:|---:|---:|---|".into());
        let mut p50 = Vec::new();
        let mut rows = Vec::new();
        for (name, store) in stores.each() {
            let owner = "bench-replay";
            let thread_id = format!("replay-{name}");
            for r in 0..args.history_runs {
                let run_id = format!("replay-{name}-{r}");
                let events = thread_run_events(&thread_id, &run_id, 20, args.event_bytes);
                thread_run(store.as_ref(), owner, &thread_id, &run_id, events).await;
            }
            let key = ThreadKey::derive(owner, &thread_id);
            let mut lat = Vec::new();
            let (mut count, mut bytes) = (0, 0);
            for i in 0..args.replays + 5 {
                let t = Instant::now();
                let record = store.thread(&key).await.expect("thread").expect("held");
                let (mut c, mut b) = (0, 0);
                for entry in &record.history {
                    for line in entry.lines() {
                        c += 1;
                        b += line.len();
                    }
                }
                // The first reads warm the caches.
                if i >= 5 {
                    lat.push(t.elapsed());
                }
                assert_eq!(
                    record.history.len(),
                    args.history_runs,
                    "{name}: every run kept"
                );
                (count, bytes) = (c, b);
            }
            let l = Latencies(lat);
            p50.push(l.pct(0.5).as_secs_f64());
            rows.push((name, l, count, bytes));
        }
        for (i, (name, l, count, bytes)) in rows.iter().enumerate() {
            let aim = if i == 0 {
                verdict(p50[0], p50[1], 3.0, false)
            } else {
                String::new()
            };
            say(format!(
                "| {name} store | {} | {} | {count} | {bytes} | {aim} |",
                ms(l.pct(0.5)),
                ms(l.pct(0.99))
            ));
        }
        say(String::new());
    }

    if args.phase("list") {
        say(format!(
            "## List: the first page (limit 20) of one owner's {} threads among {} threads; {} lists\n",
            args.owner_threads, args.threads, args.lists
        ));
        say("| target | threads made/s (concurrency {}) | p50 ms | p99 ms | PostgreSQL vs Redis (p50; aim ≤ 3x) |".replace("{}", &args.concurrency.to_string()));
        say("|---|---:|---:|---:|---|".into());
        // PostgreSQL's twice: with the planner statistics the tables had after they
        // were filled (none, on a server whose autovacuum is off), then after ANALYZE
        // (what autovacuum does on its own).
        let mut rows: Vec<(String, f64, Latencies)> = Vec::new();
        for (name, store) in stores.each() {
            let owner = format!("bench-list-{name}");
            let t0 = Instant::now();
            futures_util::stream::iter(0..args.threads)
                .for_each_concurrent(args.concurrency, |i| {
                    let store = store.clone();
                    let owner = if i < args.owner_threads {
                        owner.clone()
                    } else {
                        format!("bench-other-{name}-{}", i % 900)
                    };
                    async move {
                        let thread_id = format!("t{i}");
                        let run_id = format!("list-{i}");
                        let events = thread_run_events(&thread_id, &run_id, 1, 60);
                        thread_run(store.as_ref(), &owner, &thread_id, &run_id, events).await;
                    }
                })
                .await;
            let made = args.threads as f64 / t0.elapsed().as_secs_f64();
            let scope = owner_scope(&owner);
            let lists = || async {
                let query = ThreadQuery::first(20);
                let mut lat = Vec::new();
                for i in 0..args.lists + 5 {
                    let t = Instant::now();
                    let page = store.list_threads(&scope, &query).await.expect("list");
                    if i >= 5 {
                        lat.push(t.elapsed());
                    }
                    assert_eq!(
                        page.len(),
                        20.min(args.owner_threads),
                        "{name}: a full page"
                    );
                }
                Latencies(lat)
            };
            if name == "PostgreSQL" {
                rows.push((
                    format!("{name} store, statistics as filled"),
                    made,
                    lists().await,
                ));
                admin
                    .batch_execute(&format!("ANALYZE {schema}.threads"))
                    .await
                    .expect("ANALYZE");
                rows.push((format!("{name} store, after ANALYZE"), made, lists().await));
            } else {
                rows.push((format!("{name} store"), made, lists().await));
            }
        }
        let redis = rows.last().map_or(0.0, |r| r.2.pct(0.5).as_secs_f64());
        for (name, made, l) in &rows {
            let aim = if name.starts_with("PostgreSQL") {
                verdict(l.pct(0.5).as_secs_f64(), redis, 3.0, false)
            } else {
                String::new()
            };
            say(format!(
                "| {name} | {made:.0} | {} | {} | {aim} |",
                ms(l.pct(0.5)),
                ms(l.pct(0.99))
            ));
        }
        say(String::new());
    }

    say(format!("Load average at the end: {}.", load_average()));
    let pg = stores.postgres.clone();
    drop(stores);
    drop(pg);
    if args.keep {
        println!("kept: schema {schema}, Redis keys under {prefix}:");
    } else {
        admin
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .await
            .expect("dropping the bench schema");
        let deleted = redis_delete_prefix(&args.redis, &prefix).await;
        println!("cleaned up: schema {schema} dropped, {deleted} Redis keys deleted");
    }
    if let Some(path) = args.out {
        std::fs::write(&path, report).expect("writing the report");
    }
}
