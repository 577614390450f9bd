//! The recording proxy: a front end talks to it as to its agent; every request is
//! forwarded to the upstream unchanged (method, path, query, end-to-end headers, body)
//! and the answer comes back unchanged, byte for byte, as it arrives. Each answer that
//! is an event stream is also recorded as a run the page shows live.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::{Stream, StreamExt};
use serde_json::{json, Value};

use crate::record::End;
use crate::relay::{error_chain, framing_of};
use crate::{InspectError, Inspector, NewRun, RunEntry, Source};

/// Headers that belong to one connection, not to the message (RFC 9110 §7.6.1), and
/// `Host`, which names the proxy: neither is forwarded.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

#[derive(Clone)]
struct ProxyState {
    inspector: Inspector,
    upstream: Arc<str>,
}

/// The proxy in front of `upstream` (an `http` or `https` URL; its path is a prefix of
/// every forwarded path).
pub fn router(inspector: Inspector, upstream: &str) -> Result<Router, InspectError> {
    let url = Inspector::check_url(upstream)?;
    let base = url.as_str().trim_end_matches('/').to_owned();
    Ok(Router::new().fallback(forward).with_state(ProxyState {
        inspector,
        upstream: base.into(),
    }))
}

/// The end-to-end headers of `from`: without the hop-by-hop ones, those the
/// `Connection` header names, and `Host`.
fn end_to_end(from: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = from
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::with_capacity(from.len());
    for (name, value) in from {
        if HOP_BY_HOP.contains(name)
            || name == header::HOST
            || named.iter().any(|n| n == name.as_str())
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

fn bad_gateway(message: String) -> Response {
    (
        StatusCode::BAD_GATEWAY,
        axum::Json(json!({ "error": "bad_gateway", "message": message })),
    )
        .into_response()
}

async fn forward(State(state): State<ProxyState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let limit = state.inspector.limits().max_body;
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(e) => return (
            StatusCode::PAYLOAD_TOO_LARGE,
            axum::Json(json!({
                "error": "body_too_large",
                "message": format!("the proxy reads request bodies of at most {limit} bytes: {e}"),
            })),
        )
            .into_response(),
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{}", state.upstream, path);
    let mut headers = end_to_end(&parts.headers);
    headers.remove(header::CONTENT_LENGTH);
    let sent = state
        .inspector
        .http()
        .request(parts.method.clone(), &url)
        .headers(headers)
        .body(body.clone())
        .send()
        .await;
    let response = match sent {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(%url, error = %error_chain(&e), "inspect proxy: upstream failed");
            return bad_gateway(format!("{url}: {}", error_chain(&e)));
        }
    };
    let status = response.status();
    let headers = end_to_end(response.headers());
    let format = framing_of(
        response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    let run = match format {
        Some(format) if status.is_success() => {
            let input = serde_json::from_slice::<Value>(&body).ok();
            let run = state.inspector.add_run(NewRun {
                source: Source::Proxy,
                label: format!("{} {}", parts.method, parts.uri.path()),
                url: Some(url.clone()),
                format,
                input,
            });
            match run {
                Ok(run) => {
                    run.set_format(format);
                    Some(run)
                }
                Err(e) => {
                    // Forwarding goes on; only the recording is refused.
                    tracing::warn!(%url, error = %e, "inspect proxy: not recording this run");
                    None
                }
            }
        }
        _ => None,
    };
    let stream = tee(response.bytes_stream(), run);
    let mut out = Response::new(Body::from_stream(stream));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}

/// Ends a proxied run when the front end goes away before the body ended.
struct Recorder {
    run: Arc<RunEntry>,
    recording: bool,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if !self.run.is_done() {
            self.run.finish(End::Failed(
                "the front end closed the connection before the stream ended".into(),
            ));
        }
    }
}

/// Forwards the upstream's chunks as they are, recording a copy when this is a run.
fn tee(
    upstream: impl Stream<Item = reqwest::Result<Bytes>> + Send + Unpin + 'static,
    run: Option<Arc<RunEntry>>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let recorder = run.map(|run| Recorder {
        run,
        recording: true,
    });
    futures_util::stream::unfold(
        (upstream, recorder),
        |(mut upstream, mut recorder)| async move {
            match upstream.next().await {
                Some(Ok(bytes)) => {
                    if let Some(r) = recorder.as_mut().filter(|r| r.recording) {
                        // A run past the inspector's limits is still forwarded whole.
                        r.recording = r.run.push(&bytes);
                    }
                    Some((Ok(bytes), (upstream, recorder)))
                }
                Some(Err(e)) => {
                    let why = format!("the upstream connection failed: {}", error_chain(&e));
                    if let Some(r) = &recorder {
                        r.run.finish(End::Failed(why.clone()));
                    }
                    Some((Err(std::io::Error::other(why)), (upstream, None)))
                }
                None => {
                    if let Some(r) = &recorder {
                        r.run.finish(End::Completed);
                    }
                    None
                }
            }
        },
    )
}
