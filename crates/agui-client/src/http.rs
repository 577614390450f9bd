//! The HTTP transport: POST a run's input, stream the decoded events back.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use agui_core::encoding::{DecoderLimits, Encoding, EventDecoder};
use agui_core::{Event, RunAgentInput};
use bytes::Bytes;
use futures_core::Stream;
use futures_util::stream::{AbortHandle, Abortable, BoxStream};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use tracing::Instrument;

use crate::error::ClientError;

/// A run's events as they arrive. Dropping it cancels the request; so does
/// [`EventStream::abort`].
pub struct EventStream {
    inner: BoxStream<'static, Result<Event, ClientError>>,
    abort: Option<AbortHandle>,
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
}

impl HttpAgentBuilder {
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

    /// Limit for establishing the connection.
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = Some(t);
        self
    }

    /// Limit for the response headers to arrive.
    pub fn response_timeout(mut self, t: Duration) -> Self {
        self.response_timeout = Some(t);
        self
    }

    /// Limit for the gap between two reads of the body (a stalled stream fails with
    /// [`ClientError::Timeout`]). No limit by default: agents may think for long.
    pub fn idle_timeout(mut self, t: Duration) -> Self {
        self.idle_timeout = Some(t);
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
}

impl HttpAgent {
    /// A builder for an agent at `url`.
    pub fn builder(url: impl Into<String>) -> HttpAgentBuilder {
        HttpAgentBuilder {
            url: url.into(),
            headers: HeaderMap::new(),
            encoding: Encoding::Sse,
            connect_timeout: None,
            response_timeout: None,
            idle_timeout: None,
            limits: DecoderLimits::default(),
            client: None,
            error: None,
        }
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends a run and returns its events as they arrive. The request is sent when the
    /// stream is first polled. A non-2xx answer, a malformed stream, a stream that ends
    /// without `RUN_FINISHED`/`RUN_ERROR`, and timeouts come out as errors, after the
    /// events that preceded them.
    pub fn run(&self, input: &RunAgentInput) -> EventStream {
        let span = tracing::info_span!("agui.client.run", url = %self.url, thread_id = %input.thread_id, run_id = %input.run_id);
        let body = serde_json::to_vec(input);
        let this = self.clone();
        let stream = futures_util::stream::once(
            async move {
                let body = body.map_err(|e| ClientError::InvalidInput(e.to_string()))?;
                this.send(body).await
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
        }
    }

    async fn send(&self, body: Vec<u8>) -> Result<BodyStream, ClientError> {
        let mut headers = self.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static(self.encoding.content_type()),
        );
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
            let text = response.text().await.unwrap_or_default();
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
        // As the reference client: protobuf only for exactly its media type.
        let encoding = if content_type == Encoding::Proto.content_type() {
            Encoding::Proto
        } else {
            Encoding::Sse
        };
        tracing::debug!(%status, ?encoding, "response");
        Ok(BodyStream {
            body: response.bytes_stream().boxed(),
            decoder: EventDecoder::with_limits(encoding, self.limits),
            idle_timeout: self.idle_timeout,
            events: 0,
            terminal: false,
            finished: false,
            done: false,
        })
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
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: EventDecoder,
    idle_timeout: Option<Duration>,
    events: u64,
    terminal: bool,
    finished: bool,
    done: bool,
}

impl BodyStream {
    fn instrument_stream(
        self,
        span: tracing::Span,
    ) -> BoxStream<'static, Result<Event, ClientError>> {
        futures_util::stream::unfold(self, move |mut s| {
            let span = span.clone();
            async move { s.next_item().await.map(|item| (item, s)) }.instrument(span)
        })
        .boxed()
    }

    async fn next_item(&mut self) -> Option<Result<Event, ClientError>> {
        if self.done {
            return None;
        }
        loop {
            match self.decoder.next() {
                Some(Ok(event)) => {
                    self.events += 1;
                    match &event {
                        Event::RunFinished(_) | Event::RunError(_) => self.terminal = true,
                        Event::RunStarted(_) => self.terminal = false,
                        _ => {}
                    }
                    return Some(Ok(event));
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
                None => {}
            }
            if self.finished {
                self.done = true;
                if !self.terminal {
                    return Some(Err(ClientError::Truncated {
                        events: self.events,
                    }));
                }
                return None;
            }
            let chunk = match self.idle_timeout {
                Some(t) => match tokio::time::timeout(t, self.body.next()).await {
                    Ok(c) => c,
                    Err(_) => {
                        self.done = true;
                        return Some(Err(ClientError::Timeout {
                            after: t,
                            waiting_for: "the next event",
                        }));
                    }
                },
                None => self.body.next().await,
            };
            match chunk {
                Some(Ok(bytes)) => self.decoder.push(&bytes),
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
                None => {
                    // The end of the body: let the decoder report a truncated frame or
                    // release a last event, then end.
                    self.finished = true;
                    self.decoder.finish();
                }
            }
        }
    }
}
