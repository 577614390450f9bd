//! Resumable runs on the client side: the options, the re-attach request, and the
//! state a stream keeps to resume (its last sequence number, its retries).

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::encoding::Encoding;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};

use super::{error_body, HttpAgent};
use crate::error::ClientError;

/// How a resumable run is resumed when its connection drops: see
/// [`HttpAgentBuilder::resumable`](super::HttpAgentBuilder::resumable).
#[derive(Clone)]
#[non_exhaustive]
pub struct ResumeOptions {
    /// Re-attach attempts in a row without receiving an event (default 10); the count
    /// starts again whenever an event arrives.
    pub max_retries: u32,
    /// The first pause before a re-attach (default 250 ms); it doubles with each
    /// failed attempt, up to [`max_backoff`](Self::max_backoff), with full jitter.
    pub initial_backoff: Duration,
    /// The longest pause (default 8 s). A `Retry-After` from the server takes the
    /// place of the backoff, up to this.
    pub max_backoff: Duration,
    /// The owner token sent as `AGUI-Resume-Token` (default: 256 random bits, one per
    /// agent). A server binds each resumable run to it.
    pub token: String,
    on_reconnect: Option<ReconnectHook>,
}

/// A callback told of each re-attach.
type ReconnectHook = Arc<dyn Fn(&Reconnect) + Send + Sync>;

impl fmt::Debug for ResumeOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumeOptions")
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("on_reconnect", &self.on_reconnect.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for ResumeOptions {
    fn default() -> Self {
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        ResumeOptions {
            max_retries: 10,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
            token,
            on_reconnect: None,
        }
    }
}

impl ResumeOptions {
    /// Sets [`max_retries`](Self::max_retries).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets [`initial_backoff`](Self::initial_backoff) and
    /// [`max_backoff`](Self::max_backoff).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Sets [`token`](Self::token) (to resume a run from another process).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = token.into();
        self
    }

    /// Calls `f` before each re-attach (to tell the user, or to count).
    pub fn on_reconnect(mut self, f: impl Fn(&Reconnect) + Send + Sync + 'static) -> Self {
        self.on_reconnect = Some(Arc::new(f));
        self
    }

    /// The backoff of re-attaches.
    fn backoff_policy(&self) -> super::endpoint::Backoff {
        super::endpoint::Backoff::new(self.initial_backoff, self.max_backoff)
    }
}

/// A re-attach about to be made: see [`ResumeOptions::on_reconnect`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Reconnect {
    /// The run.
    pub run_id: String,
    /// 1 for the first re-attach since the last event received.
    pub attempt: u32,
    /// The last event received (its sequence number).
    pub after_seq: u64,
    /// Why the stream is being re-attached.
    pub reason: String,
}

