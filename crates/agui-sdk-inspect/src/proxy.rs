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
use crate::{InspectError, Inspector, NewRecording, RunEntry, Source};

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
    /// Whether requests must come from this machine (loopback `Host` and `Origin`).
    loopback_only: bool,
    /// This proxy's mark on what it forwards: a request that comes back with it has
    /// looped (an upstream that is the proxy itself, directly or through others).
    mark: Arc<str>,
}

/// The header carrying [`ProxyState::mark`].
const LOOP_HEADER: &str = "x-agui-sdk-inspect-proxy";

/// The proxy in front of `upstream` (an `http` or `https` URL; its path is a prefix of
/// every forwarded path), for front ends on this machine: a request whose `Host` is not
/// a loopback name (DNS rebinding) or whose `Origin` is not a loopback page is refused
/// with 403, and one that comes back from the upstream (the upstream is the proxy
/// itself) with 508.
pub fn router(inspector: Inspector, upstream: &str) -> Result<Router, InspectError> {
    build(inspector, upstream, true)
}

/// [`router`] for a proxy served beyond this machine (`agui inspect --public`): any
/// `Host` and `Origin` are served; the loop check stays.
pub fn public_router(inspector: Inspector, upstream: &str) -> Result<Router, InspectError> {
    build(inspector, upstream, false)
}

fn build(
    inspector: Inspector,
    upstream: &str,
    loopback_only: bool,
) -> Result<Router, InspectError> {
    let url = Inspector::check_url(upstream)?;
    let base = url.as_str().trim_end_matches('/').to_owned();
    let mark = uuid::Uuid::new_v4().simple().to_string();
    Ok(Router::new().fallback(forward).with_state(ProxyState {
        inspector,
        upstream: base.into(),
        loopback_only,
        mark: mark.into(),
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

/// Whether `host` (a `Host` header, or the authority of an `Origin`) names this
/// machine's loopback: `localhost`, `127.0.0.0/8` or `[::1]`, with any port.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn forbidden(code: &'static str, message: String) -> Response {
    tracing::warn!(%message, "inspect proxy: refused a request");
    (
        StatusCode::FORBIDDEN,
        axum::Json(json!({ "error": code, "message": message })),
    )
        .into_response()
}

/// The checks every proxied request passes: its `Host` is loopback (a DNS-rebinding page
/// reaches the proxy under its own name), its `Origin`, if any, a loopback page (a page
/// of another site cannot drive the proxy from the user's browser), and it has not
/// looped back from the upstream.
fn refuse(state: &ProxyState, headers: &HeaderMap) -> Option<Response> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if state.loopback_only && !is_loopback_host(host) {
        return Some(forbidden(
            "forbidden_host",
            format!("Host {host:?} is refused: the proxy answers loopback names only"),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN).filter(|_| state.loopback_only) {
        let text = origin.to_str().unwrap_or("");
        let authority = text
            .strip_prefix("http://")
            .or_else(|| text.strip_prefix("https://"))
            .filter(|a| !a.contains('/'));
        if !authority.is_some_and(is_loopback_host) {
            let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            return Some(forbidden(
                "forbidden_origin",
                format!("requests from {shown} are refused: only pages on this machine may use the proxy"),
            ));
        }
    }
    if headers
        .get(LOOP_HEADER)
        .is_some_and(|v| v.as_bytes() == state.mark.as_bytes())
    {
        return Some(
            (
                StatusCode::LOOP_DETECTED,
                axum::Json(json!({
                    "error": "loop_detected",
                    "message": format!("the upstream {} is this proxy itself", state.upstream),
                })),
            )
                .into_response(),
        );
    }
    None
}

async fn forward(State(state): State<ProxyState>, request: Request) -> Response {
    if let Some(refused) = refuse(&state, request.headers()) {
        return refused;
    }
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
    if let Ok(mark) = axum::http::HeaderValue::from_str(&state.mark) {
        headers.insert(HeaderName::from_static(LOOP_HEADER), mark);
    }
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
            let run = state.inspector.add_run(NewRecording {
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
