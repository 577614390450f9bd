//! The AG-UI inspector: a web page that shows any agent's runs as the protocol sees
//! them (timeline, messages, state diffs, findings of the verifier and enforcement,
//! interrupts, figures), fed by a relay in this process (the agent needs no CORS) and,
//! optionally, by a transparent recording proxy between a real front end and its agent.
//!
//! - [`record`]: one run analysed with no I/O (bytes in; rows, findings and the
//!   conversation out), through the same inbound pipeline as every consumer;
//! - [`replay`]: the conversation at any one event of a recorded run;
//! - [`Inspector`]: the runs kept in memory, within [`Limits`];
//! - [`Inspector::router`]: the page and its JSON API (see `API.md`), guarded by a
//!   per-start token and an `Origin` check;
//! - [`proxy::router`]: the proxy, forwarding every request unchanged and recording
//!   each event-stream response as a run.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use agui_sdk_inspect::{Inspector, InspectorConfig};
//!
//! let inspector = Inspector::new(InspectorConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7777").await?;
//! println!("open http://127.0.0.1:7777/#token={}", inspector.token());
//! axum::serve(listener, inspector.router()).await
//! # }
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod api;
mod assets;
pub mod proxy;
pub mod record;
mod relay;
pub mod replay;

pub use agui_sdk_core::encoding::Framing;
pub use record::{Diagnostic, End, EventRow, Recording, Severity, Stage, Status};

/// Bounds on what the inspector keeps and accepts. Every one is on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body the page's API and the proxy accept, uploaded recordings
    /// included (64 MiB).
    pub max_body: usize,
    /// Events a run keeps (1,000,000); the run then ends with a finding.
    pub max_events: usize,
    /// Bytes of event JSON a run keeps (512 MiB); the run then ends with a finding.
    pub max_run_bytes: u64,
    /// Largest single event (one JSON line of a recording): 10 MiB, as the decoders.
    pub max_event_bytes: usize,
    /// Findings a run keeps (10,000); the rest are counted.
    pub max_findings: usize,
    /// Runs kept (50); the oldest finished one is forgotten first.
    pub max_runs: usize,
    /// Bytes of event JSON all runs keep together (1 GiB): past it the oldest finished
    /// runs are forgotten, and when none is left to forget the run that needs more ends
    /// its recording with a finding (the proxy still forwards everything).
    pub max_total_bytes: u64,
    /// Bytes of a non-2xx answer kept for its error message (64 KiB).
    pub max_error_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 64 << 20,
            max_events: 1_000_000,
            max_run_bytes: 512 << 20,
            max_event_bytes: 10 << 20,
            max_findings: 10_000,
            max_runs: 50,
            max_total_bytes: 1 << 30,
            max_error_body: 64 << 10,
        }
    }
}

/// How an [`Inspector`] is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct InspectorConfig {
    /// Bounds.
    pub limits: Limits,
    /// The agent URL the page starts with.
    pub default_url: Option<String>,
    /// The token the API requires (default: a random one).
    pub token: Option<String>,
}

impl InspectorConfig {
    /// The agent URL the page starts with.
    pub fn default_url(mut self, url: impl Into<String>) -> Self {
        self.default_url = Some(url.into());
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Uses this token instead of a random one (tests, scripted set-ups).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }
}

/// Where a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Started from the page, through the relay.
    Relay,
    /// Seen through the proxy.
    Proxy,
    /// Read from an uploaded recording.
    Recording,
}

/// Why the inspector refused to start or record a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// Every kept run is still running and no more may be kept.
    #[error("{0} runs are kept and all are still running; stop one first")]
    Full(usize),
    /// The URL is not an `http` or `https` URL.
    #[error("{0}")]
    BadUrl(String),
    /// A header to send is not a valid HTTP header.
    #[error("{0}")]
    BadHeader(String),
}

/// One run the inspector keeps.
#[derive(Debug)]
pub struct RunEntry {
    id: u64,
    source: Source,
    label: String,
    url: Option<String>,
    format: Framing,
    started_at_ms: u64,
    start: Instant,
    input: Option<Value>,
    recording: Mutex<Recording>,
    version: watch::Sender<u64>,
    cancel: CancellationToken,
    replay: Mutex<Option<replay::Replay>>,
    /// The inspector that keeps the run, for the budget of all runs' bytes.
    owner: std::sync::Weak<Inner>,
}

impl RunEntry {
    /// The run's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Locks the recording.
    pub fn recording(&self) -> MutexGuard<'_, Recording> {
        self.recording.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Milliseconds since the run started.
    pub fn elapsed_ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    /// Feeds bytes to the recording and wakes the page's feeds. Returns `false` when
    /// the recording takes no more.
    pub fn push(&self, bytes: &[u8]) -> bool {
        self.push_at(bytes, self.elapsed_ms())
    }

