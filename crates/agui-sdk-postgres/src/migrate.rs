//! The store's tables, created and upgraded by versioned migrations embedded in the
//! crate: each runs once per schema, in order, in one transaction with the others a
//! connect applies, under an advisory lock so that replicas starting together apply it
//! once.

use tokio_postgres::Client;

use crate::ConnectError;

/// Each migration's version and SQL (`{schema}` stands for the store's schema), oldest
/// first: what a schema at version `n` lacks is every migration after `n`.
pub const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_run_log.sql")),
    (2, include_str!("../migrations/0002_leases.sql")),
    (3, include_str!("../migrations/0003_threads.sql")),
    (4, include_str!("../migrations/0004_interrupts.sql")),
    (
        5,
        include_str!("../migrations/0005_thread_count_shards.sql"),
    ),
    (
        6,
        include_str!("../migrations/0006_events_go_with_their_run.sql"),
    ),
];

/// The schema version this build writes: its last migration's.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Brings `schema` to [`SCHEMA_VERSION`], creating it when it does not exist; refuses a
/// schema a newer build has migrated past this build's version. The version the schema
/// had before.
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<i32, ConnectError> {
    let failed = |source| ConnectError::Migrate {
        schema: schema.to_owned(),
        source,
    };
    let tx = client.transaction().await.map_err(failed)?;
    tx.query_one(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("agui-sdk-postgres:{schema}")],
    )
    .await
    .map_err(failed)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.schema_version (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(failed)?;
    let found: i32 = tx
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {schema}.schema_version"),
            &[],
        )
        .await
        .map_err(failed)?
        .get(0);
    if found > SCHEMA_VERSION {
        return Err(ConnectError::NewerSchema {
            schema: schema.to_owned(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        tx.batch_execute(&sql.replace("{schema}", schema))
            .await
            .map_err(|source| ConnectError::Migration {
                schema: schema.to_owned(),
                version: *version,
                source,
            })?;
        tx.execute(
            &format!("INSERT INTO {schema}.schema_version (version) VALUES ($1)"),
            &[version],
        )
        .await
        .map_err(failed)?;
        tracing::info!(schema, version, "PostgreSQL run store: migration applied");
    }
    tx.commit().await.map_err(failed)?;
    Ok(found)
}

/// Whether `name` can name the store's schema: a lower-case SQL identifier, 1 to 63
/// characters of `a-z`, `0-9` and `_`, not starting with a digit (it is written into
/// the SQL unquoted).
pub(crate) fn valid_schema(name: &str) -> bool {
    let b = name.as_bytes();
    (1..=63).contains(&b.len())
        && !b[0].is_ascii_digit()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_rise_one_by_one_from_one() {
        for (i, (v, _)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*v, i as i32 + 1, "migration {i} has version {v}");
        }
    }

    #[test]
    fn a_schema_name_is_a_plain_identifier() {
        assert!(valid_schema("agui"));
        assert!(valid_schema("agui_runs_2"));
        assert!(!valid_schema(""));
        assert!(!valid_schema("2agui"));
        assert!(!valid_schema("Agui"));
        assert!(!valid_schema("agui; DROP TABLE x"));
        assert!(!valid_schema(&"a".repeat(64)));
    }
}
