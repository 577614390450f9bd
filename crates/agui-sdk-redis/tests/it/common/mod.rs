//! What the Redis tests share: a store connected through the test kit's Redis gate.

use std::time::Duration;

use agui_sdk_redis::{RedisRunStore, RunLimits};

pub(crate) use agui_sdk_testkit::redis::configured_url as url;

/// A key prefix no other test run uses.
pub(crate) fn prefix() -> String {
    agui_sdk_testkit::redis::prefix("redis")
}

/// A store under `prefix` on the Redis at [`url`], or `None` (after saying why) when no
/// Redis answers there and none is required (`AGUI_REQUIRE_REDIS`).
pub(crate) async fn connect(test: &str, prefix: &str, limits: RunLimits) -> Option<RedisRunStore> {
    let url = agui_sdk_testkit::redis::url(test)?;
    let store = tokio::time::timeout(
        Duration::from_secs(10),
        RedisRunStore::connect(&url, prefix, limits),
    )
    .await
    .unwrap_or_else(|_| panic!("{test}: Redis at {url} answers but connecting timed out"))
    .unwrap_or_else(|e| panic!("{test}: Redis at {url} answers but the store cannot connect: {e}"));
    Some(store)
}
