//! The page's files, embedded in the binary (every file of `assets/`, by `build.rs`):
//! nothing is fetched from elsewhere.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// What every asset response carries: its type, no caching across restarts (the page
/// must not be stale after an upgrade), and a policy that lets the page load only its
/// own files.
fn asset(name: &str) -> Response {
    let Some((_, content_type, body)) = FILES.iter().find(|(n, _, _)| *n == name) else {
        return (StatusCode::NOT_FOUND, "no such file").into_response();
    };
    (
        [
            (header::CONTENT_TYPE, *content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        *body,
    )
        .into_response()
}

pub(crate) async fn index() -> Response {
    asset("index.html")
}

pub(crate) async fn file(Path(name): Path<String>) -> Response {
    asset(&name)
}
