//! What the Redis tests share: where Redis is, and what to do when it is not there.
#![allow(dead_code)]

/// `AGUI_TEST_REDIS_URL`, by default `redis://127.0.0.1:6379`.
pub fn url() -> String {
    std::env::var("AGUI_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A key prefix no other test run uses.
pub fn prefix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("agui-test-{}-{n:x}", std::process::id())
}

/// Called when Redis cannot be reached: a failure under `AGUI_REQUIRE_REDIS=1` (set by
/// `scripts/test-all.sh`, and so CI), else one line saying the test is skipped.
pub fn unavailable(test: &str, why: &str) {
    let required =
        std::env::var_os("AGUI_REQUIRE_REDIS").is_some_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{test}: Redis at {} is required (AGUI_REQUIRE_REDIS is set): {why}",
        url()
    );
    println!(
        "skipped {test}: no Redis at {} ({why}); start one, or set AGUI_TEST_REDIS_URL",
        url()
    );
}
