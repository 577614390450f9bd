//! Calling an HTTP endpoint that answers an event stream, the same way everywhere in
//! this SDK (the client, the inspector's relay, the model agent): an error answer's
//! body is read only up to a bound, `Retry-After` is honoured, and retries back off
//! exponentially with full jitter.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// How much of an error answer's body is kept by default (the rest is not read).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// `url` fit to show, log or describe: the userinfo (`user:password@`) of its
/// authority replaced by `***`. Everything else is kept as it is, even when `url` is not
/// a URL at all.
///
/// ```
/// use agui_sdk_client::endpoint::redact_url;
/// assert_eq!(redact_url("redis://:hunter2@cache:6379/0"), "redis://***@cache:6379/0");
/// assert_eq!(redact_url("https://u:p@api.example/v1?q=1"), "https://***@api.example/v1?q=1");
/// assert_eq!(redact_url("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1");
/// ```
pub fn redact_url(url: &str) -> String {
    match userinfo(url) {
        Some((scheme_end, at)) => format!("{}***{}", &url[..scheme_end], &url[at..]),
        None => url.to_owned(),
    }
}

/// `text` (an error that may quote `url`, or part of it) with `url` shown as
/// [`redact_url`] shows it, and its password (or lone user token) replaced by `***`
/// wherever else it appears.
pub fn redact_url_in(text: &str, url: &str) -> String {
    let mut out = text.replace(url, &redact_url(url));
    if let Some((scheme_end, at)) = userinfo(url) {
        let info = &url[scheme_end..at];
        let secret = info.split_once(':').map_or(info, |(_, p)| p);
        if !secret.is_empty() {
            out = out.replace(secret, "***");
        }
    }
    out
}

/// Where the userinfo of `url`'s authority starts and where its `@` is.
fn userinfo(url: &str) -> Option<(usize, usize)> {
    let scheme_end = url.find("://")? + 3;
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    Some((scheme_end, scheme_end + at))
}

/// How many redirects [`same_origin_redirects`] follows by default, as browsers and
/// `reqwest` do.
pub const MAX_REDIRECTS: usize = 10;

/// The origin of `url`: its scheme, host and port (the scheme's default when it names
/// none), as `scheme://host:port`.
pub fn origin(url: &reqwest::Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// A redirect to another origin than the request's, not followed: the request's headers
/// (its credentials) stay with the origin they were given for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{from} redirected{} to {to}, another origin than {origin}: {}", .status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(), if *.followed { "refused" } else { "not followed, so that the request's headers and credentials went nowhere else" })]
pub struct CrossOriginRedirect {
    /// The origin of the first request of the chain (`scheme://host:port`).
    pub origin: String,
    /// The URL that answered with the redirect (its userinfo redacted).
    pub from: String,
    /// Where it pointed (its userinfo redacted).
    pub to: String,
    /// The redirect's status, when known.
    pub status: Option<u16>,
    /// Whether the redirect had been followed by the time it was found (by a client
    /// given from outside, with a redirect policy of its own): what the request carried
    /// may have gone there.
    pub followed: bool,
}

/// A redirect chain longer than its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("more than {max} redirects from {origin}")]
pub struct TooManyRedirects {
    /// The origin of the first request.
    pub origin: String,
    /// The bound.
    pub max: usize,
}

/// A redirect policy for a `reqwest` client that sends credentials: it follows at most
/// `max` redirects (zero: none, the `3xx` answer is the response), and only within the
/// origin of the chain's first request (scheme, host and port equal). A redirect to
/// another origin fails the request with a [`CrossOriginRedirect`] (found with
/// [`cross_origin_redirect`]) before anything is sent there.
///
/// `reqwest`'s default policy follows 10 redirects anywhere and removes `Authorization`
/// and `Cookie` only on a hop that changes host: a chain that leaves the host and then
/// redirects within the foreign host sends them again there (0.12.28). Headers of your
/// own carrying a secret are never removed. This policy never leaves the origin.
pub fn same_origin_redirects(max: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.stop();
        };
        let home = origin(first);
        if origin(attempt.url()) != home {
            let error = CrossOriginRedirect {
                origin: home,
                from: attempt
                    .previous()
                    .last()
                    .map(|u| redact_url(u.as_str()))
                    .unwrap_or_default(),
                to: redact_url(attempt.url().as_str()),
                status: Some(attempt.status().as_u16()),
                followed: false,
            };
            return attempt.error(error);
        }
        if attempt.previous().len() > max {
            if max == 0 {
                return attempt.stop();
            }
            let error = TooManyRedirects { origin: home, max };
            return attempt.error(error);
        }
        attempt.follow()
    })
}

/// The [`CrossOriginRedirect`] that failed a request, when that is why it failed.
pub fn cross_origin_redirect(e: &reqwest::Error) -> Option<&CrossOriginRedirect> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<CrossOriginRedirect>() {
            return Some(r);
        }
        cause = c.source();
    }
    None
}

/// The start of an error answer's body: see [`error_body`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorBody {
    /// The bytes kept, as text (invalid UTF-8 replaced).
    pub text: String,
    /// Whether the body went on past what was kept (or past the time allowed).
    pub truncated: bool,
}

