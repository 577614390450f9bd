//! `agui serve --store postgres://…` restarted: what a server killed with SIGKILL had
//! committed is read back by the next one on the same database exactly as before (a
//! CopilotKit thread's list entry, messages, events, state and `connect` replay; a
//! finished resumable run's remaining events); a server whose database connections are
//! all cut mid-run (as a database restart cuts them) ends that run cleanly and serves
//! the next runs; an empty database gets the store's tables at the first start, and a
//! second start changes nothing in them.
//!
//! Each test uses a database of its own, created (and dropped at its end) through
//! `psql` on the PostgreSQL at `AGUI_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`, whose user may create databases): the
//! server keeps its tables in that database's schema `agui`. Without PostgreSQL (or
//! `psql`) a test prints `skipped …`, except under `AGUI_REQUIRE_POSTGRES=1`, where
//! that is a failure.

use crate::common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agui_sdk_server::runs::RUN_LOST;
use common::{spawn_serve, Served};
use futures_util::StreamExt;
use serde_json::{json, Value};

/// Whether a missing PostgreSQL (or `psql`) is a failure rather than a skip.
fn required() -> bool {
    std::env::var("AGUI_REQUIRE_POSTGRES").as_deref() == Ok("1")
}

/// The test PostgreSQL's URL.
fn admin_url() -> String {
    std::env::var("AGUI_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// `url` with its database name replaced by `db` (its query, if any, kept).
fn with_database(url: &str, db: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let query = path.split_once('?').map(|(_, q)| q);
    match query {
        Some(q) => format!("{scheme}://{authority}/{db}?{q}"),
        None => format!("{scheme}://{authority}/{db}"),
    }
}

/// Runs `sql` through `psql` on the database at `url`: its rows, one a line, columns
/// separated by `|`; `Err` with what `psql` said when it fails.
fn psql(url: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args([
            "-X",
            "-A",
            "-t",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ])
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A database of the test's own, dropped (with whatever is still connected to it) when
/// the test ends.
struct Database {
    admin: String,
    name: String,
    /// Its URL, for `--store`.
    url: String,
}

impl Database {
    /// A new empty database, or `None` (with the reason printed) when PostgreSQL or
    /// `psql` is missing.
    fn create(test: &str) -> Option<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let admin = admin_url();
        let name = format!(
            "agui_restart_{}_{}_{test}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        if let Err(e) = psql(&admin, "SELECT 1") {
            assert!(
                !required(),
                "{test}: AGUI_REQUIRE_POSTGRES=1 but PostgreSQL at {admin} does not answer through psql: {e}"
            );
            eprintln!("skipped {test}: PostgreSQL at {admin} does not answer through psql: {e}");
            return None;
        }
        psql(
            &admin,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .and_then(|_| psql(&admin, &format!("CREATE DATABASE {name}")))
        .unwrap_or_else(|e| panic!("{test}: creating database {name}: {e}"));
        let url = with_database(&admin, &name);
        Some(Database { admin, name, url })
    }

    /// `sql`'s rows on this database; panics when it fails.
    fn sql(&self, sql: &str) -> String {
        psql(&self.url, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = psql(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// `agui serve` on `db`'s database, streaming with `delay_ms` between pieces.
fn serve(db: &Database, id: &str, delay_ms: &str) -> Served {
    spawn_serve(
        &[],
        &[
            "--delay-ms",
            delay_ms,
            "--store",
            &db.url,
            "--replica-id",
            id,
            "--lease-ms",
            "1000",
        ],
        &[],
    )
}

/// Kills `served` with SIGKILL and waits for it to be gone.
fn kill(mut served: Served) {
    served.child.kill().unwrap(); // SIGKILL
    served.child.wait().unwrap();
}

const TOKEN: &str = "postgres-restart-owner-token-0123456789abcdef";

/// One SSE frame: its seq (from its `id:`, 0 without one) and its event.
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    seq: u64,
    event: Value,
}

/// The frames of a response as they come.
struct Frames {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: Vec<u8>,
}

impl Frames {
    fn of(res: reqwest::Response) -> Self {
        Frames {
            body: res.bytes_stream().boxed(),
            buf: Vec::new(),
        }
    }

    async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block = String::from_utf8(self.buf[..pos].to_vec()).unwrap();
                self.buf.drain(..pos + 2);
                let mut seq = 0;
                let mut data = None;
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id: ") {
                        seq = id
                            .rsplit_once(':')
                            .and_then(|(_, s)| s.parse().ok())
                            .unwrap();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = Some(serde_json::from_str(d).unwrap());
                    }
                }
                if let Some(event) = data {
                    return Some(Frame { seq, event });
                }
                continue;
            }
            match tokio::time::timeout(Duration::from_secs(20), self.body.next())
                .await
                .expect("bytes in time")
            {
                Some(Ok(b)) => self.buf.extend_from_slice(&b),
                _ => return None,
            }
        }
    }

    async fn rest(&mut self) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some(f) = self.next().await {
            out.push(f);
        }
        out
    }
}

