//! One request and its response, judged: the body is read with a time limit per read
//! and a size limit, decoded by the core's decoders and taken through the inbound
//! pipeline a client runs (enforcement, chunk expansion, verification, reduction).
//! Everything the pipeline says becomes a [`Finding`] of the scenario.

use std::time::Duration;

use agui_sdk_core::encoding::{DecodeErrorKind, DecoderLimits, Encoding, EventDecoder, RawBody};
use agui_sdk_core::event::RunStarted;
use agui_sdk_core::semantics::{Inbound, InboundConfig, InboundError, Reducer, WarningKind};
use agui_sdk_core::{Event, EventType, RunAgentInput};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};

use crate::report::{Finding, Level};
use crate::Checker;

/// The most bytes read from one response.
pub const MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;
/// The most events taken from one response.
pub const MAX_RESPONSE_EVENTS: u64 = 100_000;
/// The largest single event accepted (the reference client's limit).
const MAX_EVENT_SIZE: usize = DecoderLimits::DEFAULT_MAX_EVENT_SIZE;
/// How much of an error answer's body is quoted.
const MAX_QUOTED_BODY: usize = 4 * 1024;

/// A scenario's requests and what they found.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub checker: &'a Checker,
    pub requests: usize,
    pub findings: Vec<Finding>,
    /// Why the scenario was not exercised, when its premise did not happen.
    pub not_exercised: Option<String>,
    /// The tools the agent's capabilities declare it runs itself (`tools.items`).
    pub declared_tools: Vec<String>,
    /// The status and body of the last answer refused with a 4xx where a refusal was
    /// expected ([`Send::refusal`]).
    pub refused: Option<(u16, String)>,
    /// When the last request was sent: its response's deadline counts from there.
    sent_at: Option<tokio::time::Instant>,
}

/// How to send one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Send {
    /// The encoding asked for (`Accept`); SSE by default.
    pub proto: bool,
    /// Hang up after this many events.
    pub stop_after: Option<u64>,
    /// Headers beyond the checker's.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The run is one the agent must refuse: a 4xx answer is recorded in
    /// [`Ctx::refused`] for the scenario to judge, not reported as a refused run.
    pub refusal: bool,
}

/// A judged event stream.
#[derive(Debug)]
pub(crate) struct Judged {
    /// The settled (expanded, verified) events' types, in order.
    pub types: Vec<EventType>,
    /// The first `RUN_STARTED`.
    pub run_started: Option<RunStarted>,
    /// The pipeline, holding the conversation after the stream.
    inbound: Inbound,
    /// What [`Judged::reducer`] gives when the pipeline holds none.
    empty: Reducer,
    /// Events settled before the current response (a re-attached stream continues
    /// the pipeline of the first).
    settled_base: usize,
    /// The last SSE event id seen.
    pub last_event_id: String,
    /// The message of a `RUN_ERROR`, when the stream had one.
    pub run_error: Option<String>,
    /// The tool calls the stream started: id, tool name and raw event index.
    pub tool_calls: Vec<(String, String, u64)>,
    /// Whether the stream was judged to its end without an error finding.
    pub clean: bool,
    /// The encoding of the response.
    pub encoding: Encoding,
    /// Response headers.
    pub headers: HeaderMap,
}

impl Judged {
    /// The conversation after the stream.
    pub(crate) fn reducer(&self) -> &Reducer {
        self.inbound.reducer().unwrap_or(&self.empty)
    }
}

/// A plain answer that is not an event stream.
#[derive(Debug)]
pub(crate) struct Plain {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(checker: &'a Checker) -> Self {
        Ctx {
            checker,
            requests: 0,
            findings: Vec::new(),
            not_exercised: None,
            declared_tools: Vec::new(),
            refused: None,
            sent_at: None,
        }
    }

    /// Records a finding about the current request.
    pub(crate) fn find(
        &mut self,
        rule: &'static str,
        level: Level,
        event: Option<u64>,
        message: String,
    ) {
        self.findings.push(Finding {
            rule,
            level,
            request: self.requests.saturating_sub(1),
            event,
            message,
            also_in: Vec::new(),
        });
    }

