//! Cross-origin access to the runtime routes: which page origins may call them.

use std::time::Duration;

use axum::http::{header, HeaderValue, Method};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// Which origins may call the runtime from a browser page.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllowedOrigins {
    /// No cross-origin access (same-origin pages only; no CORS headers are sent).
    None,
    /// Pages served from this machine: `http(s)://localhost`, `127.0.0.1` or `[::1]`,
    /// on any port. The default, for development.
    Loopback,
    /// Exactly these origins (`scheme://host[:port]`).
    List(Vec<String>),
    /// Any origin (`Access-Control-Allow-Origin: *`; not allowed with credentials).
    Any,
}

/// The CORS policy of the runtime routes.
///
/// Preflight requests are answered with the requested headers echoed (so
/// `Authorization` and the custom headers a CopilotKit provider is given pass), the
/// methods `GET`, `POST`, `PATCH`, `DELETE` (the thread mutations) and `OPTIONS`, and a
/// cache time.
///
/// ```
/// use agui_sdk_server::copilotkit::{AllowedOrigins, Cors};
/// let cors = Cors::new(AllowedOrigins::List(vec!["https://app.example".into()]))
///     .credentials(true);
/// assert!(cors.validate().is_ok());
/// assert!(Cors::new(AllowedOrigins::Any).credentials(true).validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cors {
    /// Who may call.
    pub origins: AllowedOrigins,
    /// Whether credentialed requests (cookies, `credentials: "include"`) are allowed:
    /// `Access-Control-Allow-Credentials: true` (default false). Needs an explicit
    /// origin policy (`Loopback` or `List`), never `Any`.
    pub credentials: bool,
    /// How long a browser may cache a preflight answer (default 10 minutes).
    pub max_age: Duration,
}

impl Default for Cors {
    fn default() -> Self {
        Cors::new(AllowedOrigins::Loopback)
    }
}

impl Cors {
    /// A policy for `origins`, without credentials.
    pub fn new(origins: AllowedOrigins) -> Self {
        Cors {
            origins,
            credentials: false,
            max_age: Duration::from_secs(600),
        }
    }

    /// Sets [`credentials`](Self::credentials).
    pub fn credentials(mut self, on: bool) -> Self {
        self.credentials = on;
        self
    }

    /// Sets [`max_age`](Self::max_age).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// Checks the policy: credentials need explicit origins, and listed origins must
    /// be valid header values.
    pub fn validate(&self) -> Result<(), String> {
        if self.credentials && self.origins == AllowedOrigins::Any {
            return Err(
                "CORS with credentials needs an explicit origin list (or loopback), not any origin"
                    .into(),
            );
        }
        if let AllowedOrigins::List(list) = &self.origins {
            for o in list {
                if HeaderValue::from_str(o).is_err() || o.ends_with('/') {
                    return Err(format!(
                        "CORS origin {o:?} is not an origin (scheme://host[:port], no path)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The tower layer; `None` when cross-origin access is off.
    pub(crate) fn layer(&self) -> Option<CorsLayer> {
        let origin = match &self.origins {
            AllowedOrigins::None => return None,
            AllowedOrigins::Any => AllowOrigin::any(),
            AllowedOrigins::Loopback => {
                AllowOrigin::predicate(|origin: &HeaderValue, _| is_loopback_origin(origin))
            }
            AllowedOrigins::List(list) => AllowOrigin::list(
                list.iter()
                    .filter_map(|o| HeaderValue::from_str(o).ok())
                    .collect::<Vec<_>>(),
            ),
        };
        Some(
            CorsLayer::new()
                .allow_origin(origin)
                .allow_methods([
                    Method::GET,
                    Method::POST,
                    Method::PATCH,
                    Method::DELETE,
                    Method::OPTIONS,
                ])
                .allow_headers(AllowHeaders::mirror_request())
                .expose_headers([header::CONTENT_TYPE])
                .allow_credentials(self.credentials)
                .max_age(self.max_age),
        )
    }
}

/// Whether `origin` is `http(s)://` on a loopback host, any port.
fn is_loopback_origin(origin: &HeaderValue) -> bool {
    let Ok(o) = origin.to_str() else { return false };
    let rest = match o.split_once("://") {
        Some(("http" | "https", rest)) => rest,
        _ => return false,
    };
    if rest.contains('/') {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, port)) if port.is_empty() || port.starts_with(':') => h,
            _ => return false,
        }
    } else {
        rest.split(':').next().unwrap_or("")
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        for ok in [
            "http://localhost:5173",
            "http://127.0.0.1:8000",
            "https://localhost",
            "http://[::1]:3000",
        ] {
            assert!(is_loopback_origin(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in [
            "http://localhost.evil.com",
            "http://127.0.0.1.evil.com:80",
            "file://localhost",
            "null",
            "http://10.0.0.1",
            "http://[::1]x",
        ] {
            assert!(!is_loopback_origin(&HeaderValue::from_static(bad)), "{bad}");
        }
    }
}
