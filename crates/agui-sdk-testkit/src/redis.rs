//! The Redis gate: the tests that need a Redis use the one at `AGUI_TEST_REDIS_URL`
//! (by default `redis://127.0.0.1:6379`). When none answers, a test prints one line
//! saying it is skipped and returns, except under `AGUI_REQUIRE_REDIS=1` (set by
//! `scripts/test-all.sh`, and so CI), where that is a failure.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// `AGUI_TEST_REDIS_URL`, by default `redis://127.0.0.1:6379`, whether or not a Redis
/// answers there.
pub fn configured_url() -> String {
    std::env::var("AGUI_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// Whether `AGUI_REQUIRE_REDIS` is set (to anything but empty or `0`).
pub fn required() -> bool {
    std::env::var_os("AGUI_REQUIRE_REDIS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The `host:port` of a `redis://` or `rediss://` URL (credentials and database left
/// out; port 6379 when it names none).
pub fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let has_port = match host.rsplit_once(':') {
        // `[::1]` alone has a colon but no port.
        Some((_, p)) => !p.ends_with(']'),
        None => false,
    };
    if has_port {
        host.to_owned()
    } else {
        format!("{host}:6379")
    }
}

/// Whether a Redis answers at `addr` (`host:port`): a `PING` over TCP, answered with
/// `+PONG`, or with `-NOAUTH` by a Redis that wants the credentials of the URL.
pub fn answers(addr: &str) -> bool {
    let Some(sock) = addr.to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        return false;
    };
    let Ok(mut s) = TcpStream::connect_timeout(&sock, Duration::from_secs(2)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && (&buf == b"+PONG\r\n" || buf.starts_with(b"-NOAUTH"))
}

/// The Redis URL for `test` when a Redis answers there. When none does: `None` and one
/// printed line saying `test` is skipped, or a panic saying so when `AGUI_REQUIRE_REDIS`
/// is set.
pub fn url(test: &str) -> Option<String> {
    let url = configured_url();
    let addr = host_port(&url);
    if answers(&addr) {
        return Some(url);
    }
    assert!(
        !required(),
        "{test}: no Redis answers at {url} (AGUI_REQUIRE_REDIS is set): start one, or set AGUI_TEST_REDIS_URL"
    );
    println!("skipped {test}: no Redis answers at {url}; start one, or set AGUI_TEST_REDIS_URL");
    None
}

/// A key prefix no other test run uses: `agui-test-{tag}-{pid}-{n}`, `n` from the clock
/// and a counter of this process.
pub fn prefix(tag: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    format!("agui-test-{tag}-{}-{nanos:x}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn the_address_comes_from_the_url() {
        assert_eq!(host_port("redis://127.0.0.1:6379"), "127.0.0.1:6379");
        assert_eq!(host_port("redis://:secret@cache:6400/2"), "cache:6400");
        assert_eq!(host_port("rediss://user:pw@cache"), "cache:6379");
        assert_eq!(host_port("redis://[::1]:7000"), "[::1]:7000");
        assert_eq!(host_port("redis://[::1]"), "[::1]:6379");
        assert_eq!(
            host_port("redis://localhost/0?protocol=resp3"),
            "localhost:6379"
        );
    }
}
