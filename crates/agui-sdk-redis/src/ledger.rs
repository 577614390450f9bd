//! The interrupt ledger of [`RedisRunStore`]: one hash per thread, `P:ix:{K}` with the
//! fields `v` (the version) and `doc`, replaced by one script that compares the version
//! first.

use std::time::Duration;

use agui_sdk_agent::runs::{InterruptKey, InterruptLedger, LedgerEntry, RunStoreFuture};
use bytes::Bytes;
use redis::Script;

use crate::{protocol, unavailable, RedisRunStore};

/// KEYS entry; ARGV expected ('' for none) version doc ttl_ms -> 1 when replaced, 0
/// when the version was not the expected one.
const SWAP: &str = r#"
local cur = redis.call('HGET', KEYS[1], 'v')
if (cur or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'doc', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
"#;

/// The swap script.
pub(crate) fn swap_script() -> Script {
    Script::new(SWAP)
}

impl RedisRunStore {
    fn ledger_key(&self, key: &InterruptKey) -> String {
        format!("{}:ix:{{{}}}", self.prefix, key)
    }
}

impl InterruptLedger for RedisRunStore {
    fn load<'a>(&'a self, key: &'a InterruptKey) -> RunStoreFuture<'a, Option<LedgerEntry>> {
        Box::pin(async move {
            let mut con = self.con.clone();
            let (v, doc): (Option<String>, Option<Vec<u8>>) = redis::cmd("HMGET")
                .arg(self.ledger_key(key))
                .arg("v")
                .arg("doc")
                .query_async(&mut con)
                .await
                .map_err(unavailable)?;
            match (v, doc) {
                (Some(v), Some(doc)) => Ok(Some(LedgerEntry {
                    version: v.parse().map_err(|_| protocol("ledger version"))?,
                    doc: Bytes::from(doc),
                })),
                _ => Ok(None),
            }
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
            let mut con = self.con.clone();
            let replaced: i64 = self
                .scripts
                .ledger_swap
                .key(self.ledger_key(key))
                .arg(expected.map(|v| v.to_string()).unwrap_or_default())
                .arg(new.version.to_string())
                .arg(new.doc.as_ref())
                .arg(ttl.as_millis().max(1) as u64)
                .invoke_async(&mut con)
                .await
                .map_err(unavailable)?;
            Ok(replaced == 1)
        })
    }
}
