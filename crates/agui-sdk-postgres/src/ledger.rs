//! The interrupt ledger role ([`InterruptLedger`]): one row per thread in
//! `interrupts`, replaced by a statement that compares the version in its `WHERE`.

use std::time::Duration;

use agui_sdk_agent::runs::{InterruptKey, InterruptLedger, LedgerEntry, RunStoreFuture};
use bytes::Bytes;

use crate::{big, unavailable, PostgresRunStore, STATEMENT_MS};

/// The ledger's statements, written for the store's schema.
#[derive(Debug)]
pub(crate) struct LedgerSql {
    load: String,
    replace: String,
    insert: String,
}

impl LedgerSql {
    pub(crate) fn new(s: &str) -> Self {
        LedgerSql {
            load: format!(
                "SELECT version, doc FROM {s}.interrupts WHERE key = $1 AND expires_at_ms > {STATEMENT_MS}"
            ),
            replace: format!(
                "UPDATE {s}.interrupts SET version = $3, doc = $4, expires_at_ms = {STATEMENT_MS} + $5 \
                 WHERE key = $1 AND version = $2 AND expires_at_ms > {STATEMENT_MS}"
            ),
            // No live row: a new one, or one that expired and is replaced.
            insert: format!(
                "INSERT INTO {s}.interrupts (key, version, doc, expires_at_ms) \
                 VALUES ($1, $2, $3, {STATEMENT_MS} + $4) \
                 ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, doc = EXCLUDED.doc, \
                 expires_at_ms = EXCLUDED.expires_at_ms \
                 WHERE {s}.interrupts.expires_at_ms <= {STATEMENT_MS}"
            ),
        }
    }
}

/// A version as the `bigint` column keeps it (the same 64 bits).
fn column(version: u64) -> i64 {
    version as i64
}

impl InterruptLedger for PostgresRunStore {
    fn load<'a>(&'a self, key: &'a InterruptKey) -> RunStoreFuture<'a, Option<LedgerEntry>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(&self.sql.ledger.load, &[&key.as_str()])
                .await
                .map_err(unavailable)?;
            Ok(row.map(|r| LedgerEntry {
                version: r.get::<_, i64>(0) as u64,
                doc: Bytes::from(r.get::<_, Vec<u8>>(1)),
            }))
        })
    }

    fn swap<'a>(
        &'a self,
        key: &'a InterruptKey,
        expected: Option<u64>,
        new: LedgerEntry,
        ttl: Duration,
    ) -> RunStoreFuture<'a, bool> {
        Box::pin(async move {
            let client = self.client().await?;
            let ttl = big(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
            let doc: &[u8] = &new.doc;
            let n = match expected {
                Some(v) => client
                    .execute(
                        &self.sql.ledger.replace,
                        &[&key.as_str(), &column(v), &column(new.version), &doc, &ttl],
                    )
                    .await
                    .map_err(unavailable)?,
                None => client
                    .execute(
                        &self.sql.ledger.insert,
                        &[&key.as_str(), &column(new.version), &doc, &ttl],
                    )
                    .await
                    .map_err(unavailable)?,
            };
            Ok(n == 1)
        })
    }
}
