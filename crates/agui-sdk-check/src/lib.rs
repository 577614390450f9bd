//! A conformance checker for any AG-UI server, in any language.
//!
//! [`Checker`] drives the agent endpoint at a URL through [`Scenario`]s (a plain chat,
//! a frontend tool, state, interrupts, invalid input, content negotiation, a client
//! that hangs up, protocol versions, capabilities discovery, resumable runs) and judges
//! every response with the inbound pipeline a client runs (enforcement, chunk
//! expansion, lifecycle verification, reduction). What it finds is a [`Report`]: per
//! scenario, its [`Status`] (passed, failed, not exercised when the agent never did
//! what it tests, skipped when it does not apply) and [`Finding`]s that name a rule by
//! its stable id (the ids the verifier's
//! [`VerifyRule::id`](agui_sdk_core::semantics::VerifyRule::id) gives, listed in
//! `docs/check-rules.md`), its [`Level`], the request and the event. One root cause
//! found by several scenarios is one finding, naming them ([`Finding::also_in`]).
//!
//! The `agui check URL` command is this crate with a command line; a Rust team can run
//! it in its own tests against its own router:
//!
//! ```no_run
//! # async fn f() -> Result<(), agui_sdk_check::CheckError> {
//! let report = agui_sdk_check::Checker::new("http://127.0.0.1:8000/agentic_chat")
//!     .timeout(std::time::Duration::from_secs(5))
//!     .run()
//!     .await?;
//! assert!(report.passed(), "{}", report.to_text(false));
//! # Ok(()) }
//! ```
//!
//! Limits: every wait for the next byte of a response is bounded by the timeout (a
//! silent response is an error finding, never a hang); each response must end within
//! [`RESPONSE_DEADLINE_TIMEOUTS`] timeouts from its request, and each scenario within
//! [`SCENARIO_DEADLINE_TIMEOUTS`] (a response dripping a byte at a time is an error
//! finding too), so that a whole check ends within the discovery's two timeouts and
//! the scenarios' deadlines; a response is read up to
//! [`MAX_RESPONSE_BYTES`] and [`MAX_RESPONSE_EVENTS`], one event up to 10 MiB, and an
//! error answer's body is quoted up to 4 KiB.
//!
//! Redirects: the headers given to the checker (a token) go to the URL's origin only.
//! A redirect within it is followed (at most 10); a redirect to another origin is not,
//! and is an error finding (`transport/redirect`) naming both.

use std::time::Duration;

use agui_sdk_core::AgentCapabilities;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};

mod exchange;
mod report;
mod scenarios;

pub use exchange::{MAX_RESPONSE_BYTES, MAX_RESPONSE_EVENTS};
pub use report::{Finding, Level, Repeated, Report, ScenarioReport, Status};
pub use scenarios::Scenario;

/// The default time limit for the next byte of any one response.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many timeouts one response may take in all, from its request to its last byte,
/// unless [`Checker::response_deadline`] says otherwise (60 s with the default timeout).
pub const RESPONSE_DEADLINE_TIMEOUTS: u32 = 6;

/// How many timeouts one scenario may take in all, its requests together, unless
/// [`Checker::scenario_deadline`] says otherwise (200 s with the default timeout).
pub const SCENARIO_DEADLINE_TIMEOUTS: u32 = 20;

