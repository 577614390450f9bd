//! Wake-ups by LISTEN/NOTIFY across replicas, and a lost connection.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::{Created, Fence, NewRun, RunKey, RunLimits, RunLog, RunStoreError};
use agui_sdk_postgres::{PostgresRunStore, FALLBACK};
use bytes::Bytes;

use crate::{drop_schema, store, url};

async fn run(s: &PostgresRunStore, name: &str) -> (RunKey, Fence) {
    let key = RunKey::derive("owner", "agent", name);
    let new = NewRun {
        key: key.clone(),
        run_id: name.into(),
        thread_id: "thread".into(),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "replica-a".into(),
        lease: Duration::from_secs(60),
        thread: None,
    };
    let Created::New(f) = s.create(new).await.unwrap() else {
        panic!("a new run")
    };
    (key, f)
}

/// How long a wait on `a` at `after` takes to end when `b` appends 150 ms into it.
async fn wake_latency(
    a: &Arc<PostgresRunStore>,
    b: &PostgresRunStore,
    key: &RunKey,
    fence: Fence,
    after: u64,
) -> Duration {
    let waiter = {
        let a = Arc::clone(a);
        let key = key.clone();
        tokio::spawn(async move {
            a.wait(&key, after, Duration::from_secs(10)).await;
            tokio::time::Instant::now()
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let appended = tokio::time::Instant::now();
    b.append(key, fence, after + 1, vec![Bytes::from_static(b"{}")], None)
        .await
        .unwrap();
    let woke = waiter.await.unwrap();
    woke.saturating_duration_since(appended)
}

#[tokio::test]
async fn a_waiter_wakes_on_another_replicas_append_by_its_notification() {
    let Some((a, admin, schema)) = store("wake_replicas", RunLimits::shared()).await else {
        return;
    };
    let a = Arc::new(a);
    let b = PostgresRunStore::connect(&url(), &schema, RunLimits::shared())
        .await
        .unwrap();
    let (key, fence) = run(&b, "woken").await;
    // Another run's append wakes nobody waiting on this one.
    let (other, other_fence) = run(&b, "other").await;
    let heard = a.wakeups_received();
    let waited = wake_latency(&a, &b, &key, fence, 0).await;
    assert!(
        waited < FALLBACK / 4,
        "woken by the notification of b's append, not by the {FALLBACK:?} check: {waited:?}"
    );
    assert!(a.wakeups_received() > heard, "a heard b's notification");
    let t0 = tokio::time::Instant::now();
    let waiter = {
        let a = Arc::clone(&a);
        let key = key.clone();
        tokio::spawn(async move { a.wait(&key, 1, Duration::from_millis(600)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.append(
        &other,
        other_fence,
        1,
        vec![Bytes::from_static(b"{}")],
        None,
    )
    .await
    .unwrap();
    waiter.await.unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(600),
        "another run's notification is no wake-up for this one"
    );
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_lost_connection_loses_nothing_committed_and_the_store_reconnects() {
    let Some((a, admin, schema)) = store("wake_lost", RunLimits::shared()).await else {
        return;
    };
    let a = Arc::new(a);
    let b = PostgresRunStore::connect(&url(), &schema, RunLimits::shared())
        .await
        .unwrap();
    let (key, fence) = run(&b, "survives").await;
    b.append(&key, fence, 1, vec![Bytes::from_static(b"{\"n\":1}")], None)
        .await
        .unwrap();
    let _ = a.read(&key, 0, 10).await.unwrap();
    // Every connection of the stores on this schema is cut, the listeners' too.
    let cut = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&format!("agui-sdk-postgres {schema}")],
        )
        .await
        .unwrap();
    assert!(cut.len() >= 3, "the pools' and the listeners' connections");
    // An operation may fail once, saying why; the pool reconnects.
    let mut attempts = 0;
    let batch = loop {
        attempts += 1;
        match a.read(&key, 0, 10).await {
            Ok(b) => break b,
            Err(RunStoreError::Unavailable(e)) if attempts < 5 => {
                assert!(!e.to_string().is_empty());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("the store does not reconnect: {e}"),
        }
    };
    assert_eq!(
        batch.events,
        vec![Bytes::from_static(b"{\"n\":1}")],
        "what was committed is kept"
    );
    // The listener reconnects within its backoff: wake-ups come again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut head = 1;
    let mut waited = Duration::MAX;
    for _ in 0..3 {
        // The producer's first append after the cut may fail: it retries from its head.
        waited = loop {
            let t = tokio::time::timeout(
                Duration::from_secs(5),
                wake_latency_or_error(&a, &b, &key, fence, head),
            )
            .await
            .expect("an append and its wake-up end");
            match t {
                Some(w) => break w,
                None => continue,
            }
        };
        head += 1;
        if waited < FALLBACK / 4 {
            break;
        }
    }
    assert!(
        waited < FALLBACK / 4,
        "woken by notification after the reconnect: {waited:?}"
    );
    drop_schema(&admin, &schema).await;
}

/// As [`wake_latency`], `None` when the append fails (a pooled connection was cut).
async fn wake_latency_or_error(
    a: &Arc<PostgresRunStore>,
    b: &PostgresRunStore,
    key: &RunKey,
    fence: Fence,
    after: u64,
) -> Option<Duration> {
    let waiter = {
        let a = Arc::clone(a);
        let key = key.clone();
        tokio::spawn(async move {
            a.wait(&key, after, Duration::from_secs(10)).await;
            tokio::time::Instant::now()
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let appended = tokio::time::Instant::now();
    match b
        .append(key, fence, after + 1, vec![Bytes::from_static(b"{}")], None)
        .await
    {
        Ok(()) => Some(waiter.await.unwrap().saturating_duration_since(appended)),
        Err(RunStoreError::Unavailable(_)) => {
            waiter.abort();
            None
        }
        Err(e) => panic!("append after the cut: {e}"),
    }
}

/// A TCP proxy in front of the test database: cutting it is a database gone away
/// (every connection through it closed, new ones refused) until it is started again on
/// the same port.
struct Proxy {
    port: u16,
    accept: tokio::task::JoinHandle<()>,
    conns: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(port: u16, target: std::net::SocketAddr) -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .unwrap();
        let listener = socket.listen(64).unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let accepted = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let conn = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                accepted.lock().unwrap().push(conn);
            }
        });
        Proxy {
            port,
            accept,
            conns,
        }
    }

    async fn cut(self) -> u16 {
        let Proxy {
            port,
            accept,
            conns,
        } = self;
        accept.abort();
        let _ = accept.await;
        for conn in conns.lock().unwrap().drain(..) {
            conn.abort();
        }
        port
    }
}

#[tokio::test]
async fn a_database_gone_away_fails_operations_at_once_and_the_store_comes_back_with_it() {
    let Some((b, admin, schema)) = store("wake_gone", RunLimits::shared()).await else {
        return;
    };
    let config: tokio_postgres::Config = url().parse().unwrap();
    let target = match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(tokio_postgres::config::Host::Tcp(host)), port) => {
            std::net::ToSocketAddrs::to_socket_addrs(&(
                host.as_str(),
                port.copied().unwrap_or(5432),
            ))
            .unwrap()
            .next()
            .unwrap()
        }
        _ => {
            eprintln!("skipped: the test database is not reached over TCP");
            return;
        }
    };
    let proxy = Proxy::start(0, target).await;
    let mut via = format!(
        "postgres://{}@127.0.0.1:{}/{}",
        config.get_user().unwrap_or("postgres"),
        proxy.port,
        config.get_dbname().unwrap_or("postgres")
    );
    if let Some(p) = config.get_password() {
        via = via.replacen('@', &format!(":{}@", String::from_utf8_lossy(p)), 1);
    }
    let a = Arc::new(
        PostgresRunStore::connect(&via, &schema, RunLimits::shared())
            .await
            .unwrap(),
    );
    let (key, fence) = run(&b, "gone").await;
    b.append(&key, fence, 1, vec![Bytes::from_static(b"{\"n\":1}")], None)
        .await
        .unwrap();
    assert_eq!(a.read(&key, 0, 10).await.unwrap().head, 1);

    // The database goes away for replica a: its operations fail, saying so, at once.
    let port = proxy.cut().await;
    let t0 = tokio::time::Instant::now();
    match a.read(&key, 0, 10).await {
        Err(RunStoreError::Unavailable(e)) => assert!(!e.to_string().is_empty()),
        other => panic!("a store whose database is gone must say so: {other:?}"),
    }
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "no hang: {:?}",
        t0.elapsed()
    );
    // Meanwhile replica b commits more.
    b.append(&key, fence, 2, vec![Bytes::from_static(b"{\"n\":2}")], None)
        .await
        .unwrap();

    // The database comes back: a reconnects by itself, and nothing committed is lost.
    let proxy = Proxy::start(port, target).await;
    let mut batch = None;
    for _ in 0..50 {
        if let Ok(b) = a.read(&key, 0, 10).await {
            batch = Some(b);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let batch = batch.expect("the store reconnects when the database is back");
    assert_eq!(
        batch.events,
        vec![
            Bytes::from_static(b"{\"n\":1}"),
            Bytes::from_static(b"{\"n\":2}")
        ]
    );
    // Its wake-up connection is back within its backoff (at most 5 s).
    let mut waited = Duration::MAX;
    for head in 2..32 {
        waited = wake_latency(&a, &b, &key, fence, head).await;
        if waited < FALLBACK / 4 {
            break;
        }
    }
    assert!(
        waited < FALLBACK / 4,
        "woken by notification once the database is back: {waited:?}"
    );
    proxy.cut().await;
    drop_schema(&admin, &schema).await;
}