/// Starts resumable run `run` of `agentic_chat` on `base`.
async fn start(base: &str, run: &str) -> Frames {
    let body = json!({
        "threadId": format!("t-{run}"), "runId": run,
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": "hello there"}],
    });
    let res = reqwest::Client::new()
        .post(format!("{base}/agentic_chat"))
        .header("AGUI-Resumable", "1")
        .header("AGUI-Resume-Token", TOKEN)
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["agui-first-seq"], "1");
    Frames::of(res)
}

/// Re-attaches to resumable run `run` on `base` after seq `after`.
async fn attach(base: &str, run: &str, after: u64) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{base}/agentic_chat/runs/{run}/events"))
        .header("AGUI-Resume-Token", TOKEN)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", format!("{run}:{after}"))
        .send()
        .await
        .unwrap()
}

/// The events of resumable run `run` on `base` after seq `after`, read to the end.
async fn attached(base: &str, run: &str, after: u64) -> Vec<Frame> {
    let res = attach(base, run, after).await;
    assert_eq!(res.status(), 200, "re-attach after {after}");
    assert_eq!(res.headers()["agui-first-seq"], (after + 1).to_string());
    Frames::of(res).rest().await
}

fn seqs(frames: &[Frame]) -> Vec<u64> {
    frames.iter().map(|f| f.seq).collect()
}

/// A CopilotKit run input on `thread`.
fn input(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {},
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": text}],
    })
}

/// A CopilotKit request (`run`, `connect`) to `agent` as the test's owner: the whole
/// response body.
async fn copilot(base: &str, agent: &str, path: &str, body: &Value) -> String {
    let res = reqwest::Client::new()
        .post(format!("{base}/copilotkit/agent/{agent}/{path}"))
        .bearer_auth(TOKEN)
        .header("Accept", "text/event-stream")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{path}");
    tokio::time::timeout(Duration::from_secs(30), res.text())
        .await
        .expect("the response ends")
        .unwrap()
}

