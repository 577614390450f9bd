//! The HTTP transport: POST a run's input, stream the decoded events back.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agui_core::encoding::{DecoderLimits, Encoding, EventDecoder, RawBody};
use agui_core::semantics::{InboundConfig, InboundWarning, Intake};
use agui_core::{Event, RunAgentInput};
use bytes::Bytes;
use futures_core::Stream;
use futures_util::stream::{AbortHandle, Abortable, BoxStream};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use tracing::Instrument;

use crate::error::ClientError;

/// Default [`HttpAgentBuilder::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`HttpAgentBuilder::response_timeout`].
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`HttpAgentBuilder::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of an error response's body is kept (the rest is not read).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// Reads at most [`MAX_ERROR_BODY`] bytes of `response`'s body, within `timeout`.
async fn error_body(response: reqwest::Response, timeout: Option<Duration>) -> String {
    let read = async {
        let mut out = Vec::new();
        let mut body = response.bytes_stream();
        while let Some(Ok(chunk)) = body.next().await {
            let room = MAX_ERROR_BODY - out.len();
            out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if out.len() >= MAX_ERROR_BODY {
                break;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    match timeout {
        Some(t) => tokio::time::timeout(t, read).await.unwrap_or_default(),
        None => read.await,
    }
}

/// Warnings raised while a stream was taken in, waiting to be read.
pub(crate) type WarningSink = Arc<WarningQueue>;

/// A queue of warnings shared between a stream's intake and its reader. Reading an
/// empty queue takes no lock (the common case: one check per event).
#[derive(Debug, Default)]
pub(crate) struct WarningQueue {
    queued: std::sync::atomic::AtomicBool,
    items: Mutex<Vec<InboundWarning>>,
}

/// Warnings kept unread at most: a stream that nobody reads the warnings of (a hostile
/// one, full of unknown keys) cannot grow memory through them. Past it, warnings are
/// only logged through `tracing` (they already were when raised).
pub(crate) const MAX_QUEUED_WARNINGS: usize = 1024;

impl WarningQueue {
    /// Moves `warnings` into the queue (those past [`MAX_QUEUED_WARNINGS`] unread are
    /// dropped, and said so once in the log).
    pub(crate) fn append(&self, warnings: &mut Vec<InboundWarning>) {
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_QUEUED_WARNINGS.saturating_sub(items.len());
        if warnings.len() > room {
            if room > 0 || items.len() == MAX_QUEUED_WARNINGS {
                tracing::warn!(
                    limit = MAX_QUEUED_WARNINGS,
                    "too many unread inbound warnings: further ones are only logged"
                );
            }
            warnings.truncate(room);
        }
        items.append(warnings);
        self.queued
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Moves the queued warnings into `out`.
    pub(crate) fn drain_into(&self, out: &mut Vec<InboundWarning>) {
        if !self.queued.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        out.append(&mut items);
        self.queued
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

/// A run's events as they arrive. Dropping it cancels the request; so does
/// [`EventStream::abort`].
///
/// A stream from [`HttpAgent`] has been through the first half of the inbound pipeline
/// ([`Intake`]: compatibility translation, enforcement, chunk expansion when asked);
/// what that stage stripped or dropped is kept for [`take_warnings`](Self::take_warnings).
pub struct EventStream {
    inner: BoxStream<'static, Result<Event, ClientError>>,
    abort: Option<AbortHandle>,
    warnings: Option<WarningSink>,
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

impl EventStream {
    /// Wraps any stream of events (used by middleware and tests).
    pub fn from_stream(s: impl Stream<Item = Result<Event, ClientError>> + Send + 'static) -> Self {
        EventStream {
            inner: s.boxed(),
            abort: None,
            warnings: None,
        }
    }

    /// The warnings raised so far by the stream's intake (what enforcement stripped or
    /// dropped, what was translated), removed from the stream. At most 1,024 are kept
    /// unread; later ones are only logged through `tracing`. Empty for a stream that
    /// did not go through an intake ([`from_stream`](Self::from_stream)).
    pub fn take_warnings(&self) -> Vec<InboundWarning> {
        let mut out = Vec::new();
        if let Some(w) = &self.warnings {
            w.drain_into(&mut out);
        }
        out
    }

    /// Whether the stream went through an [`Intake`] (a stream from [`HttpAgent`] did).
    pub fn has_intake(&self) -> bool {
        self.warnings.is_some()
    }

    pub(crate) fn with_intake(mut self, sink: WarningSink) -> Self {
        self.warnings = Some(sink);
        self
    }

    pub(crate) fn warning_sink(&self) -> Option<WarningSink> {
        self.warnings.clone()
    }

    /// Decodes a response body given as a stream of byte chunks (split anywhere), in
    /// `encoding`, through an [`Intake`] configured by `inbound`: what [`HttpAgent`] does
    /// with an HTTP body, for a transport of your own (a recorded file, another HTTP
    /// stack, a message queue).
    pub fn from_body<S, E>(
        body: S,
        encoding: Encoding,
        limits: DecoderLimits,
        inbound: InboundConfig,
    ) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<ClientError>,
    {
        let sink: WarningSink = Arc::default();
        let body = BodyStream::new(
            body.map(|r| r.map_err(Into::into)).boxed(),
            EventDecoder::with_limits(encoding, limits),
            Intake::new(inbound),
            sink.clone(),
            None,
        );
        EventStream::from_stream(body).with_intake(sink)
    }

    pub(crate) fn from_stream_with_abort(
        s: impl Stream<Item = Result<Event, ClientError>> + Send + 'static,
        abort: Option<AbortHandle>,
    ) -> Self {
        EventStream {
            inner: s.boxed(),
            abort,
            warnings: None,
        }
    }

    /// A stream of already known events.
    pub fn from_events(events: Vec<Event>) -> Self {
        Self::from_stream(futures_util::stream::iter(events.into_iter().map(Ok)))
    }

    /// Cancels the request: the stream ends after the events already yielded.
    pub fn abort(&self) {
        if let Some(a) = &self.abort {
            a.abort();
        }
    }

    /// A handle that cancels the request from elsewhere.
    pub fn abort_handle(&self) -> Option<AbortHandle> {
        self.abort.clone()
    }
}

impl Stream for EventStream {
    type Item = Result<Event, ClientError>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// Builds an [`HttpAgent`].
#[derive(Debug, Clone)]
pub struct HttpAgentBuilder {
    url: String,
    headers: HeaderMap,
    encoding: Encoding,
    connect_timeout: Option<Duration>,
    response_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    limits: DecoderLimits,
    client: Option<reqwest::Client>,
    error: Option<String>,
    resume: Option<ResumeOptions>,
}

/// How a resumable run is resumed when its connection drops: see
/// [`HttpAgentBuilder::resumable`].
#[derive(Clone)]
#[non_exhaustive]
pub struct ResumeOptions {
    /// Re-attach attempts in a row without receiving an event (default 10); the count
    /// starts again whenever an event arrives.
    pub max_retries: u32,
    /// The first pause before a re-attach (default 250 ms); it doubles with each
    /// failed attempt, up to [`max_backoff`](Self::max_backoff), with full jitter.
    pub initial_backoff: Duration,
    /// The longest pause (default 8 s). A `Retry-After` from the server is honoured.
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

    /// The pause before attempt `attempt` (0-based): full jitter over an exponential
    /// ceiling.
    fn backoff_for(&self, attempt: u32) -> Duration {
        let ceiling = self
            .initial_backoff
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_backoff);
        let r = (uuid::Uuid::new_v4().as_u128() & 0xffff_ffff) as f64 / u32::MAX as f64;
        ceiling.mul_f64(r)
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

impl HttpAgentBuilder {
    /// Makes runs resumable: each request asks for it (`AGUI-Resumable: 1`, with the
    /// owner token), and when a server answers with a resumable stream whose
    /// connection drops, fails or stalls, the stream re-attaches
    /// (`GET {url}/runs/{runId}/events` with `Last-Event-ID`) and goes on, every event
    /// delivered exactly once. A run that cannot be resumed ends with
    /// [`ClientError::Resume`]. Servers without resumable runs answer as before.
    pub fn resumable(mut self, options: ResumeOptions) -> Self {
        self.resume = Some(options);
        self
    }

    /// Adds a request header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        match (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            (Ok(n), Ok(v)) => {
                self.headers.append(n, v);
            }
            _ => self.error = Some(format!("invalid header {name:?}")),
        }
        self
    }

    /// Sends `Authorization: Bearer <token>`.
    pub fn bearer_token(mut self, token: &str) -> Self {
        match HeaderValue::try_from(format!("Bearer {token}")) {
            Ok(mut v) => {
                v.set_sensitive(true);
                self.headers.insert(AUTHORIZATION, v);
            }
            Err(_) => self.error = Some("invalid bearer token".into()),
        }
        self
    }

    /// The encoding to ask for (SSE by default). The response is decoded by its own
    /// content type whatever was asked.
    pub fn encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// Limit for establishing the connection (default 10 s; zero: none).
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = (!t.is_zero()).then_some(t);
        self
    }

    /// Limit for the response headers to arrive (default 60 s; zero: none).
    pub fn response_timeout(mut self, t: Duration) -> Self {
        self.response_timeout = (!t.is_zero()).then_some(t);
        self
    }

    /// Limit for the gap between two events (default 5 minutes; zero: none). A stalled
    /// stream fails with [`ClientError::Timeout`] (a resumable one re-attaches);
    /// keep-alive comments do not count as events, so a server sending nothing else
    /// stalls too.
    pub fn idle_timeout(mut self, t: Duration) -> Self {
        self.idle_timeout = (!t.is_zero()).then_some(t);
        self
    }

    /// Decoder limits (maximum event size).
    pub fn limits(mut self, limits: DecoderLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Uses this `reqwest` client (connection pool, proxies, TLS settings).
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Builds the agent.
    pub fn build(self) -> Result<HttpAgent, ClientError> {
        if let Some(e) = self.error {
            return Err(ClientError::InvalidInput(e));
        }
        let client = match self.client {
            Some(c) => c,
            None => {
                let mut b = reqwest::Client::builder();
                if let Some(t) = self.connect_timeout {
                    b = b.connect_timeout(t);
                }
                b.build()?
            }
        };
        Ok(HttpAgent {
            client,
            url: self.url,
            headers: self.headers,
            encoding: self.encoding,
            response_timeout: self.response_timeout,
            idle_timeout: self.idle_timeout,
            limits: self.limits,
            resume: self.resume.map(Arc::new),
        })
    }
}

/// An AG-UI agent behind an HTTP endpoint.
///
/// ```no_run
/// # async fn demo() -> Result<(), agui_client::ClientError> {
/// use agui_client::HttpAgent;
/// use agui_core::{Message, RunAgentInput};
/// use futures_util::StreamExt;
///
/// let agent = HttpAgent::builder("http://127.0.0.1:8000/agentic_chat").build()?;
/// let input = RunAgentInput::new("thread-1", "run-1", vec![Message::user("u1", "Hi")]);
/// let mut events = agent.run(&input);
/// while let Some(event) = events.next().await {
///     println!("{}", event?.event_type());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct HttpAgent {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    encoding: Encoding,
    response_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    limits: DecoderLimits,
    resume: Option<Arc<ResumeOptions>>,
}