impl HttpAgent {
    /// `GET {url}/runs/{runId}/events` after `after_seq`.
    pub(super) async fn reattach(
        &self,
        run_id: String,
        after_seq: u64,
    ) -> Result<Reattached, Retry> {
        let base = self.url.trim_end_matches('/');
        let url = format!("{base}/runs/{run_id}/events");
        let mut headers = self.request_headers();
        headers.remove("agui-resumable");
        if let Ok(v) = HeaderValue::try_from(format!("{run_id}:{after_seq}")) {
            headers.insert("last-event-id", v);
        }
        let request = self.client.get(&url).headers(headers).send();
        let response = match self.response_timeout {
            Some(t) => match tokio::time::timeout(t, request).await {
                Ok(r) => r,
                Err(_) => return Err(Retry::Again(None, format!("no answer within {t:?}"))),
            },
            None => request.await,
        };
        let response = response.map_err(|e| {
            Retry::Again(
                None,
                format!("re-attach failed: {}", crate::endpoint::error_chain(&e)),
            )
        })?;
        let status = response.status().as_u16();
        let retry_after = super::endpoint::retry_after(response.headers());
        match status {
            200..=299 if status != 204 => {
                let encoding = if response
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    == Some(Encoding::Proto.content_type())
                {
                    Encoding::Proto
                } else {
                    Encoding::Sse
                };
                let first = first_seq(response.headers()).unwrap_or(after_seq.saturating_add(1));
                let body = response
                    .bytes_stream()
                    .map(|r| r.map_err(ClientError::from))
                    .boxed();
                Ok(Reattached::Body(body, encoding, first))
            }
            204 => Ok(Reattached::Finished),
            408 | 425 | 429 | 500..=599 => Err(Retry::Again(
                retry_after,
                format!("the server answered {status}"),
            )),
            _ => {
                let text = error_body(response, self.response_timeout).await;
                let json: Option<serde_json::Value> = serde_json::from_str(&text).ok();
                let code = json
                    .as_ref()
                    .and_then(|j| j.pointer("/error/code"))
                    .and_then(|c| c.as_str())
                    .map(str::to_owned);
                let message = json
                    .as_ref()
                    .and_then(|j| j.pointer("/error/message"))
                    .and_then(|c| c.as_str())
                    .map(str::to_owned)
                    .unwrap_or(text);
                Err(Retry::Never(ClientError::Resume {
                    after_seq,
                    status: Some(status),
                    code,
                    reason: format!("the server answered {status}: {message}"),
                }))
            }
        }
    }
}

/// `AGUI-First-Seq`, whose presence marks a resumable stream.
pub(super) fn first_seq(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("agui-first-seq")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// What a re-attach got.
pub(super) enum Reattached {
    /// The rest of the run: the body, its encoding, the seq of its first frame.
    Body(
        BoxStream<'static, Result<Bytes, ClientError>>,
        Encoding,
        u64,
    ),
    /// The run has ended and nothing is left after the cursor.
    Finished,
}

/// Why a re-attach failed.
pub(super) enum Retry {
    /// Worth another attempt (after at least this long, when the server said).
    Again(Option<Duration>, String),
    /// Final.
    Never(ClientError),
}

pub(super) type ReattachFuture =
    Pin<Box<dyn std::future::Future<Output = Result<Reattached, Retry>> + Send>>;

/// The resumption state of a resumable run's stream.
pub(super) struct Resumer {
    pub(super) agent: HttpAgent,
    pub(super) opts: Arc<ResumeOptions>,
    pub(super) run_id: String,
    /// The last seq delivered to the pipeline.
    pub(super) last_seq: u64,
    /// The seq of the current body's first frame (protobuf frames are counted).
    pub(super) body_first_seq: u64,
    pub(super) body_frames: u64,
    /// Failed re-attaches since the last event.
    pub(super) attempts: u32,
    pub(super) pending: Option<ReattachFuture>,
}

impl Resumer {
    /// Starts a re-attach, unless the retries are spent.
    pub(super) fn start(
        &mut self,
        reason: String,
        retry_after: Option<Duration>,
    ) -> Result<(), ClientError> {
        if self.attempts >= self.opts.max_retries {
            return Err(ClientError::Resume {
                after_seq: self.last_seq,
                status: None,
                code: None,
                reason: format!(
                    "{} re-attach attempts failed; the last: {reason}",
                    self.attempts
                ),
            });
        }
        let pause = self.opts.backoff_policy().pause(self.attempts, retry_after);
        self.attempts += 1;
        tracing::info!(run_id = %self.run_id, attempt = self.attempts, after_seq = self.last_seq, %reason, ?pause, "re-attaching");
        if let Some(f) = &self.opts.on_reconnect {
            f(&Reconnect {
                run_id: self.run_id.clone(),
                attempt: self.attempts,
                after_seq: self.last_seq,
                reason,
            });
        }
        let agent = self.agent.clone();
        let (run_id, after) = (self.run_id.clone(), self.last_seq);
        self.pending = Some(Box::pin(async move {
            tokio::time::sleep(pause).await;
            agent.reattach(run_id, after).await
        }));
        Ok(())
    }
}
