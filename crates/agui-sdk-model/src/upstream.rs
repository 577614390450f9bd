//! The model endpoint: one request, retried before its first token, and its streamed
//! answer turned into events within the answer's bounds, for any provider API.

use agui_sdk_agent::{AgentError, Emitter};
use agui_sdk_client::endpoint;
use agui_sdk_core::Event;
use futures_util::StreamExt;
use serde_json::Value;

use crate::provider::{Provider, ProviderTurn, TurnResult};
use crate::sse::{Frame, SseReader};
use crate::{fail, Config};

/// Sends one request and streams its answer as events; returns what the turn made.
pub(crate) async fn model_turn<P: Provider>(
    config: &Config,
    provider: &P,
    body: &Value,
    message_id: String,
    tx: &Emitter,
) -> Result<TurnResult, AgentError> {
    let deadline = tokio::time::sleep(config.answer_deadline);
    tokio::pin!(deadline);
    let response = tokio::select! {
        r = send(config, provider, body) => r?,
        () = &mut deadline => return Err(too_slow(config)),
    };
    let mut received = 0usize;
    let mut turn = P::Turn::new(message_id);
    let mut reader = SseReader::new(config.max_event);
    let mut out = Vec::new();
    let mut bytes = response.bytes_stream();
    let mut done = false;
    let max_tool_arguments = config.max_tool_arguments;
    // One timer for the whole answer, pushed back at each piece of content, an SSE data
    // event (cheaper than a timer per read). Comments and partial events do not push it
    // back: an endpoint sending only keep-alive comments times out.
    let idle = tokio::time::sleep(config.read_timeout);
    tokio::pin!(idle);
    let failure: Option<AgentError> = loop {
        let next = tokio::select! {
            biased;
            () = &mut deadline => break Some(too_slow(config)),
            n = bytes.next() => n,
            () = &mut idle => {
                break Some(fail(
                    format!(
                        "the model sent nothing for {} ms (comments do not count)",
                        config.read_timeout.as_millis()
                    ),
                    "upstream_timeout",
                ));
            }
        };
        match next {
            Some(Ok(chunk)) => {
                received += chunk.len();
                if received > config.max_answer_bytes {
                    break Some(fail(
                        format!(
                            "the model's answer passed {} bytes",
                            config.max_answer_bytes
                        ),
                        "upstream_too_large",
                    ));
                }
                let read = reader.push(
                    &chunk,
                    &mut feed(&mut turn, &mut done, &mut out, max_tool_arguments),
                );
                match read {
                    Ok(0) => {}
                    Ok(_) => idle
                        .as_mut()
                        .reset(tokio::time::Instant::now() + config.read_timeout),
                    Err(e) => break Some(e),
                }
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e.without_url(), "the model's stream broke");
                break Some(fail(
                    "the connection to the model broke mid-answer",
                    "upstream_cut",
                ));
            }
            None => {
                if let Err(e) = reader.finish(&mut feed(
                    &mut turn,
                    &mut done,
                    &mut out,
                    max_tool_arguments,
                )) {
                    break Some(e);
                }
                // Some servers end without their end marker; a turn that said how it
                // ended (in this read or an earlier one) is whole.
                if !done && !turn.is_whole() {
                    for e in out.drain(..) {
                        tx.emit(e).await?;
                    }
                    break Some(fail("the model's answer was cut off", "upstream_cut"));
                }
                break None;
            }
        }
        for e in out.drain(..) {
            tx.emit(e).await?;
        }
        if done {
            break None;
        }
    };
    for e in out.drain(..) {
        tx.emit(e).await?;
    }
    let result = turn.finish(&mut out);
    for e in out.drain(..) {
        tx.emit(e).await?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// Hands each event to the turn, within the bound on a call's arguments; past the
/// stream's end nothing more is read.
fn feed<'a, T: ProviderTurn>(
    turn: &'a mut T,
    done: &'a mut bool,
    out: &'a mut Vec<Event>,
    max_tool_arguments: usize,
) -> impl FnMut(Frame<'_>) -> Result<(), AgentError> + 'a {
    move |frame| {
        if *done {
            return Ok(());
        }
        *done = turn.push(frame, out)?;
        if turn.longest_arguments() > max_tool_arguments {
            return Err(fail(
                format!("a tool call's arguments passed {max_tool_arguments} bytes"),
                "tool_arguments_too_large",
            ));
        }
        Ok(())
    }
}

/// POSTs the request, retrying `429`/`5xx` and failed connections (before any token).
async fn send<P: Provider>(
    config: &Config,
    provider: &P,
    body: &Value,
) -> Result<reqwest::Response, AgentError> {
    let url = provider.url(&config.base_url);
    let mut attempt = 0u32;
    loop {
        let req = provider.headers(
            config
                .client
                .post(&url)
                .header("accept", "text/event-stream")
                .json(body),
            config.api_key.as_deref(),
        );
        let sent = tokio::time::timeout(config.read_timeout, req.send()).await;
        let (retryable, retry_after, why) = match sent {
            Err(_) => (
                true,
                None,
                format!("no answer within {} ms", config.read_timeout.as_millis()),
            ),
            Ok(Err(e)) => (
                e.is_connect() || e.is_timeout(),
                None,
                format!("cannot reach the model endpoint: {}", e.without_url()),
            ),
            Ok(Ok(res)) if res.status().is_success() => return Ok(res),
            Ok(Ok(res)) if res.status().is_redirection() => {
                return Err(redirected(&url, &res));
            }
            Ok(Ok(res)) => {
                let status = res.status().as_u16();
                let retry_after = endpoint::retry_after(res.headers());
                // Read as the client reads an error answer: bounded in size, and in time
                // as a whole (a body trickling a byte at a time cannot hold the run).
                let text = endpoint::error_body(
                    res,
                    endpoint::MAX_ERROR_BODY,
                    Some(config.error_body_timeout),
                )
                .await;
                let shown: String = text.text.chars().take(500).collect();
                tracing::warn!(status, body = %agui_sdk_core::Escaped(&shown), "the model endpoint refused the request");
                let retryable = status == 429 || (500..=599).contains(&status);
                if !retryable || attempt >= config.retries {
                    // The URL called, as it may be shown (no userinfo, no query).
                    return Err(fail(
                        format!(
                            "the model endpoint failed: POST {} answered {status}",
                            shown_url(&url)
                        ),
                        "upstream_error",
                    ));
                }
                (true, retry_after, format!("HTTP {status}"))
            }
        };
        if !retryable || attempt >= config.retries {
            tracing::warn!(error = %why, "the model endpoint failed");
            return Err(fail(
                format!(
                    "the model endpoint could not be reached: POST {}",
                    shown_url(&url)
                ),
                "upstream_error",
            ));
        }
        let pause =
            endpoint::Backoff::new(config.backoff, config.max_backoff).pause(attempt, retry_after);
        attempt += 1;
        tracing::info!(attempt, ?pause, reason = %why, "retrying the model request");
        tokio::time::sleep(pause).await;
    }
}

/// The run's failure for a `3xx` answer, which is never followed (the key would go
/// along): it names the URL called and where it pointed.
fn redirected(url: &str, res: &reqwest::Response) -> AgentError {
    let status = res.status().as_u16();
    let to = match res
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
    {
        Some(location) => match reqwest::Url::parse(url).and_then(|base| base.join(location)) {
            Ok(target) => shown_url(target.as_str()),
            Err(_) => format!("{:?}", location.chars().take(200).collect::<String>()),
        },
        None => "nowhere (no Location)".to_owned(),
    };
    let called = shown_url(url);
    tracing::warn!(status, url = %called, to = %to, "the model endpoint redirected");
    fail(
        format!(
            "the model endpoint {called} redirected (HTTP {status}) to {to}: redirects are not followed, so that the key goes to the configured endpoint only; configure the URL it redirects to"
        ),
        "upstream_error",
    )
}

/// `url` fit to show in a run's error: its userinfo redacted, its query and fragment
/// left out (they may hold a key), at most 200 characters.
fn shown_url(url: &str) -> String {
    let redacted = endpoint::redact_url(url);
    let end = redacted.find(['?', '#']).unwrap_or(redacted.len());
    let mut shown: String = redacted[..end].chars().take(200).collect();
    if end < redacted.len() {
        shown.push_str("?…");
    } else if shown.len() < end {
        shown.push('…');
    }
    shown
}

fn too_slow(config: &Config) -> AgentError {
    fail(
        format!(
            "the model's answer took longer than {} s",
            config.answer_deadline.as_secs_f64()
        ),
        "upstream_timeout",
    )
}
