//! The embedded migrations: applied once per schema, and a newer schema refused.

use agui_sdk_agent::runs::{Created, RunLimits, RunLog};
use agui_sdk_postgres::{ConnectError, PostgresRunStore, SCHEMA_VERSION};

use crate::{client, drop_schema, schema, store, url};

async fn versions(admin: &tokio_postgres::Client, schema: &str) -> Vec<i32> {
    admin
        .query(
            &format!("SELECT version FROM {schema}.schema_version ORDER BY version"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test]
async fn a_new_schema_is_migrated_once_and_a_second_connect_keeps_its_runs() {
    let Some((store, admin, schema)) = store("migrate_once", RunLimits::shared()).await else {
        return;
    };
    assert_eq!(
        versions(&admin, &schema).await,
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let run = crate::new_run("kept", None);
    let key = run.key.clone();
    assert!(matches!(store.create(run).await.unwrap(), Created::New(_)));
    drop(store);

    let again = PostgresRunStore::connect(&url(), &schema, RunLimits::shared())
        .await
        .expect("a second connect to a schema at this version");
    assert_eq!(
        versions(&admin, &schema).await,
        (1..=SCHEMA_VERSION).collect::<Vec<_>>(),
        "no migration applied twice"
    );
    assert_eq!(again.record(&key).await.unwrap().unwrap().run_id, "kept");
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn replicas_starting_together_migrate_a_schema_once() {
    let Some(admin) = client("migrate_together").await else {
        return;
    };
    let schema = schema(&admin, "migrate_together").await;
    let url = url();
    let connects = (0..4).map(|_| PostgresRunStore::connect(&url, &schema, RunLimits::shared()));
    for r in futures_util::future::join_all(connects).await {
        r.expect("every replica connects");
    }
    assert_eq!(
        versions(&admin, &schema).await,
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_schema_a_newer_build_migrated_is_refused() {
    let Some((store, admin, schema)) = store("migrate_newer", RunLimits::shared()).await else {
        return;
    };
    drop(store);
    admin
        .execute(
            &format!("INSERT INTO {schema}.schema_version (version) VALUES ($1)"),
            &[&(SCHEMA_VERSION + 1)],
        )
        .await
        .unwrap();
    match PostgresRunStore::connect(&url(), &schema, RunLimits::shared()).await {
        Err(ConnectError::NewerSchema {
            schema: s,
            found,
            known,
        }) => {
            assert_eq!(
                (s.as_str(), found, known),
                (schema.as_str(), SCHEMA_VERSION + 1, SCHEMA_VERSION)
            );
        }
        other => panic!("a newer schema must be refused: {other:?}"),
    }
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_schema_name_that_is_no_plain_identifier_is_refused() {
    match PostgresRunStore::connect(&url(), "agui; DROP TABLE x", RunLimits::shared()).await {
        Err(ConnectError::SchemaName(name)) => assert_eq!(name, "agui; DROP TABLE x"),
        other => panic!("an unsafe schema name must be refused: {other:?}"),
    }
}

#[tokio::test]
async fn a_database_that_does_not_answer_is_a_clear_error_not_a_hang() {
    // Nothing listens on port 1.
    let started = std::time::Instant::now();
    match PostgresRunStore::connect(
        "postgres://postgres@127.0.0.1:1/test",
        "agui",
        RunLimits::shared(),
    )
    .await
    {
        Err(e @ ConnectError::Unreachable(_)) => {
            assert!(e.to_string().starts_with("PostgreSQL unreachable: "), "{e}");
        }
        other => panic!("a database that does not answer must be refused: {other:?}"),
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the connect gives up"
    );
}