impl HttpAgent {
    /// A builder for an agent at `url`.
    pub fn builder(url: impl Into<String>) -> HttpAgentBuilder {
        HttpAgentBuilder {
            url: url.into(),
            headers: HeaderMap::new(),
            encoding: Encoding::Sse,
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            response_timeout: Some(DEFAULT_RESPONSE_TIMEOUT),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            limits: DecoderLimits::default(),
            client: None,
            error: None,
            resume: None,
        }
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends a run and returns its events as they arrive, through the intake half of the
    /// inbound pipeline with its defaults except chunk expansion (the events are those
    /// the agent sent, translated and enforced). The request is sent when the stream is
    /// first polled. A non-2xx answer, a malformed stream, a stream that ends without
    /// `RUN_FINISHED`/`RUN_ERROR`, and timeouts come out as errors, after the events that
    /// preceded them. What enforcement stripped is in
    /// [`EventStream::take_warnings`].
    pub fn run(&self, input: &RunAgentInput) -> EventStream {
        self.run_with(input, InboundConfig::default().expand_chunks(false))
    }

    /// As [`run`](Self::run), with the intake configured by `inbound` (its
    /// `verify` setting is for the caller: verification is the next stage).
    pub fn run_with(&self, input: &RunAgentInput, inbound: InboundConfig) -> EventStream {
        let sink: WarningSink = Arc::default();
        let body_sink = sink.clone();
        let span = tracing::info_span!("agui.client.run", url = %self.url, thread_id = %input.thread_id, run_id = %input.run_id);
        let body = serde_json::to_vec(input);
        let this = self.clone();
        let run_id = input.run_id.clone();
        let stream = futures_util::stream::once(
            async move {
                let body = body.map_err(|e| ClientError::InvalidInput(e.to_string()))?;
                this.send(body, run_id, Intake::new(inbound), body_sink)
                    .await
            }
            .instrument(span.clone()),
        )
        .flat_map(move |res| match res {
            Ok(body) => body.instrument_stream(span.clone()),
            Err(e) => futures_util::stream::iter(vec![Err(e)]).boxed(),
        });
        let (abortable, handle) = futures_util::stream::abortable(stream);
        EventStream {
            inner: abortable_boxed(abortable),
            abort: Some(handle),
            warnings: Some(sink),
        }
    }

    /// The request headers of this agent, with the resume opt-in when configured.
    fn request_headers(&self) -> HeaderMap {
        let mut headers = self.headers.clone();
        headers.insert(
            ACCEPT,
            HeaderValue::from_static(self.encoding.content_type()),
        );
        if let Some(r) = &self.resume {
            headers.insert("agui-resumable", HeaderValue::from_static("1"));
            if let Ok(mut v) = HeaderValue::try_from(r.token.as_str()) {
                v.set_sensitive(true);
                headers.insert("agui-resume-token", v);
            }
        }
        headers
    }

    async fn send(
        &self,
        body: Vec<u8>,
        run_id: String,
        intake: Intake,
        warnings: WarningSink,
    ) -> Result<BodyStream, ClientError> {
        let mut headers = self.request_headers();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let request = self
            .client
            .post(&self.url)
            .headers(headers)
            .body(body)
            .send();
        let response = match self.response_timeout {
            Some(t) => {
                tokio::time::timeout(t, request)
                    .await
                    .map_err(|_| ClientError::Timeout {
                        after: t,
                        waiting_for: "the response",
                    })??
            }
            None => request.await?,
        };
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if !status.is_success() {
            let text = error_body(response, self.response_timeout).await;
            let json = if content_type.contains("application/json") {
                serde_json::from_str(&text).ok()
            } else {
                None
            };
            return Err(ClientError::Http {
                status: status.as_u16(),
                body: text,
                json,
            });
        }
        // As the reference client: protobuf only for exactly its media type. Unlike it,
        // a body that says it is something else (an HTML page) is not read as SSE.
        let encoding = if content_type == Encoding::Proto.content_type() {
            Encoding::Proto
        } else if content_type.is_empty()
            || content_type
                .split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
        {
            Encoding::Sse
        } else {
            return Err(ClientError::ContentType { content_type });
        };
        tracing::debug!(%status, ?encoding, "response");
        let first_seq = first_seq(response.headers());
        let body = response
            .bytes_stream()
            .map(|r| r.map_err(ClientError::from))
            .boxed();
        let mut stream = BodyStream::new(
            body,
            EventDecoder::with_limits(encoding, self.limits),
            intake,
            warnings,
            self.idle_timeout,
        );
        stream.limits = self.limits;
        if let (Some(opts), Some(first)) = (&self.resume, first_seq) {
            tracing::debug!(first, "the run is resumable");
            stream.resume = Some(Box::new(Resumer {
                agent: self.clone(),
                opts: opts.clone(),
                run_id,
                last_seq: first.saturating_sub(1),
                body_first_seq: first,
                body_frames: 0,
                attempts: 0,
                pending: None,
            }));
        }
        Ok(stream)
    }

    /// `GET {url}/runs/{runId}/events` after `after_seq`.
    async fn reattach(&self, run_id: String, after_seq: u64) -> Result<Reattached, Retry> {
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
                format!("re-attach failed: {}", crate::error::chain(&e)),
            )
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
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
                let first = first_seq(response.headers()).unwrap_or(after_seq + 1);
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
fn first_seq(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("agui-first-seq")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// What a re-attach got.
enum Reattached {
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
enum Retry {
    /// Worth another attempt (after at least this long, when the server said).
    Again(Option<Duration>, String),
    /// Final.
    Never(ClientError),
}

type ReattachFuture = Pin<Box<dyn std::future::Future<Output = Result<Reattached, Retry>> + Send>>;

/// The resumption state of a resumable run's stream.
struct Resumer {
    agent: HttpAgent,
    opts: Arc<ResumeOptions>,
    run_id: String,
    /// The last seq delivered to the pipeline.
    last_seq: u64,
    /// The seq of the current body's first frame (protobuf frames are counted).
    body_first_seq: u64,
    body_frames: u64,
    /// Failed re-attaches since the last event.
    attempts: u32,
    pending: Option<ReattachFuture>,
}

impl Resumer {
    /// Starts a re-attach, unless the retries are spent.
    fn start(&mut self, reason: String, retry_after: Option<Duration>) -> Result<(), ClientError> {
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
        let pause = self
            .opts
            .backoff_for(self.attempts)
            .max(retry_after.unwrap_or_default());
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

impl BodyStream {
    fn new(
        body: BoxStream<'static, Result<Bytes, ClientError>>,
        decoder: EventDecoder,
        intake: Intake,
        warnings: WarningSink,
        idle_timeout: Option<Duration>,
    ) -> Self {
        let decoder_limits = DecoderLimits::default();
        BodyStream {
            body,
            limits: decoder_limits,
            decoder,
            intake,
            ready: VecDeque::new(),
            scratch: Vec::new(),
            new_warnings: Vec::new(),
            warnings,
            pending_error: None,
            idle_timeout,
            idle: None,
            span: tracing::Span::none(),
            events: 0,
            terminal: false,
            finished: false,
            done: false,
            resume: None,
        }
    }
}

fn abortable_boxed<S>(s: Abortable<S>) -> BoxStream<'static, Result<Event, ClientError>>
where
    S: Stream<Item = Result<Event, ClientError>> + Send + 'static,
{
    s.boxed()
}

/// The body of a 2xx response being decoded.
struct BodyStream {
    body: BoxStream<'static, Result<Bytes, ClientError>>,
    decoder: EventDecoder,
    /// The first half of the inbound pipeline.
    intake: Intake,
    /// Events the intake produced and not yet yielded.
    ready: VecDeque<Event>,
    scratch: Vec<Event>,
    new_warnings: Vec<InboundWarning>,
    warnings: WarningSink,
    pending_error: Option<ClientError>,
    idle_timeout: Option<Duration>,
    /// The decoder limits (a re-attached body gets a fresh decoder).
    limits: DecoderLimits,
    /// The idle timer, armed while waiting for bytes.
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    span: tracing::Span,
    events: u64,
    terminal: bool,
    finished: bool,
    done: bool,
    /// Set when the run is resumable.
    resume: Option<Box<Resumer>>,
}

impl BodyStream {
    fn instrument_stream(
        mut self,
        span: tracing::Span,
    ) -> BoxStream<'static, Result<Event, ClientError>> {
        self.span = span;
        self.boxed()
    }

    /// Counts a delivered event and tracks whether the run is over.
    fn deliver(&mut self, event: Event) -> Result<Event, ClientError> {
        self.events += 1;
        match &event {
            Event::RunFinished(_) | Event::RunError(_) => self.terminal = true,
            Event::RunStarted(_) => self.terminal = false,
            _ => {}
        }
        Ok(event)
    }

    /// The next item that the bytes already received give, without I/O; `None` when
    /// more bytes are needed (or the body has ended and everything was delivered).
    fn next_buffered(&mut self) -> Option<Result<Event, ClientError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(self.deliver(event));
            }
            if let Some(e) = self.pending_error.take() {
                self.done = true;
                return Some(Err(e));
            }
            let raw = match self.decoder.next_raw()? {
                Ok(raw) => raw,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            };
            let offset = raw.offset;
            if let Some(r) = self.resume.as_deref_mut() {
                // The frame's sequence number: the SSE id, or the protobuf frame count.
                let seq = if raw.last_event_id.is_empty() {
                    r.body_first_seq + r.body_frames
                } else {
                    match raw.last_event_id.rsplit_once(':') {
                        Some((run, seq)) if run == r.run_id => match seq.parse::<u64>() {
                            Ok(n) => n,
                            Err(_) => r.last_seq + 1,
                        },
                        _ => r.last_seq + 1,
                    }
                };
                r.body_frames += 1;
                if seq <= r.last_seq {
                    // Already delivered before the connection dropped.
                    continue;
                }
                if seq != r.last_seq + 1 {
                    self.done = true;
                    return Some(Err(ClientError::Resume {
                        after_seq: r.last_seq,
                        status: None,
                        code: Some("gap".into()),
                        reason: format!("the stream skipped from seq {} to {seq}", r.last_seq),
                    }));
                }
                r.last_seq = seq;
                r.attempts = 0;
            }
            let taken = match raw.body {
                RawBody::Json(data) => {
                    self.intake
                        .push_json(data, &mut self.scratch, &mut self.new_warnings)
                }
                RawBody::Event(event) => {
                    self.intake
                        .push_event(event, &mut self.scratch, &mut self.new_warnings)
                }
            };
            if !self.new_warnings.is_empty() {
                self.warnings.append(&mut self.new_warnings);
            }
            if let Err(source) = taken {
                // Delivered after what the frame produced before the failure.
                self.pending_error = Some(ClientError::Inbound {
                    byte_offset: Some(offset),
                    source,
                });
            }
            // The common case, one frame one event, skips the queue.
            if self.scratch.len() == 1 && self.pending_error.is_none() {
                if let Some(event) = self.scratch.pop() {
                    return Some(self.deliver(event));
                }
            }
            self.ready.extend(self.scratch.drain(..));
        }
    }
}

impl Stream for BodyStream {
    type Item = Result<Event, ClientError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let span = this.span.clone();
        let _entered = span.enter();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(item) = this.next_buffered() {
                // The idle limit counts from the last event: a server sending only
                // comments is as stalled as a silent one.
                this.idle = None;
                return Poll::Ready(Some(item));
            }
            // A re-attach in flight.
            if let Some(r) = this.resume.as_deref_mut() {
                if let Some(fut) = r.pending.as_mut() {
                    match fut.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(result) => {
                            r.pending = None;
                            match result {
                                Ok(Reattached::Body(body, encoding, first)) => {
                                    r.body_first_seq = first;
                                    r.body_frames = 0;
                                    this.body = body;
                                    this.decoder = EventDecoder::with_limits(encoding, this.limits);
                                    this.idle = None;
                                    continue;
                                }
                                Ok(Reattached::Finished) => {
                                    this.finished = true;
                                    continue;
                                }
                                Err(Retry::Again(after, reason)) => {
                                    if let Err(e) = r.start(reason, after) {
                                        this.done = true;
                                        return Poll::Ready(Some(Err(e)));
                                    }
                                    continue;
                                }
                                Err(Retry::Never(e)) => {
                                    this.done = true;
                                    return Poll::Ready(Some(Err(e)));
                                }
                            }
                        }
                    }
                }
            }
            if this.finished {
                this.done = true;
                if !this.terminal {
                    return Poll::Ready(Some(Err(ClientError::Truncated {
                        events: this.events,
                    })));
                }
                return Poll::Ready(None);
            }
            match this.body.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    this.decoder.push(&bytes);
                }
                Poll::Ready(Some(Err(e))) => {
                    if let Some(r) = this.resume.as_deref_mut().filter(|_| !this.terminal) {
                        // A partial frame is dropped with the connection; the re-attach
                        // sends it again.
                        if let Err(e) = r.start(format!("the connection failed: {e}"), None) {
                            this.done = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                        continue;
                    }
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    if let Some(r) = this.resume.as_deref_mut().filter(|_| !this.terminal) {
                        if let Err(e) = r.start("the stream ended before the run did".into(), None)
                        {
                            this.done = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                        continue;
                    }
                    // The end of the body: let the decoder report a truncated frame or
                    // release a last event, then end.
                    this.finished = true;
                    this.decoder.finish();
                }
                Poll::Pending => {
                    if let Some(t) = this.idle_timeout {
                        let sleep = this
                            .idle
                            .get_or_insert_with(|| Box::pin(tokio::time::sleep(t)));
                        if std::future::Future::poll(sleep.as_mut(), cx).is_ready() {
                            this.idle = None;
                            if let Some(r) = this.resume.as_deref_mut().filter(|_| !this.terminal) {
                                if let Err(e) = r.start(format!("no bytes for {t:?}"), None) {
                                    this.done = true;
                                    return Poll::Ready(Some(Err(e)));
                                }
                                continue;
                            }
                            this.done = true;
                            return Poll::Ready(Some(Err(ClientError::Timeout {
                                after: t,
                                waiting_for: "the next event",
                            })));
                        }
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agui_core::semantics::{Inbound, InboundConfig};

    #[test]
    fn unread_warnings_are_bounded() {
        // Real warnings: a frame with one unknown key each.
        let mut inbound = Inbound::new(InboundConfig::default().verify(false));
        let mut w = Vec::new();
        for _ in 0..3 {
            inbound
                .push_json(
                    br#"{"type":"RAW","event":1,"zz":1}"#,
                    &mut Vec::new(),
                    &mut w,
                )
                .unwrap();
        }
        let q = WarningQueue::default();
        for _ in 0..(MAX_QUEUED_WARNINGS / 3 + 10) {
            let mut batch = w.clone();
            q.append(&mut batch);
        }
        let mut out = Vec::new();
        q.drain_into(&mut out);
        assert_eq!(out.len(), MAX_QUEUED_WARNINGS);
        // Once read, there is room again.
        let mut batch = w.clone();
        q.append(&mut batch);
        q.drain_into(&mut out);
        assert_eq!(out.len(), MAX_QUEUED_WARNINGS + 3);
    }
}
