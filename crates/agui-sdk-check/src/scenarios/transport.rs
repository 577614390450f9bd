//! The scenarios about the HTTP transport: invalid input, content negotiation and
//! resumable runs.

use agui_sdk_core::encoding::Encoding;
use reqwest::header::{HeaderName, HeaderValue};

use super::chat_input;
use crate::exchange::{content_type, Ctx, Send};
use crate::report::Level;
use crate::Discovery;

/// `invalid-input`.
pub(super) async fn invalid_input(cx: &mut Ctx<'_>) -> Option<String> {
    let bodies: [(&str, &[u8]); 2] = [
        ("a body that is not JSON", b"this is not JSON {"),
        (
            "a JSON body that is not a RunAgentInput",
            br#"{"threadId":42,"messages":"none"}"#,
        ),
    ];
    let url = cx.checker.url.clone();
    for (what, body) in bodies {
        let Some(response) = cx
            .send_raw(
                reqwest::Method::POST,
                &url,
                Some(body.to_vec()),
                Encoding::Sse.content_type(),
                &[],
            )
            .await
        else {
            continue;
        };
        let status = response.status().as_u16();
        let ct = content_type(response.headers());
        if (200..300).contains(&status) {
            cx.find(
                "input/invalid-rejected",
                Level::Error,
                None,
                format!("{what} got HTTP {status} ({ct}) instead of a 4xx refusal"),
            );
            continue;
        }
        let plain = cx.plain(response).await;
        if !(400..500).contains(&status) {
            cx.find(
                "input/invalid-rejected",
                Level::Error,
                None,
                format!(
                    "{what} got HTTP {status}: the input is the client's fault, a 4xx: {}",
                    plain.body
                ),
            );
        } else if plain.body.trim().is_empty() {
            cx.find(
                "input/error-body",
                Level::Error,
                None,
                format!("{what} got HTTP {status} with an empty body: the refusal says why"),
            );
        }
    }
    None
}

/// `content-negotiation`.
pub(super) async fn negotiation(cx: &mut Ctx<'_>, discovery: &Discovery) -> Option<String> {
    let input = chat_input("Hello!");
    let sse = cx.run(&input, &Send::default()).await;
    let offered = discovery
        .capabilities
        .as_ref()
        .and_then(|c| c.transport.as_ref())
        .and_then(|t| t.http_binary)
        == Some(true);
    let mut again = chat_input("Hello!");
    again.thread_id = format!("{}-proto", input.thread_id);
    let send = Send {
        proto: true,
        ..Send::default()
    };
    let proto = cx.run(&again, &send).await?;
    match proto.encoding {
        Encoding::Proto => {
            if let Some(sse) = sse.filter(|s| s.clean) {
                if proto.clean && sse.types != proto.types {
                    cx.find(
                        "encoding/proto-matches-sse",
                        Level::Warning,
                        None,
                        format!(
                            "the same input gave other events over protobuf ({:?}) than over SSE ({:?})",
                            proto.types, sse.types
                        ),
                    );
                }
            }
        }
        Encoding::Sse if offered => cx.find(
            "transport/protobuf-offered",
            Level::Error,
            None,
            "the capabilities advertise protobuf (transport.httpBinary) but a request accepting it got SSE".to_owned(),
        ),
        Encoding::Sse => {}
    }
    None
}

/// `resumable`: the re-attach this SDK's server (and any that follows it) offers:
/// opt in with `AGUI-Resumable: 1` and an owner token, hang up, then
/// `GET {url}/runs/{runId}/events` with `Last-Event-ID` gets the rest of the run.
pub(super) async fn resumable(cx: &mut Ctx<'_>, discovery: &Discovery) -> Option<String> {
    let advertised = discovery
        .capabilities
        .as_ref()
        .and_then(|c| c.transport.as_ref())
        .and_then(|t| t.resumable)
        == Some(true);
    if !advertised {
        return Some(
            "the agent's capabilities do not advertise resumable runs (transport.resumable)"
                .to_owned(),
        );
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    let opt_in = |token: &str| -> Vec<(HeaderName, HeaderValue)> {
        let mut h = vec![(
            HeaderName::from_static("agui-resumable"),
            HeaderValue::from_static("1"),
        )];
        if let Ok(v) = HeaderValue::from_str(token) {
            h.push((HeaderName::from_static("agui-resume-token"), v));
        }
        h
    };
    let input = chat_input("Please tell me a long story.");
    let send = Send {
        stop_after: Some(2),
        headers: opt_in(&token),
        ..Send::default()
    };
    let first = cx.run(&input, &send).await?;
    if !first.clean {
        return None;
    }
    if first.last_event_id.is_empty() {
        cx.find(
            "resumable/event-ids",
            Level::Error,
            None,
            "a resumable run's SSE events carry no id: a client cannot say where to resume"
                .to_owned(),
        );
        return None;
    }
    if first.types.last().is_some_and(|t| t.is_terminal()) {
        cx.not_exercised(
            "the run ended within the two events read before the client hung up: nothing was left to re-attach to",
        );
    }
    let url = format!(
        "{}/runs/{}/events",
        cx.checker.url.trim_end_matches('/'),
        input.run_id
    );
    let mut headers = opt_in(&token);
    if let Ok(v) = HeaderValue::from_str(&first.last_event_id) {
        headers.push((HeaderName::from_static("last-event-id"), v));
    }
    let response = cx
        .send_raw(
            reqwest::Method::GET,
            &url,
            None,
            Encoding::Sse.content_type(),
            &headers,
        )
        .await?;
    cx.continue_stream(response, first, &Send::default()).await;
    None
}