    /// Marks the scenario as not exercised: the agent never did what it tests.
    pub(crate) fn not_exercised(&mut self, why: impl Into<String>) {
        self.not_exercised = Some(why.into());
    }

    fn timeout(&self) -> Duration {
        self.checker.timeout
    }

    /// Sends `body` to the agent with `method`; the response once its head arrived,
    /// or a finding.
    pub(crate) async fn send_raw(
        &mut self,
        method: reqwest::Method,
        url: &str,
        body: Option<Vec<u8>>,
        accept: &str,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Option<reqwest::Response> {
        self.requests += 1;
        let mut headers = self.checker.headers.clone();
        if let Ok(v) = HeaderValue::from_str(accept) {
            headers.insert(ACCEPT, v);
        }
        for (n, v) in extra {
            headers.insert(n.clone(), v.clone());
        }
        let client = match &self.checker.client {
            Ok(c) => c,
            Err(e) => {
                let message = format!("cannot build the HTTP client: {e}");
                self.find("check/internal", Level::Error, None, message);
                return None;
            }
        };
        let mut req = client.request(method, url).headers(headers);
        if let Some(body) = body {
            req = req.header(CONTENT_TYPE, "application/json").body(body);
        }
        let t = self.timeout();
        self.sent_at = Some(tokio::time::Instant::now());
        match tokio::time::timeout(t, req.send()).await {
            Err(_) => {
                self.find(
                    "transport/stall",
                    Level::Error,
                    None,
                    format!("no response head within {}", secs(t)),
                );
                None
            }
            Ok(Err(e)) => {
                if let Some(r) = agui_sdk_client::endpoint::cross_origin_redirect(&e) {
                    self.find("transport/redirect", Level::Error, None, r.to_string());
                    return None;
                }
                let msg = agui_sdk_client::endpoint::redact_url_in(
                    &agui_sdk_client::endpoint::error_chain(&e),
                    &self.checker.url,
                );
                self.find(
                    "transport/connection",
                    Level::Error,
                    None,
                    format!("the request failed: {msg}"),
                );
                None
            }
            Ok(Ok(r)) => Some(r),
        }
    }

    /// POSTs `input` and judges the answer, which must be a 2xx event stream in the
    /// encoding asked for (or SSE, when protobuf was asked and not offered). `None`
    /// when there was no stream to judge (the findings say why).
    pub(crate) async fn run(&mut self, input: &RunAgentInput, send: &Send) -> Option<Judged> {
        let mut body = Vec::with_capacity(256);
        let body = match agui_sdk_core::wire::write_canonical_to(input, &mut body) {
            Ok(()) => body,
            Err(e) => {
                self.requests += 1;
                self.find("check/internal", Level::Error, None, e.to_string());
                return None;
            }
        };
        let accept = if send.proto {
            Encoding::Proto.content_type()
        } else {
            Encoding::Sse.content_type()
        };
        let url = self.checker.url.clone();
        let response = self
            .send_raw(
                reqwest::Method::POST,
                &url,
                Some(body),
                accept,
                &send.headers,
            )
            .await?;
        let judged = self.judge(response, input, send).await?;
        self.unoffered_tools(input, &judged);
        Some(judged)
    }

    /// A finding for each tool the stream called that `input` did not offer and the
    /// capabilities do not declare as the agent's own (`tools.items`).
    fn unoffered_tools(&mut self, input: &RunAgentInput, judged: &Judged) {
        let mut seen: Vec<&str> = Vec::new();
        for (_, name, at) in &judged.tool_calls {
            let known = input.tools.iter().any(|t| &t.name == name)
                || self.declared_tools.iter().any(|t| t == name);
            if known || seen.contains(&name.as_str()) {
                continue;
            }
            seen.push(name);
            self.find(
                "tools/offered",
                Level::Warning,
                Some(*at),
                format!(
                    "the agent called tool '{name}', which the request did not offer (tools) and the capabilities do not declare as the agent's own (tools.items): a client has no such tool to run"
                ),
            );
        }
    }

    /// Judges a response that should be an event stream answering `input`.
    pub(crate) async fn judge(
        &mut self,
        response: reqwest::Response,
        input: &RunAgentInput,
        send: &Send,
    ) -> Option<Judged> {
        let status = response.status();
        let content_type = content_type(response.headers());
        if !status.is_success() {
            let plain = self.plain(response).await;
            if send.refusal && status.is_client_error() {
                self.refused = Some((plain.status, plain.body));
                return None;
            }
            self.find(
                "http/run-accepted",
                Level::Error,
                None,
                format!(
                    "a valid input got HTTP {} ({}): {}",
                    plain.status, plain.content_type, plain.body
                ),
            );
            return None;
        }
        let media = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let encoding = if media == "text/event-stream" {
            Encoding::Sse
        } else if media == Encoding::Proto.content_type() {
            Encoding::Proto
        } else {
            self.find(
                "transport/content-type",
                Level::Error,
                None,
                format!(
                    "HTTP {} answered with Content-Type {content_type:?}, not an event stream (text/event-stream{})",
                    status.as_u16(),
                    if send.proto { " or application/vnd.ag-ui.event+proto" } else { "" }
                ),
            );
            return None;
        };
        if encoding == Encoding::Proto && !send.proto {
            self.find(
                "transport/content-type",
                Level::Error,
                None,
                "a request accepting only text/event-stream got protobuf".to_owned(),
            );
            return None;
        }
        Some(self.read_stream(response, encoding, input, send).await)
    }

    async fn read_stream(
        &mut self,
        response: reqwest::Response,
        encoding: Encoding,
        input: &RunAgentInput,
        send: &Send,
    ) -> Judged {
        let judged = Judged {
            types: Vec::new(),
            run_started: None,
            inbound: Inbound::with_reducer(InboundConfig::default(), Reducer::from_input(input))
                .expect_thread(input.thread_id.clone()),
            empty: Reducer::default(),
            settled_base: 0,
            last_event_id: String::new(),
            run_error: None,
            tool_calls: Vec::new(),
            clean: true,
            encoding,
            headers: HeaderMap::new(),
        };
        self.read_into(response, encoding, judged, send).await
    }

    /// Judges `response` as the continuation of `judged`'s stream (a re-attach): its
    /// events go through the same pipeline; its event indexes count from its start.
    pub(crate) async fn continue_stream(
        &mut self,
        response: reqwest::Response,
        mut judged: Judged,
        send: &Send,
    ) -> Option<Judged> {
        let status = response.status();
        let content_type = content_type(response.headers());
        let media = content_type.split(';').next().unwrap_or("").trim();
        let ended = judged.types.last().is_some_and(|t| t.is_terminal());
        if status == reqwest::StatusCode::NO_CONTENT && ended {
            // Nothing after the cursor, and the run had ended there: nothing missed.
            return Some(judged);
        }
        if !status.is_success() || !media.eq_ignore_ascii_case("text/event-stream") {
            let plain = self.plain(response).await;
            self.find(
                "resumable/reattach",
                Level::Error,
                None,
                format!(
                    "the re-attach got HTTP {} ({}), not the rest of the run as an event stream: {}",
                    plain.status, plain.content_type, plain.body
                ),
            );
            return None;
        }
        judged.settled_base = judged.types.len();
        judged.clean = true;
        Some(self.read_into(response, Encoding::Sse, judged, send).await)
    }

    async fn read_into(
        &mut self,
        response: reqwest::Response,
        encoding: Encoding,
        mut judged: Judged,
        send: &Send,
    ) -> Judged {
        judged.headers = response.headers().clone();
        judged.encoding = encoding;
        let mut reader = Reader {
            decoder: EventDecoder::with_limits(
                encoding,
                DecoderLimits::default().with_max_event_size(MAX_EVENT_SIZE),
            ),
            raw_of_intake: Vec::new(),
            raw_of_settled: Vec::new(),
            judged,
            out: Vec::new(),
            warnings: Vec::new(),
            frames: 0,
            stop_after: send.stop_after,
        };
        let mut body = response.bytes_stream();
        let mut bytes = 0u64;
        let t = self.timeout();
        let limit = self.checker.response_limit();
        let deadline = self.sent_at.unwrap_or_else(tokio::time::Instant::now) + limit;
        let mut hung_up = false;
        loop {
            let wait = t.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            match tokio::time::timeout(wait, body.next()).await {
                Err(_) if tokio::time::Instant::now() >= deadline => {
                    let n = reader.frames;
                    self.find(
                        "transport/stall",
                        Level::Error,
                        None,
                        format!(
                            "the response did not end within {} of its request (the response deadline) after {n} events (at byte {bytes})",
                            secs(limit)
                        ),
                    );
                    reader.judged.clean = false;
                    break;
                }
                Err(_) => {
                    let n = reader.frames;
                    self.find(
                        "transport/stall",
                        Level::Error,
                        None,
                        format!(
                            "the stream sent no byte for {} after {n} events (at byte {bytes})",
                            secs(t)
                        ),
                    );
                    reader.judged.clean = false;
                    break;
                }
                Ok(None) => {
                    reader.decoder.finish();
                    reader.drain(self);
                    break;
                }
                Ok(Some(Err(e))) => {
                    self.find(
                        "transport/connection",
                        Level::Error,
                        None,
                        format!(
                            "the connection failed at byte {bytes}: {}",
                            agui_sdk_client::endpoint::error_chain(&e)
                        ),
                    );
                    reader.judged.clean = false;
                    break;
                }
                Ok(Some(Ok(chunk))) => {
                    bytes += chunk.len() as u64;
                    if bytes > MAX_RESPONSE_BYTES {
                        self.find(
                            "check/limit",
                            Level::Error,
                            None,
                            format!("the response is larger than the checker reads ({MAX_RESPONSE_BYTES} bytes)"),
                        );
                        reader.judged.clean = false;
                        break;
                    }
                    reader.decoder.push(&chunk);
                    if !reader.drain(self) {
                        break;
                    }
                    if send.stop_after.is_some_and(|n| reader.frames >= n) {
                        hung_up = true;
                        break;
                    }
                }
            }
        }
        drop(body);
        if reader.judged.clean && !hung_up {
            if reader.frames == 0 {
                self.find(
                    "lifecycle/run-started-first",
                    Level::Error,
                    None,
                    "the stream ended without any event".to_owned(),
                );
                reader.judged.clean = false;
            } else if let Err(e) = reader.judged.inbound.finish() {
                self.find(e.rule_id(), Level::Error, None, e.to_string());
                reader.judged.clean = false;
            }
        }
        reader.judged
    }

    /// Status, content type and the start of the body of an answer.
    pub(crate) async fn plain(&mut self, response: reqwest::Response) -> Plain {
        let status = response.status().as_u16();
        let content_type = content_type(response.headers());
        let body =
            agui_sdk_client::endpoint::error_body(response, MAX_QUOTED_BODY, Some(self.timeout()))
                .await
                .to_string();
        Plain {
            status,
            content_type,
            body,
        }
    }
}

/// The decoder and the pipeline of one response.
struct Reader {
    decoder: EventDecoder,
    /// The raw event index of each frame the intake took.
    raw_of_intake: Vec<u64>,
    /// The raw event index of each settled event.
    raw_of_settled: Vec<u64>,
    judged: Judged,
    out: Vec<Event>,
    warnings: Vec<agui_sdk_core::semantics::InboundWarning>,
    frames: u64,
    /// Frames after which the client hangs up (the rest are never taken).
    stop_after: Option<u64>,
}

impl Reader {
    /// Takes every frame the decoder holds; `false` when the stream is to be left
    /// (an error was found, or a limit reached).
    fn drain(&mut self, cx: &mut Ctx<'_>) -> bool {
        loop {
            if self.stop_after.is_some_and(|n| self.frames >= n) {
                return true;
            }
            let raw = match self.decoder.next_raw() {
                None => return true,
                Some(Err(e)) => {
                    let (rule, what) = match &e.kind {
                        DecodeErrorKind::Json(_) => ("events/valid-json", "malformed event"),
                        DecodeErrorKind::TooLarge { .. } => {
                            ("transport/event-size", "event too large")
                        }
                        DecodeErrorKind::Truncated { .. } | DecodeErrorKind::Proto(_) => {
                            ("transport/framing", "malformed framing")
                        }
                        _ => ("transport/framing", "undecodable event"),
                    };
                    cx.find(
                        rule,
                        Level::Error,
                        Some(e.index),
                        format!("{what} at byte offset {}: {}", e.offset, e.kind),
                    );
                    self.judged.clean = false;
                    return false;
                }
                Some(Ok(raw)) => raw,
            };
            self.frames += 1;
            if self.frames > MAX_RESPONSE_EVENTS {
                cx.find(
                    "check/limit",
                    Level::Error,
                    None,
                    format!("the response has more events than the checker reads ({MAX_RESPONSE_EVENTS})"),
                );
                self.judged.clean = false;
                return false;
            }
            let index = raw.index;
            if raw.last_event_id != self.judged.last_event_id {
                self.judged.last_event_id = raw.last_event_id.to_owned();
            }
            self.raw_of_intake.push(index);
            let before = self.out.len();
            let result = match raw.body {
                RawBody::Json(data) => {
                    self.judged
                        .inbound
                        .push_json(data, &mut self.out, &mut self.warnings)
                }
                RawBody::Event(event) => {
                    self.judged
                        .inbound
                        .push_event(event, &mut self.out, &mut self.warnings)
                }
            };
            for e in &self.out[before..] {
                self.raw_of_settled.push(index);
                self.judged.types.push(e.event_type());
                match e {
                    Event::RunStarted(rs) if self.judged.run_started.is_none() => {
                        self.judged.run_started = Some((**rs).clone());
                    }
                    Event::RunError(re) => self.judged.run_error = Some(re.message.clone()),
                    Event::ToolCallStart(tc) => self.judged.tool_calls.push((
                        tc.tool_call_id.clone(),
                        tc.tool_call_name.clone(),
                        index,
                    )),
                    _ => {}
                }
            }
            self.out.clear();
            for w in self.warnings.drain(..) {
                let (rule, level, at) = match &w.kind {
                    WarningKind::Apply(_) => {
                        let i = w.index as usize;
                        let at = i
                            .checked_sub(self.judged.settled_base)
                            .and_then(|i| self.raw_of_settled.get(i))
                            .copied();
                        if self.judged.types.get(i) == Some(&EventType::StateDelta) {
                            ("state/delta-applies", Level::Error, at)
                        } else {
                            (w.kind.rule_id(), Level::Warning, at)
                        }
                    }
                    k => (
                        k.rule_id(),
                        Level::Warning,
                        self.raw_of_intake.get(w.index as usize).copied(),
                    ),
                };
                if level == Level::Error {
                    self.judged.clean = false;
                }
                cx.find(rule, level, at.or(Some(index)), w.kind.to_string());
            }
            if let Err(e) = result {
                let at = match &e {
                    InboundError::Verify { source } => source
                        .index
                        .checked_sub(self.judged.settled_base)
                        .and_then(|i| self.raw_of_settled.get(i))
                        .copied()
                        .unwrap_or(index),
                    _ => index,
                };
                cx.find(e.rule_id(), Level::Error, Some(at), inner_message(&e));
                self.judged.clean = false;
                return false;
            }
        }
    }
}

/// The error's message without its `event N: ` prefix (the finding has the index).
fn inner_message(e: &InboundError) -> String {
    let s = e.to_string();
    match s.strip_prefix("event ").and_then(|r| r.split_once(": ")) {
        Some((n, rest)) if n.bytes().all(|b| b.is_ascii_digit()) => rest.to_owned(),
        _ => s,
    }
}

/// The `Content-Type` of a response, empty when absent.
pub(crate) fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// `10 s`, `0.5 s`.
pub(crate) fn secs(t: Duration) -> String {
    format!("{} s", t.as_secs_f64())
}
