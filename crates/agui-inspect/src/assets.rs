//! The page's files, embedded in the binary: nothing is fetched from elsewhere.

use axum::http::header;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");

/// What every asset response carries: its type, no caching across restarts (the
/// token changes; the page must not be stale), and a policy that lets the page load
/// only its own files.
fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
}

pub(crate) async fn index() -> impl IntoResponse {
    asset("text/html; charset=utf-8", INDEX)
}

pub(crate) async fn script() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

pub(crate) async fn style() -> impl IntoResponse {
    asset("text/css; charset=utf-8", STYLE)
}
