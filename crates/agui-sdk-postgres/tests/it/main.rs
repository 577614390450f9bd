//! The PostgreSQL store against a real PostgreSQL, each test in a schema of its own.

mod append;
mod leases;
mod migrations;
mod retention;
mod run_log;
mod thread_count;
mod threads;
mod wake;

use std::sync::atomic::{AtomicU32, Ordering};

use agui_sdk_agent::runs::RunLimits;
use agui_sdk_postgres::PostgresRunStore;

/// A run of `name` by `owner` and `agent` with a lease of a minute, in `thread` if any.
pub(crate) fn new_run(
    name: &str,
    thread: Option<agui_sdk_agent::runs::ThreadKey>,
) -> agui_sdk_agent::runs::NewRun {
    agui_sdk_agent::runs::NewRun {
        key: agui_sdk_agent::runs::RunKey::derive("owner", "agent", name),
        run_id: name.into(),
        thread_id: "thread".into(),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "replica".into(),
        lease: std::time::Duration::from_secs(60),
        thread,
    }
}

/// The PostgreSQL the tests use.
pub fn url() -> String {
    std::env::var("AGUI_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A client of the test database, or `None` when it does not answer (the test is
/// skipped; with `AGUI_REQUIRE_POSTGRES=1` it fails).
pub async fn client(test: &str) -> Option<tokio_postgres::Client> {
    let url = url();
    match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
        Ok((client, connection)) => {
            tokio::spawn(connection);
            Some(client)
        }
        Err(e) if std::env::var("AGUI_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
            panic!("{test}: AGUI_REQUIRE_POSTGRES=1 but PostgreSQL at {url} does not answer: {e}")
        }
        Err(e) => {
            eprintln!("skipped {test}: PostgreSQL at {url} does not answer: {e}");
            None
        }
    }
}

/// A schema name no other test (of this or another run) uses, dropped first if a
/// crashed run left it.
pub async fn schema(client: &tokio_postgres::Client, test: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "agui_test_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        test
    );
    drop_schema(client, &name).await;
    name
}

/// Drops `schema` and everything in it.
pub async fn drop_schema(client: &tokio_postgres::Client, schema: &str) {
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .unwrap_or_else(|e| panic!("dropping schema {schema}: {e}"));
}

/// A store in a fresh schema, with its admin client; `None` when PostgreSQL does not
/// answer.
pub async fn store(
    test: &str,
    limits: RunLimits,
) -> Option<(PostgresRunStore, tokio_postgres::Client, String)> {
    let client = client(test).await?;
    let schema = schema(&client, test).await;
    let store = PostgresRunStore::connect(&url(), &schema, limits)
        .await
        .unwrap_or_else(|e| panic!("{test}: PostgreSQL answers but the store cannot connect: {e}"));
    Some((store, client, schema))
}