    /// [`push`](Self::push) of bytes that arrived `t` ms after the start.
    fn push_at(&self, bytes: &[u8], t: f64) -> bool {
        let (mut more, added) = {
            let mut r = self.recording();
            let before = r.kept_bytes();
            let more = r.push(bytes, t);
            (more, r.kept_bytes() - before)
        };
        if added > 0 {
            if let Some(inner) = self.owner.upgrade() {
                if let Err(max) = inner.charge(self.id, added) {
                    self.recording().refuse_more(format!(
                        "the inspector's runs together passed its limit of {max} bytes of events; the rest of this run is not recorded"
                    ));
                    more = false;
                }
            }
        }
        self.touch();
        more
    }

    /// Ends the recording (once; later calls change nothing).
    pub fn finish(&self, end: End) {
        let t = self.elapsed_ms();
        self.recording().finish(end, t);
        self.touch();
    }

    /// Sets the framing once the response says what it is.
    pub fn set_format(&self, format: Framing) {
        self.recording().set_format(format);
    }

    /// Whether the run has ended.
    pub fn is_done(&self) -> bool {
        self.recording().end().is_some()
    }

    /// Closes the connection behind a running run.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// Cancelled when the user stops the run.
    pub fn cancelled(&self) -> &CancellationToken {
        &self.cancel
    }

