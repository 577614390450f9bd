//! The HTTP transport: POST a run's input, stream the decoded events back.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use std::sync::{Arc, Mutex};

use agui_sdk_core::encoding::{DecoderLimits, Encoding, EventDecoder};
use agui_sdk_core::semantics::{InboundConfig, InboundWarning, Intake};
use agui_sdk_core::{Event, RunAgentInput};
use bytes::Bytes;
use futures_core::Stream;
use futures_util::stream::{AbortHandle, Abortable, BoxStream};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use tracing::Instrument;

use crate::error::ClientError;

mod body;
pub mod endpoint;
mod resume;

use body::BodyStream;

use resume::{first_seq, Resumer};
pub use resume::{Reconnect, ResumeOptions};

/// Default [`HttpAgentBuilder::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`HttpAgentBuilder::response_timeout`].
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`HttpAgentBuilder::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default [`HttpAgentBuilder::max_run_bytes`]: 256 MiB received for one run.
pub const DEFAULT_MAX_RUN_BYTES: u64 = 256 << 20;
pub use endpoint::MAX_ERROR_BODY;

/// Reads at most [`MAX_ERROR_BODY`] bytes of `response`'s body, within `timeout`.
async fn error_body(response: reqwest::Response, timeout: Option<Duration>) -> String {
    endpoint::error_body(response, MAX_ERROR_BODY, timeout)
        .await
        .text
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
    max_redirects: usize,
    max_run_bytes: Option<u64>,
}

impl HttpAgentBuilder {
    /// The most bytes one run's response may bring, re-attaches included
    /// ([`DEFAULT_MAX_RUN_BYTES`] by default; zero: no limit). Past it the stream ends
    /// with [`ClientError::LimitExceeded`] and the request is dropped. A stream of
    /// your own transport ([`EventStream::from_body`]) has the default.
    pub fn max_run_bytes(mut self, max: u64) -> Self {
        self.max_run_bytes = (max != 0).then_some(max);
        self
    }

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

    /// How many redirects a request follows (default
    /// [`MAX_REDIRECTS`](endpoint::MAX_REDIRECTS); zero: none, a `3xx` answer is then an
    /// error). Only redirects within the URL's origin (scheme, host and port) are
    /// followed, with the headers and token: a redirect to another origin fails the
    /// run with [`ClientError::CrossOriginRedirect`] before anything is sent there.
    pub fn max_redirects(mut self, n: usize) -> Self {
        self.max_redirects = n;
        self
    }

    /// Uses this `reqwest` client (connection pool, proxies, TLS settings).
    ///
    /// Its redirect policy is used as it is, and is what keeps the headers and token
    /// of this builder from following a redirect to another origin: build it with
    /// `.redirect(agui_sdk_client::endpoint::same_origin_redirects(10))` (what the
    /// agent's own client does) or `reqwest::redirect::Policy::none()`. `reqwest`'s
    /// default policy follows redirects anywhere and sends `Authorization` again from
    /// the second hop on a foreign host; a run's response that came from another
    /// origin is still refused ([`ClientError::CrossOriginRedirect`]), but only after
    /// the credentials went there. [`max_redirects`](Self::max_redirects) does not apply.
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Builds the agent.
    pub fn build(self) -> Result<HttpAgent, ClientError> {
        if let Some(e) = self.error {
            return Err(ClientError::InvalidInput(e));
        }
        let own_client = self.client.is_none();
        let client = match self.client {
            Some(c) => c,
            None => {
                let mut b = reqwest::Client::builder()
                    .redirect(endpoint::same_origin_redirects(self.max_redirects));
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
            own_client,
            max_run_bytes: self.max_run_bytes,
        })
    }
}

/// An AG-UI agent behind an HTTP endpoint.
///
/// ```no_run
/// # async fn demo() -> Result<(), agui_sdk_client::ClientError> {
/// use agui_sdk_client::HttpAgent;
/// use agui_sdk_core::{Message, RunAgentInput};
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
    /// Whether the client is the one the builder made (whose redirect policy keeps
    /// every request within the URL's origin).
    own_client: bool,
    max_run_bytes: Option<u64>,
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
            max_redirects: endpoint::MAX_REDIRECTS,
            max_run_bytes: Some(DEFAULT_MAX_RUN_BYTES),
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
        let mut body = Vec::with_capacity(256);
        let body = agui_sdk_core::wire::write_canonical_to(input, &mut body).map(|()| body);
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
        if !self.own_client {
            self.same_origin(&response)?;
        }
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
        stream.max_run_bytes = self.max_run_bytes;
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
}

impl HttpAgent {
    /// Refuses a response that came from another origin than the agent's URL: a
    /// client given to the builder may have followed a redirect there.
    fn same_origin(&self, response: &reqwest::Response) -> Result<(), ClientError> {
        let Ok(url) = reqwest::Url::parse(&self.url) else {
            return Ok(());
        };
        let home = endpoint::origin(&url);
        if endpoint::origin(response.url()) == home {
            return Ok(());
        }
        Err(ClientError::CrossOriginRedirect(
            endpoint::CrossOriginRedirect {
                origin: home,
                from: endpoint::redact_url(&self.url),
                to: endpoint::redact_url(response.url().as_str()),
                status: None,
                followed: true,
            },
        ))
    }
}

fn abortable_boxed<S>(s: Abortable<S>) -> BoxStream<'static, Result<Event, ClientError>>
where
    S: Stream<Item = Result<Event, ClientError>> + Send + 'static,
{
    s.boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agui_sdk_core::semantics::{Inbound, InboundConfig};

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
