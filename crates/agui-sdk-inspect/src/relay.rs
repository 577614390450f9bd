//! The relay: the page asks, this process POSTs the input to the agent and records the
//! answer as it arrives (so the agent needs no CORS for the page).

use std::sync::Arc;

use agui_sdk_client::endpoint::error_body;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::Value;
use tracing::Instrument;

use crate::record::End;
use crate::{InspectError, Inspector, NewRecording, RunEntry, Source};
use agui_sdk_core::encoding::Framing;

/// The media type of length-prefixed protobuf events.
pub(crate) const PROTO_TYPE: &str = "application/vnd.ag-ui.event+proto";

/// A run the page asked for.
pub(crate) struct RelayRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub input: Value,
    pub format: Framing,
}

/// Which framing a response's `Content-Type` announces, if it is an event stream.
pub(crate) fn framing_of(content_type: Option<&str>) -> Option<Framing> {
    let essence = content_type?
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "text/event-stream" => Some(Framing::Sse),
        PROTO_TYPE => Some(Framing::Proto),
        _ => None,
    }
}

/// Starts the run: checks the request, registers the run and spawns the task that
/// reads the agent's answer.
pub(crate) fn start(
    inspector: &Inspector,
    req: RelayRequest,
) -> Result<Arc<RunEntry>, InspectError> {
    let url = Inspector::check_url(&req.url)?;
    let mut headers = HeaderMap::new();
    for (name, value) in &req.headers {
        let n = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| InspectError::BadHeader(format!("header name {name:?} is not valid")))?;
        let v = HeaderValue::from_str(value.trim()).map_err(|_| {
            InspectError::BadHeader(format!("header {name:?} has a value that is not valid"))
        })?;
        headers.insert(n, v);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        ACCEPT,
        HeaderValue::from_static(match req.format {
            Framing::Proto => PROTO_TYPE,
            _ => "text/event-stream",
        }),
    );
    let mut body = Vec::new();
    agui_sdk_core::wire::write_canonical(&req.input, &mut body);
    let entry = inspector.add_run(NewRecording {
        source: Source::Relay,
        label: format!("POST {}", url.path()),
        url: Some(url.to_string()),
        format: req.format,
        input: Some(req.input),
    })?;
    let request = inspector.http().post(url).headers(headers).body(body);
    let run = entry.clone();
    let max_error_body = inspector.limits().max_error_body;
    let span = tracing::info_span!("inspect_relay", run = entry.id());
    tokio::spawn(
        async move {
            let end = tokio::select! {
                end = relay(&run, request, max_error_body) => end,
                () = run.cancelled().cancelled() => End::Stopped,
            };
            tracing::debug!(?end, "relay ended");
            run.finish(end);
        }
        .instrument(span),
    );
    Ok(entry)
}

async fn relay(run: &RunEntry, request: reqwest::RequestBuilder, max_error_body: usize) -> End {
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => return End::Failed(format!("the request failed: {}", error_chain(&e))),
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if !status.is_success() {
        let body = error_body(response, max_error_body, Some(ERROR_BODY_TIME)).await;
        return End::Failed(format!("the agent answered HTTP {status}: {body}"));
    }
    let Some(format) = framing_of(content_type.as_deref()) else {
        let body = error_body(response, 2048, Some(ERROR_BODY_TIME)).await;
        return End::Failed(format!(
            "the agent answered Content-Type {}, not an event stream: {body}",
            content_type.as_deref().unwrap_or("(none)")
        ));
    };
    run.set_format(format);
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        match chunk {
            Ok(bytes) => {
                if !run.push(&bytes) {
                    return End::Completed;
                }
            }
            Err(e) => {
                return End::Failed(format!(
                    "the connection failed after {} events: {}",
                    run.recording().rows().len(),
                    error_chain(&e)
                ))
            }
        }
    }
    End::Completed
}

/// The longest wait for an error answer's body.
const ERROR_BODY_TIME: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) use agui_sdk_client::endpoint::error_chain;