    fn touch(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// The replay the last event-detail request left, when it stands at or before
    /// `index` (taking it: a concurrent request starts its own).
    pub(crate) fn take_replay(&self, index: usize) -> Option<replay::Replay> {
        lock(&self.replay)
            .take()
            .filter(|r| r.next_index() <= index)
    }

    /// Keeps a replay for the next event-detail request.
    pub(crate) fn keep_replay(&self, replay: replay::Replay) {
        *lock(&self.replay) = Some(replay);
    }

    /// Waits for the next change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// The run's summary, as `GET /api/runs/{id}` gives it.
    pub fn summary(&self) -> Value {
        let r = self.recording();
        self.summary_of(&r)
    }

    /// The summary from an already locked recording.
    pub fn summary_of(&self, r: &Recording) -> Value {
        let (status, error) = r.status();
        let events = r.rows().len();
        let duration = if r.end().is_some() {
            r.last_ms()
        } else {
            self.elapsed_ms()
        };
        let rate = if duration > 0.0 {
            events as f64 * 1000.0 / duration
        } else {
            0.0
        };
        let input = self.input.clone().or_else(|| r.started_input().cloned());
        let thread = r.thread_id().map(str::to_owned).or_else(|| {
            input
                .as_ref()
                .and_then(|i| i.get("threadId"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        json!({
            "id": self.id.to_string(),
            "source": self.source,
            "label": self.label,
            "url": self.url,
            "format": self.format,
            "status": status,
            "stopped": matches!(r.end(), Some(End::Stopped)),
            "error": error,
            "events": events,
            "bytes": r.bytes(),
            "startedAt": self.started_at_ms,
            "firstEventMs": r.first_event_ms(),
            "durationMs": duration,
            "eventsPerSec": rate,
            "findings": r.findings().len() as u64 + r.findings_dropped(),
            "threadId": thread,
            "input": input,
        })
    }
}

/// What a new run is.
#[derive(Debug, Clone)]
pub struct NewRecording {
    /// Where it came from.
    pub source: Source,
    /// A short title.
    pub label: String,
    /// The agent's URL.
    pub url: Option<String>,
    /// The framing asked for or sniffed.
    pub format: Framing,
    /// What was sent.
    pub input: Option<Value>,
}

struct Inner {
    config: InspectorConfig,
    token: String,
    next_id: AtomicU64,
    runs: Mutex<BTreeMap<u64, Arc<RunEntry>>>,
    /// Bytes of event JSON the kept runs hold together.
    kept: AtomicU64,
    http: reqwest::Client,
    proxy: Mutex<Option<Value>>,
}

impl Inner {
    /// Forgets the oldest finished run other than `keep`; whether there was one.
    fn forget_oldest_done(
        &self,
        runs: &mut BTreeMap<u64, Arc<RunEntry>>,
        keep: Option<u64>,
    ) -> bool {
        let oldest = runs
            .iter()
            .find(|(id, r)| Some(**id) != keep && r.is_done())
            .map(|(id, _)| *id);
        let Some(id) = oldest else {
            return false;
        };
        if let Some(run) = runs.remove(&id) {
            let freed = run.recording().kept_bytes();
            self.kept.fetch_sub(
                freed.min(self.kept.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
            tracing::debug!(run = id, freed, "inspector: forgot a finished run");
        }
        true
    }

    /// Counts `added` bytes kept by run `id`, forgetting the oldest finished runs while
    /// the total is over the limit; `Err(limit)` when it stays over.
    fn charge(&self, id: u64, added: u64) -> Result<(), u64> {
        let max = self.config.limits.max_total_bytes;
        let total = self.kept.fetch_add(added, Ordering::Relaxed) + added;
        if total <= max {
            return Ok(());
        }
        let mut runs = lock(&self.runs);
        while self.kept.load(Ordering::Relaxed) > max {
            if !self.forget_oldest_done(&mut runs, Some(id)) {
                return Err(max);
            }
        }
        Ok(())
    }
}

/// The runs the inspector shows, and the clients it uses. Cheap to clone.
#[derive(Clone)]
pub struct Inspector {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector")
            .field("limits", &self.inner.config.limits)
            .finish_non_exhaustive()
    }
}

impl Inspector {
    /// An inspector with no runs.
    pub fn new(config: InspectorConfig) -> Self {
        let token = config.token.clone().unwrap_or_else(|| {
            format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            )
        });
        // No redirects followed: the proxy forwards them as they are, and the relay
        // shows them as the answer they are.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .unwrap_or_default();
        Inspector {
            inner: Arc::new(Inner {
                config,
                token,
                next_id: AtomicU64::new(1),
                runs: Mutex::new(BTreeMap::new()),
                http,
                proxy: Mutex::new(None),
                kept: AtomicU64::new(0),
            }),
        }
    }

    /// The token the API requires.
    pub fn token(&self) -> &str {
        &self.inner.token
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.inner.config.limits
    }

    /// The agent URL the page starts with.
    pub fn default_url(&self) -> Option<&str> {
        self.inner.config.default_url.as_deref()
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// Tells the page that a proxy listens at `listen` in front of `upstream`.
    pub fn set_proxy(&self, listen: &str, upstream: &str) {
        *lock(&self.inner.proxy) = Some(json!({ "listen": listen, "upstream": upstream }));
    }

    pub(crate) fn proxy_info(&self) -> Option<Value> {
        lock(&self.inner.proxy).clone()
    }

    /// Starts keeping a new run, forgetting the oldest finished one when the inspector
    /// is full.
    pub fn add_run(&self, new: NewRecording) -> Result<Arc<RunEntry>, InspectError> {
        let limits = self.inner.config.limits;
        let mut runs = lock(&self.inner.runs);
        while runs.len() >= limits.max_runs.max(1) {
            if !self.inner.forget_oldest_done(&mut runs, None) {
                return Err(InspectError::Full(runs.len()));
            }
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let started_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut recording = if new.source == Source::Relay || new.source == Source::Proxy {
            Recording::new(limits)
        } else {
            Recording::with_format(new.format, limits)
        };
        if let Some(input) = &new.input {
            recording.seed(input);
        }
        let entry = Arc::new(RunEntry {
            id,
            source: new.source,
            label: new.label,
            url: new.url,
            format: new.format,
            started_at_ms,
            start: Instant::now(),
            input: new.input,
            recording: Mutex::new(recording),
            version: watch::channel(0).0,
            cancel: CancellationToken::new(),
            replay: Mutex::new(None),
            owner: Arc::downgrade(&self.inner),
        });
        runs.insert(id, entry.clone());
        tracing::debug!(run = id, source = ?entry.source, "inspector: new run");
        Ok(entry)
    }

    /// The run with this id.
    pub fn run(&self, id: u64) -> Option<Arc<RunEntry>> {
        lock(&self.inner.runs).get(&id).cloned()
    }

    /// Every kept run, oldest first.
    pub fn runs(&self) -> Vec<Arc<RunEntry>> {
        lock(&self.inner.runs).values().cloned().collect()
    }

    /// Reads a whole recording (JSON Lines, SSE or protobuf, sniffed) into a finished
    /// run.
    pub fn add_recording(&self, name: &str, bytes: &[u8]) -> Result<Arc<RunEntry>, InspectError> {
        let format = Framing::sniff(bytes);
        let entry = self.add_run(NewRecording {
            source: Source::Recording,
            label: name.to_owned(),
            url: None,
            format,
            input: None,
        })?;
        // Through the entry, so that the recording counts in the budget of all runs.
        entry.push_at(bytes, 0.0);
        entry.recording().finish(End::Completed, 0.0);
        entry.touch();
        Ok(entry)
    }

    /// Checks that `url` is an absolute `http` or `https` URL.
    pub fn check_url(url: &str) -> Result<reqwest::Url, InspectError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| InspectError::BadUrl(format!("{url:?} is not a URL: {e}")))?;
        match parsed.scheme() {
            "http" | "https" => Ok(parsed),
            other => Err(InspectError::BadUrl(format!(
                "{url:?}: only http and https URLs are allowed, not {other}"
            ))),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