/// A CopilotKit thread route read as the test's owner: its JSON.
async fn get_json(base: &str, path: &str) -> Value {
    let res = reqwest::Client::new()
        .get(format!("{base}/copilotkit/{path}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{path}");
    res.json().await.unwrap()
}

/// Everything the server answers about `thread`: its list, messages, events, state, and
/// `connect`'s replay (as bytes).
#[derive(Debug, PartialEq)]
struct ThreadView {
    list: Value,
    messages: Value,
    events: Value,
    state: Value,
    connect: String,
}

async fn thread_view(base: &str, thread: &str) -> ThreadView {
    ThreadView {
        list: get_json(base, "threads?agentId=shared_state").await,
        messages: get_json(base, &format!("threads/{thread}/messages")).await,
        events: get_json(base, &format!("threads/{thread}/events")).await,
        state: get_json(base, &format!("threads/{thread}/state")).await,
        connect: copilot(
            base,
            "shared_state",
            "connect",
            &input(thread, "connect", "again"),
        )
        .await,
    }
}

fn count_type(events: &Value, kind: &str) -> usize {
    events
        .as_array()
        .expect("an event list")
        .iter()
        .filter(|e| e["type"] == kind)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilotkit_thread_reads_back_identical_after_a_sigkill_restart() {
    let Some(db) = Database::create("ck_thread") else {
        return;
    };
    let thread = "restart-thread";
    let first = serve(&db, "first", "0");
    for i in 1..=3 {
        let body = copilot(
            &first.base,
            "shared_state",
            "run",
            &input(thread, &format!("r{i}"), &format!("question {i}")),
        )
        .await;
        assert!(body.contains("RUN_FINISHED"), "run {i}: {body}");
    }
    let before = thread_view(&first.base, thread).await;
    // What is compared holds the three runs.
    let listed = before.list["threads"].as_array().expect("a thread list");
    assert_eq!(listed.len(), 1, "{}", before.list);
    assert_eq!(listed[0]["id"], thread);
    let events = &before.events["events"];
    assert_eq!(count_type(events, "RUN_STARTED"), 3, "{events}");
    assert_eq!(count_type(events, "RUN_FINISHED"), 3, "{events}");
    let messages = before.messages["messages"].as_array().expect("messages");
    let users: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(
        users.iter().map(|m| m["id"].clone()).collect::<Vec<_>>(),
        ["r1-u", "r2-u", "r3-u"],
        "{messages:?}"
    );
    assert_eq!(
        messages.iter().filter(|m| m["role"] == "assistant").count(),
        3,
        "{messages:?}"
    );
    assert_eq!(
        before.state["state"]["title"], "Pancakes",
        "{}",
        before.state
    );
    assert_eq!(before.connect.matches("\"RUN_STARTED\"").count(), 3);

    kill(first);
    let second = serve(&db, "second", "0");
    let after = thread_view(&second.base, thread).await;
    assert_eq!(after.list, before.list, "the thread list");
    assert_eq!(after.messages, before.messages, "the messages");
    assert_eq!(after.events, before.events, "the events");
    assert_eq!(after.state, before.state, "the state");
    assert_eq!(
        after.connect, before.connect,
        "connect's replay, byte for byte"
    );

    // And the thread goes on on the new server.
    let body = copilot(
        &second.base,
        "shared_state",
        "run",
        &input(thread, "r4", "question 4"),
    )
    .await;
    assert!(body.contains("RUN_FINISHED"), "{body}");
    let events = get_json(&second.base, &format!("threads/{thread}/events")).await;
    assert_eq!(count_type(&events["events"], "RUN_STARTED"), 4, "{events}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_resumable_run_re_attaches_after_a_sigkill_restart() {
    let Some(db) = Database::create("resumable") else {
        return;
    };
    let first = serve(&db, "first", "0");
    let run = "restart-run";
    let seen = start(&first.base, run).await.rest().await;
    assert_eq!(seqs(&seen), (1..=seen.len() as u64).collect::<Vec<_>>());
    assert_eq!(seen.last().unwrap().event["type"], "RUN_FINISHED");
    assert!(seen.len() > 8, "the whole reply: {seen:?}");
    let n = seen.len() as u64;

    kill(first);
    let second = serve(&db, "second", "0");
    assert_eq!(
        attached(&second.base, run, 3).await,
        seen[3..],
        "exactly the events after the cursor"
    );
    assert_eq!(attached(&second.base, run, 0).await, seen, "the whole run");
    assert_eq!(
        attached(&second.base, run, n - 1).await,
        seen[seen.len() - 1..],
        "the last event alone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_mid_run_ends_that_run_cleanly_and_the_next_runs_succeed() {
    let Some(db) = Database::create("cut") else {
        return;
    };
    let mut served = serve(&db, "A", "150");
    let run = "cut-run";
    let mut frames = start(&served.base, run).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(frames.next().await.expect("a frame"));
    }
    // Every connection the server holds to its database is cut, as a restart of the
    // database cuts them (the pool's and the one listening for notifications).
    let cut: usize = db
        .sql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .trim()
        .parse()
        .unwrap();
    assert!(
        cut >= 2,
        "the server's pool and listener: {cut} connections"
    );
    let t0 = std::time::Instant::now();
    seen.extend(frames.rest().await);
    assert!(t0.elapsed() < Duration::from_secs(20), "the stream ends");
    // The run has an end, after every event it committed once, whether it got through
    // on new connections or failed on the cut ones.
    let mut last_seq = seen.last().unwrap().seq;
    let mut tail = Vec::new();
    for _ in 0..50 {
        let res = attach(&served.base, run, last_seq).await;
        if res.status() == 200 {
            tail = Frames::of(res).rest().await;
            if tail.last().is_some_and(|f| {
                f.event["type"] == "RUN_FINISHED" || f.event["type"] == "RUN_ERROR"
            }) {
                break;
            }
            last_seq = tail.last().map_or(last_seq, |f| f.seq);
            seen.append(&mut tail);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    seen.extend(tail);
    let last = &seen.last().unwrap().event;
    match last["type"].as_str() {
        Some("RUN_FINISHED") => {}
        Some("RUN_ERROR") => assert!(
            last["code"] == "store_unavailable" || last["code"] == RUN_LOST,
            "{last}"
        ),
        _ => panic!("the run never ended: {seen:?}"),
    }
    assert_eq!(
        seqs(&seen),
        (1..=seen.len() as u64).collect::<Vec<_>>(),
        "every committed event once, then the end"
    );
    assert_eq!(
        attached(&served.base, run, 0).await,
        seen,
        "what was streamed is what was kept"
    );

    // The next runs succeed: a resumable one, kept whole, and a CopilotKit one.
    let next = start(&served.base, "next-run").await.rest().await;
    assert_eq!(seqs(&next), (1..=next.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        next.last().unwrap().event["type"],
        "RUN_FINISHED",
        "{next:?}"
    );
    assert_eq!(attached(&served.base, "next-run", 0).await, next);
    let body = copilot(
        &served.base,
        "agentic_chat",
        "run",
        &input("after-cut", "ck-1", "hello"),
    )
    .await;
    assert!(body.contains("RUN_FINISHED"), "{body}");
    let events = get_json(&served.base, "threads/after-cut/events").await;
    assert_eq!(count_type(&events["events"], "RUN_FINISHED"), 1, "{events}");
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "the server did not exit"
    );
}

/// The store's objects in schema `agui`, each with its definition and identity (a
/// table dropped and made again has a new oid), and its applied migrations.
fn catalog(db: &Database) -> String {
    db.sql(
        "SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || c.oid FROM pg_class c \
           WHERE c.relnamespace = 'agui'::regnamespace \
         UNION ALL SELECT 'col ' || table_name || '.' || column_name || ' ' || data_type \
           || ' ' || is_nullable || ' ' || coalesce(column_default, '') \
           FROM information_schema.columns WHERE table_schema = 'agui' \
         UNION ALL SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes \
           WHERE schemaname = 'agui' \
         UNION ALL SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid) \
           FROM pg_constraint WHERE connamespace = 'agui'::regnamespace \
         UNION ALL SELECT 'trigger ' || tgname || ' ' || tgrelid::regclass || ' ' || oid \
           FROM pg_trigger WHERE tgrelid IN \
             (SELECT oid FROM pg_class WHERE relnamespace = 'agui'::regnamespace) \
         UNION ALL SELECT 'function ' || proname || ' ' || oid || ' ' || md5(prosrc) \
           FROM pg_proc WHERE pronamespace = 'agui'::regnamespace \
         UNION ALL SELECT 'migration ' || version || ' ' || applied_at FROM agui.schema_version \
         ORDER BY 1",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_database_gets_its_tables_at_first_start_and_a_second_start_changes_nothing() {
    let Some(db) = Database::create("migrate") else {
        return;
    };
    assert_eq!(
        db.sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'agui'")
            .trim(),
        "0",
        "an empty database"
    );
    let first = serve(&db, "first", "0");
    let body = copilot(
        &first.base,
        "agentic_chat",
        "run",
        &input("migrated", "r1", "hello"),
    )
    .await;
    assert!(body.contains("RUN_FINISHED"), "{body}");
    kill(first);

    let tables = db.sql(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'agui' \
         ORDER BY 1",
    );
    let tables: Vec<&str> = tables.lines().collect();
    // The tables of the run log and the thread index (later migrations may add more).
    for table in [
        "events",
        "runs",
        "schema_version",
        "thread_count",
        "thread_history",
        "thread_message_ids",
        "threads",
    ] {
        assert!(tables.contains(&table), "{table} in {tables:?}");
    }
    let versions = db.sql("SELECT version FROM agui.schema_version ORDER BY 1");
    assert_eq!(
        versions.lines().collect::<Vec<_>>(),
        (1..=agui_sdk_postgres::SCHEMA_VERSION)
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
    );
    let before = catalog(&db);
    assert!(before.lines().count() > 40, "{before}");

    let second = serve(&db, "second", "0");
    let events = get_json(&second.base, "threads/migrated/events").await;
    assert_eq!(count_type(&events["events"], "RUN_FINISHED"), 1, "{events}");
    drop(second);
    assert_eq!(catalog(&db), before, "the second start changed the schema");
}