/// Why a check could not be made at all (as opposed to what it found).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// Nothing answers at the URL (connection refused, no route, DNS failure, no
    /// answer within the timeout).
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What failed.
        reason: String,
    },
    /// A header given to the checker is not a valid HTTP header.
    #[error("invalid header {0:?}: expected `Name: value` with a valid name and value")]
    InvalidHeader(String),
    /// The URL is not an `http` or `https` URL.
    #[error("invalid URL {0:?}: expected http://… or https://…")]
    InvalidUrl(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// What the checker learnt before the scenarios: whether `GET URL` answers with the
/// agent's capabilities.
#[derive(Debug, Clone, Default)]
pub(crate) struct Discovery {
    /// The capabilities, when the server offers them.
    pub capabilities: Option<AgentCapabilities>,
    /// `GET URL` redirected to another origin (not followed): what to report.
    pub redirect: Option<String>,
    /// What `GET URL` answered, for the capabilities scenario.
    pub answer: Option<(u16, String, String)>,
}

/// Checks one agent endpoint. Build it, optionally pick scenarios, then [`run`](Checker::run).
#[derive(Debug, Clone)]
pub struct Checker {
    pub(crate) url: String,
    /// The HTTP client, or why it could not be built.
    pub(crate) client: Result<reqwest::Client, String>,
    pub(crate) headers: HeaderMap,
    pub(crate) timeout: Duration,
    response_deadline: Option<Duration>,
    scenario_deadline: Option<Duration>,
    scenarios: Vec<Scenario>,
    header_error: Option<String>,
}

impl Checker {
    /// A checker of the agent endpoint at `url` (the URL a client POSTs its
    /// `RunAgentInput` to), running every scenario with the default timeout.
    pub fn new(url: impl Into<String>) -> Self {
        Checker {
            url: url.into(),
            client: reqwest::Client::builder()
                .redirect(agui_sdk_client::endpoint::same_origin_redirects(
                    agui_sdk_client::endpoint::MAX_REDIRECTS,
                ))
                .build()
                .map_err(|e| agui_sdk_client::endpoint::error_chain(&e)),
            headers: HeaderMap::new(),
            timeout: DEFAULT_TIMEOUT,
            response_deadline: None,
            scenario_deadline: None,
            scenarios: Scenario::ALL.to_vec(),
            header_error: None,
        }
    }

    /// The longest wait for the next byte of any one response (also for a response's
    /// head). A response silent that long is an error finding; the check goes on.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest one response may take in all, from its request to its last byte
    /// ([`RESPONSE_DEADLINE_TIMEOUTS`] × the timeout unless set). A response still
    /// streaming then is an error finding (`transport/stall`); the check goes on.
    pub fn response_deadline(mut self, deadline: Duration) -> Self {
        self.response_deadline = Some(deadline);
        self
    }

    /// The longest one scenario may take in all ([`SCENARIO_DEADLINE_TIMEOUTS`] × the
    /// timeout unless set). A scenario still running then is stopped, with an error
    /// finding (`transport/stall`); the check goes on with the next.
    pub fn scenario_deadline(mut self, deadline: Duration) -> Self {
        self.scenario_deadline = Some(deadline);
        self
    }

    /// The response deadline in force.
    pub(crate) fn response_limit(&self) -> Duration {
        self.response_deadline
            .unwrap_or_else(|| self.timeout.saturating_mul(RESPONSE_DEADLINE_TIMEOUTS))
    }

    /// The scenario deadline in force.
    pub(crate) fn scenario_limit(&self) -> Duration {
        self.scenario_deadline
            .unwrap_or_else(|| self.timeout.saturating_mul(SCENARIO_DEADLINE_TIMEOUTS))
    }

    /// Runs only these scenarios, in this order.
    pub fn scenarios(mut self, scenarios: impl IntoIterator<Item = Scenario>) -> Self {
        self.scenarios = scenarios.into_iter().collect();
        self
    }

    /// Sends this header with every request (authentication, a tenant, …). An invalid
    /// name or value makes [`run`](Checker::run) fail with [`CheckError::InvalidHeader`].
    pub fn header(mut self, name: &str, value: &str) -> Self {
        match (
            HeaderName::try_from(name.trim()),
            HeaderValue::try_from(value.trim()),
        ) {
            (Ok(n), Ok(mut v)) => {
                v.set_sensitive(true);
                self.headers.append(n, v);
            }
            _ => self.header_error = Some(format!("{name}: {value}")),
        }
        self
    }

    /// Sends `Authorization: Bearer TOKEN` with every request.
    pub fn bearer(self, token: &str) -> Self {
        let value = format!("Bearer {token}");
        self.header(AUTHORIZATION.as_str(), &value)
    }

    /// Uses this HTTP client (a proxy, custom TLS roots).
    ///
    /// Its redirect policy is used as it is, and is what keeps the checker's headers
    /// from following a redirect to another origin: build it with
    /// `.redirect(agui_sdk_client::endpoint::same_origin_redirects(10))`, as the
    /// checker's own client is, or `reqwest::redirect::Policy::none()`. With
    /// `reqwest`'s default policy, redirects are followed anywhere, and a foreign host
    /// gets `Authorization` from its second request on.
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Ok(client);
        self
    }

    /// The URL checked.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs the scenarios one after the other and reports what they found. Fails only
    /// when the check cannot be made at all: a bad header or URL, or nothing answering
    /// at the URL.
    pub async fn run(&self) -> Result<Report, CheckError> {
        if let Some(h) = &self.header_error {
            return Err(CheckError::InvalidHeader(h.clone()));
        }
        let client = self
            .client
            .as_ref()
            .map_err(|e| CheckError::Client(e.clone()))?;
        let target = agui_sdk_client::endpoint::redact_url(&self.url);
        match reqwest::Url::parse(&self.url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => return Err(CheckError::InvalidUrl(target)),
        }
        let discovery = self.discover(client, &target).await?;
        let mut scenarios = Vec::with_capacity(self.scenarios.len());
        for s in &self.scenarios {
            scenarios.push(s.run(self, &discovery).await);
        }
        report::group(&mut scenarios);
        Ok(Report { target, scenarios })
    }

    /// `GET URL`: proves the server answers at all, and reads its capabilities when it
    /// offers them.
    async fn discover(
        &self,
        client: &reqwest::Client,
        target: &str,
    ) -> Result<Discovery, CheckError> {
        let unreachable = |reason: String| CheckError::Unreachable {
            url: target.to_owned(),
            reason,
        };
        let req = client
            .get(&self.url)
            .headers(self.headers.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send();
        let response = match tokio::time::timeout(self.timeout, req).await {
            Err(_) => {
                return Err(unreachable(format!(
                    "no answer within {}",
                    exchange::secs(self.timeout)
                )))
            }
            Ok(Err(e)) => {
                // A redirect to another origin is a finding of the scenarios, not a
                // server that cannot be reached.
                if let Some(r) = agui_sdk_client::endpoint::cross_origin_redirect(&e) {
                    return Ok(Discovery {
                        redirect: Some(format!("GET {r}")),
                        ..Discovery::default()
                    });
                }
                return Err(unreachable(agui_sdk_client::endpoint::redact_url_in(
                    &agui_sdk_client::endpoint::error_chain(&e),
                    &self.url,
                )));
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let content_type = exchange::content_type(response.headers());
        let body = agui_sdk_client::endpoint::error_body(response, 1 << 20, Some(self.timeout))
            .await
            .text;
        let capabilities = if (200..300).contains(&status) && content_type.contains("json") {
            scenarios::capabilities::parse(&body).ok().map(|(c, _)| c)
        } else {
            None
        };
        Ok(Discovery {
            capabilities,
            answer: Some((status, content_type, body)),
            redirect: None,
        })
    }
}