impl std::fmt::Display for ErrorBody {
    /// The text, with ` …` when it was cut.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)?;
        if self.truncated {
            f.write_str(" …")?;
        }
        Ok(())
    }
}

/// At most `max` bytes of `response`'s body, read within `timeout` (when given); the
/// rest is not read. A failure while reading ends the text where it was.
pub async fn error_body(
    response: reqwest::Response,
    max: usize,
    timeout: Option<Duration>,
) -> ErrorBody {
    let mut kept = Vec::new();
    let mut truncated = false;
    let read = async {
        let mut body = response.bytes_stream();
        while let Some(Ok(chunk)) = body.next().await {
            let room = max - kept.len();
            if chunk.len() > room {
                kept.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            kept.extend_from_slice(&chunk);
        }
    };
    let on_time = match timeout {
        Some(t) => tokio::time::timeout(t, read).await.is_ok(),
        None => {
            read.await;
            true
        }
    };
    ErrorBody {
        text: String::from_utf8_lossy(&kept).into_owned(),
        truncated: truncated || !on_time,
    }
}

/// The delay a `Retry-After` header asks for, in its seconds form (an integer or a
/// decimal number, at least 0). `None` without the header, or in its date form.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
}

/// Exponential backoff with full jitter: the pause before retry `n` (0-based) is a
/// uniformly random time up to `initial · 2ⁿ`, never more than `max`; a server's
/// `Retry-After` takes its place (still at most `max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The ceiling of the first pause.
    pub initial: Duration,
    /// The longest pause.
    pub max: Duration,
}

impl Backoff {
    /// Pauses from `initial`, doubling, at most `max` (at least `initial`).
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max: max.max(initial),
        }
    }

    /// The ceiling of the pause before retry `attempt` (0-based): `initial · 2^attempt`,
    /// at most `max`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        self.initial
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max)
    }

    /// The pause before retry `attempt` (0-based), given the server's `Retry-After`.
    pub fn pause(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(d) => d.min(self.max),
            None => {
                let r = (uuid::Uuid::new_v4().as_u128() & 0xffff_ffff) as f64 / u32::MAX as f64;
                self.ceiling(attempt).mul_f64(r)
            }
        }
    }
}

/// An error's message followed by its causes, `: `-separated, each cause left out when
/// the text so far already holds it (HTTP client errors often repeat their cause).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn userinfo_is_redacted_and_nothing_else() {
        for (url, want) in [
            ("http://user:s3cret@host:1/a@b", "http://***@host:1/a@b"),
            ("rediss://s3cret@h", "rediss://***@h"),
            ("http://h/path?u=a@b", "http://h/path?u=a@b"),
            ("memory", "memory"),
            ("http://a:b@c@d/x", "http://***@d/x"),
        ] {
            assert_eq!(redact_url(url), want, "{url}");
        }
        let url = "redis://:hunter2@cache:6379/0";
        assert_eq!(
            redact_url_in(&format!("cannot open {url}: AUTH hunter2 refused"), url),
            "cannot open redis://***@cache:6379/0: AUTH *** refused"
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_refuses_the_rest() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        for (v, want) in [
            ("3", Some(Duration::from_secs(3))),
            (" 1.5 ", Some(Duration::from_millis(1500))),
            ("0", Some(Duration::ZERO)),
            ("-1", None),
            ("NaN", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
        ] {
            h.insert(RETRY_AFTER, HeaderValue::from_static(v));
            assert_eq!(retry_after(&h), want, "{v}");
        }
    }

    #[test]
    fn backoff_is_jittered_under_a_doubling_ceiling() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(b.ceiling(0), Duration::from_millis(100));
        assert_eq!(b.ceiling(3), Duration::from_millis(800));
        assert_eq!(b.ceiling(4), Duration::from_secs(1));
        assert_eq!(b.ceiling(40), Duration::from_secs(1));
        let pauses: Vec<Duration> = (0..64).map(|_| b.pause(2, None)).collect();
        assert!(pauses.iter().all(|p| *p <= Duration::from_millis(400)));
        assert!(
            pauses.windows(2).any(|w| w[0] != w[1]),
            "jittered, not one fixed pause"
        );
        assert_eq!(
            b.pause(0, Some(Duration::from_secs(30))),
            Duration::from_secs(1),
            "Retry-After, capped"
        );
        assert_eq!(
            b.pause(9, Some(Duration::from_millis(5))),
            Duration::from_millis(5)
        );
    }

    #[test]
    fn an_error_body_is_cut_at_its_bound() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for (body, max, want) in [
                (
                    "short",
                    64,
                    ErrorBody {
                        text: "short".into(),
                        truncated: false,
                    },
                ),
                (
                    "0123456789",
                    4,
                    ErrorBody {
                        text: "0123".into(),
                        truncated: true,
                    },
                ),
            ] {
                let response = reqwest::Response::from(http_response(body));
                let got = error_body(response, max, Some(Duration::from_secs(5))).await;
                assert_eq!(got, want);
            }
            let cut = ErrorBody {
                text: "ab".into(),
                truncated: true,
            };
            assert_eq!(cut.to_string(), "ab …");
        });
    }

    fn http_response(body: &'static str) -> ::http::Response<&'static str> {
        ::http::Response::builder().status(500).body(body).unwrap()
    }
}
