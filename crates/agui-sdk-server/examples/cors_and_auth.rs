//! Tower layers around the agent router: CORS for browser clients, and a bearer-token
//! check that answers `401` with the same JSON error body as the router.
//!
//! ```text
//! AGUI_TOKEN=secret cargo run -p agui-sdk-server --example cors_and_auth
//! curl -N -X POST http://127.0.0.1:8000/assistant -H 'authorization: Bearer secret' \
//!   -H 'accept: text/event-stream' \
//!   -H 'content-type: application/json' \
//!   -d '{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}'
//! ```
//!
//! In a crate of your own this needs, besides `agui-sdk-server` and `tokio`,
//! `tower-http = { version = "0.6", features = ["cors"] }`.

use agui_sdk_server::axum::extract::Request;
use agui_sdk_server::axum::http::{header, HeaderValue, Method, StatusCode};
use agui_sdk_server::axum::middleware::{self, Next};
use agui_sdk_server::axum::response::{IntoResponse, Response};
use agui_sdk_server::prelude::*;
use agui_sdk_server::{serve, ApiError, Shutdown};
use tower_http::cors::CorsLayer;

/// Lets a request through only with `Authorization: Bearer <token>`.
async fn require_bearer(token: String, req: Request, next: Next) -> Response {
    let expected = format!("Bearer {token}");
    let ok = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == expected);
    if ok || req.method() == Method::OPTIONS {
        next.run(req).await
    } else {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
        )
        .into_response()
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let token = std::env::var("AGUI_TOKEN").unwrap_or_else(|_| "secret".to_owned());
    let cors = CorsLayer::new()
        .allow_origin(HeaderValue::from_static("http://localhost:3000"))
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION, header::ACCEPT]);

    let assistant = agent_fn(|input, _ctx, tx| async move {
        let text = input.last_user_text().unwrap_or_default();
        tx.text(format!("You said: {text}")).await?;
        Ok(())
    });

    // `serve` triggers it on SIGINT/SIGTERM.
    let shutdown = Shutdown::new();
    let app = AgentRouter::new()
        .agent("assistant", assistant)
        .shutdown(shutdown.clone())
        .into_router()
        // Layers run outermost last: CORS answers preflights before the token check.
        .layer(middleware::from_fn(move |req, next| {
            require_bearer(token.clone(), req, next)
        }))
        .layer(cors);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    println!("listening on http://127.0.0.1:8000 (bearer token required)");
    serve(listener, app, shutdown).await
}
