//! Interrupts kept by the runtime, over HTTP, on every route that launches a run: the
//! plain `POST /{agent}`, a resumable run (`AGUI-Resumable: 1`), and the CopilotKit
//! runtime's `/agent/{id}/run` and single route. A resume the ledger refuses ends with
//! `RUN_ERROR` and its code before the agent runs (the agent counts its invocations);
//! a resumed run that fails leaves the answer open; two identical resumes at once run
//! the answer once; another owner's answer is unknown.
//!
//! Each scenario runs on the in-memory stores and on a real Redis (`AGUI_TEST_REDIS_URL`,
//! by default `redis://127.0.0.1:6379`; skipped without one, a failure under
//! `AGUI_REQUIRE_REDIS=1`), each test under a key prefix of its own.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agui_sdk_core::types::RunFinishedOutcome;
use agui_sdk_core::{Event, Interrupt, RunAgentInput};
use agui_sdk_redis::{RedisRunStore, RunLimits};
use agui_sdk_server::copilotkit::CopilotRuntime;
use agui_sdk_server::runs::{InterruptLedger, Owner, Resumable, RunStore};
use agui_sdk_server::{agent_fn, AgentError, AgentRouter, Emitter, RunContext, Shutdown};
use common::{start, types, Client, TestServer};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

const AGENT: &str = "approver";
const TOKEN: &str = "interrupts-test-resume-token-0123456789";

/// What the agent did: every invocation, every run of its resumed branch, the answers
/// it read; and what it is told: fail its next resumed run, hold resumed runs until the
/// gate gives a permit.
struct Counts {
    calls: AtomicUsize,
    resumed: AtomicUsize,
    read: Mutex<Vec<String>>,
    fail_next_resume: AtomicBool,
    hold: AtomicBool,
    gate: Semaphore,
}

impl Counts {
    fn new() -> Self {
        Counts {
            calls: AtomicUsize::new(0),
            resumed: AtomicUsize::new(0),
            read: Mutex::new(Vec::new()),
            fail_next_resume: AtomicBool::new(false),
            hold: AtomicBool::new(false),
            gate: Semaphore::new(0),
        }
    }
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
    fn resumed(&self) -> usize {
        self.resumed.load(Ordering::SeqCst)
    }
}

#[derive(serde::Deserialize)]
struct Approval {
    approved: bool,
}

/// On a first run, pauses on two interrupts: `approve` (a `responseSchema` requiring
/// `{approved: boolean}`; already expired on a thread whose id starts with `expired`)
/// and `cc` (no schema). On a resumed run, reads the answers and says what they were.
fn approver(counts: Arc<Counts>) -> agui_sdk_server::FnAgent {
    agent_fn(move |input: RunAgentInput, ctx: RunContext, tx: Emitter| {
        let c = counts.clone();
        async move {
            c.calls.fetch_add(1, Ordering::SeqCst);
            let answers = ctx.answers().clone();
            if let Some(answer) = answers.get("approve") {
                c.resumed.fetch_add(1, Ordering::SeqCst);
                if c.hold.load(Ordering::SeqCst) {
                    c.gate
                        .acquire()
                        .await
                        .map_err(AgentError::internal)?
                        .forget();
                }
                if c.fail_next_resume.swap(false, Ordering::SeqCst) {
                    return Err(
                        AgentError::public("the mail server is down").with_code("mail_down")
                    );
                }
                let approved = answer.parse::<Approval>()?.is_some_and(|a| a.approved);
                let cc = answers.get("cc").is_some_and(|a| a.is_resolved());
                let said = format!("approved={approved} cc={cc}");
                c.read.lock().unwrap().push(said.clone());
                tx.text(said).await?;
                return Ok(());
            }
            let mut approve = Interrupt::new("approve", "approval")
                .with_message("Send the email?")
                .with_response_schema(json!({
                    "type": "object",
                    "properties": { "approved": { "type": "boolean" } },
                    "required": ["approved"]
                }));
            if input.thread_id.starts_with("expired") {
                approve = approve.with_expires_at("2001-01-01T00:00:00.000Z");
            }
            let cc = Interrupt::new("cc", "confirmation").with_message("Copy the team?");
            tx.finish_with_interrupts(vec![approve, cc]).await
        }
    })
}

/// The route a scenario sends its runs through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `POST /approver`, streamed to the response.
    Plain,
    /// `POST /approver` with `AGUI-Resumable: 1` and a resume token.
    Resumable,
    /// The CopilotKit runtime's `POST /copilotkit/agent/approver/run`.
    CopilotKit,
    /// The CopilotKit runtime's single route, method `agent/run`.
    Single,
}

impl Route {
    fn copilotkit(self) -> bool {
        matches!(self, Route::CopilotKit | Route::Single)
    }
}

/// The store a scenario runs on: the routes' in-memory default, or a real Redis.
type Store = Option<Arc<dyn RunStore>>;

/// A Redis store under a prefix of its own, or `None` (and a line saying the test is
/// skipped) when no Redis answers; a failure under `AGUI_REQUIRE_REDIS=1`.
async fn redis(test: &str) -> Option<Arc<dyn RunStore>> {
    let url = agui_sdk_testkit::redis::url(test)?;
    let prefix = agui_sdk_testkit::redis::prefix("intr");
    let store = tokio::time::timeout(
        Duration::from_secs(10),
        RedisRunStore::connect(&url, &prefix, RunLimits::shared()),
    )
    .await
    .unwrap_or_else(|_| panic!("{test}: Redis at {url} answers but connecting timed out"))
    .unwrap_or_else(|e| panic!("{test}: Redis at {url} answers but the store cannot connect: {e}"));
    Some(Arc::new(store))
}

struct Setup {
    srv: TestServer,
    route: Route,
    counts: Arc<Counts>,
    next_run: AtomicUsize,
}

/// Serves the agent on `route` over `store`, each request owned by its `X-User` header
/// (what an application's authentication layer would establish; anonymous without).
async fn serve(route: Route, store: Store) -> Setup {
    let counts = Arc::new(Counts::new());
    let shutdown = Shutdown::new();
    let agent = approver(counts.clone());
    let app = match route {
        Route::Plain => {
            let mut r = AgentRouter::new().agent(AGENT, agent).verify(true);
            if let Some(store) = store {
                let ledger: Arc<dyn InterruptLedger> = store;
                r = r.interrupt_ledger(ledger);
            }
            r.shutdown(shutdown.clone()).into_router()
        }
        Route::Resumable => {
            let resumable = match store {
                Some(store) => Resumable::new(store),
                None => Resumable::default(),
            };
            AgentRouter::new()
                .agent(AGENT, agent)
                .verify(true)
                .resumable(resumable)
                .shutdown(shutdown.clone())
                .into_router()
        }
        Route::CopilotKit | Route::Single => {
            let mut rt = CopilotRuntime::new().agent(AGENT, agent);
            if let Some(store) = store {
                rt = rt.store(store);
            }
            axum::Router::new().nest("/copilotkit", rt.shutdown(shutdown.clone()).into_router())
        }
    };
    let app = app.layer(axum::middleware::from_fn(
        |mut req: axum::extract::Request, next: axum::middleware::Next| async move {
            if let Some(user) = req.headers().get("x-user").and_then(|v| v.to_str().ok()) {
                let owner = Owner(user.to_owned());
                req.extensions_mut().insert(owner);
            }
            next.run(req).await
        },
    ));
    Setup {
        srv: start(app, shutdown).await,
        route,
        counts,
        next_run: AtomicUsize::new(0),
    }
}

/// What a run's request got.
#[derive(Debug)]
enum Reply {
    /// A response other than 200: its status and `code`.
    Refused(u16, String),
    /// The run's events.
    Events(Vec<Event>),
}

impl Reply {
    fn events(&self) -> &[Event] {
        match self {
            Reply::Events(e) => e,
            Reply::Refused(status, code) => panic!("expected a run, got {status} {code}"),
        }
    }

    /// The `RUN_ERROR` that ends the run: its code and message. No agent output before
    /// it.
    fn run_error(&self) -> (String, String) {
        let events = self.events();
        let last = events.last().expect("the run has events");
        let (message, code) = common::run_error(last);
        (code.unwrap_or_default().to_owned(), message.to_owned())
    }

    /// The code of the `RUN_ERROR` of a run the ledger refused, after asserting that
    /// none of the agent's output went out.
    fn refusal(&self) -> (String, String) {
        let t = types(self.events());
        assert!(
            !t.iter().any(|t| t.starts_with("TEXT_MESSAGE")),
            "a refused run sends nothing of the agent: {t:?}"
        );
        self.run_error()
    }

    /// The text the run's messages carried.
    fn text(&self) -> String {
        self.events()
            .iter()
            .filter_map(|e| match e {
                Event::TextMessageContent(c) => Some(c.delta.clone()),
                _ => None,
            })
            .collect()
    }

    /// The interrupts the run paused on (`None`: it did not pause).
    fn paused_on(&self) -> Option<Vec<String>> {
        match self.events().last() {
            Some(Event::RunFinished(f)) => match &f.outcome {
                Some(RunFinishedOutcome::Interrupt(o)) => {
                    Some(o.interrupts.iter().map(|i| i.id.clone()).collect())
                }
                _ => None,
            },
            other => panic!("expected RUN_FINISHED, got {other:?}"),
        }
    }

    fn finished(&self) -> bool {
        types(self.events()).last() == Some(&"RUN_FINISHED")
    }
}

fn approve(approved: Value) -> Value {
    json!({ "interruptId": "approve", "status": "resolved", "payload": approved })
}

fn cc_cancelled() -> Value {
    json!({ "interruptId": "cc", "status": "cancelled" })
}

/// The answer that resumes a paused thread: approved, copy cancelled.
fn answer() -> Value {
    json!([approve(json!({ "approved": true })), cc_cancelled()])
}

impl Setup {
    fn fresh_run(&self) -> String {
        format!("r{}", self.next_run.fetch_add(1, Ordering::SeqCst))
    }

    /// Sends a run on `thread` as `user`, with `resume` when given: `run` is its runId
    /// on the CopilotKit routes (a resume there reuses the paused run's), a fresh one
    /// on the others (a resumable runId starts a run once).
    async fn send(
        &self,
        user: Option<&str>,
        thread: &str,
        run: &str,
        resume: Option<Value>,
    ) -> Reply {
        let run_id = if self.route.copilotkit() {
            run.to_owned()
        } else {
            self.fresh_run()
        };
        let mut input = json!({
            "threadId": thread, "runId": run_id, "messages": [],
            "tools": [], "context": [], "forwardedProps": {}, "state": {},
        });
        if let Some(r) = resume {
            input["resume"] = r;
        }
        let (path, body) = match self.route {
            Route::Plain | Route::Resumable => (format!("/{AGENT}"), input),
            Route::CopilotKit => (format!("/copilotkit/agent/{AGENT}/run"), input),
            Route::Single => (
                "/copilotkit".to_owned(),
                json!({"method": "agent/run", "params": {"agentId": AGENT}, "body": input}),
            ),
        };
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(u) = user {
            headers.push(("X-User", u));
        }
        if self.route == Route::Resumable {
            headers.push(("AGUI-Resumable", "1"));
            headers.push(("AGUI-Resume-Token", TOKEN));
        }
        let bytes = serde_json::to_vec(&body).unwrap();
        let mut c = Client::request(self.srv.addr, "POST", &path, &headers, &bytes).await;
        if c.status != 200 {
            let status = c.status;
            let body = c.json().await;
            return Reply::Refused(status, body["code"].as_str().unwrap_or_default().into());
        }
        if self.route == Route::Resumable {
            assert_eq!(
                c.header("agui-first-seq"),
                Some("1"),
                "the run is resumable"
            );
        }
        Reply::Events(c.events().await)
    }

    /// Pauses `thread` as `user` with run `run`: the agent's first run.
    async fn pause(&self, user: Option<&str>, thread: &str, run: &str) {
        let before = self.counts.calls();
        let r = self.send(user, thread, run, None).await;
        assert_eq!(
            r.paused_on(),
            Some(vec!["approve".to_owned(), "cc".to_owned()]),
            "{:?}",
            types(r.events())
        );
        assert_eq!(self.counts.calls(), before + 1);
    }
}

/// A resume the ledger refuses: the `RUN_ERROR` code and message; the agent was not
/// invoked.
async fn refused(
    s: &Setup,
    user: Option<&str>,
    thread: &str,
    run: &str,
    resume: Option<Value>,
) -> (String, String) {
    let before = s.counts.calls();
    let r = s.send(user, thread, run, resume).await;
    let got = r.refusal();
    assert_eq!(
        s.counts.calls(),
        before,
        "a refused run never reaches the agent ({got:?})"
    );
    got
}

async fn every_refusal_is_a_run_error_before_the_agent(route: Route, store: Store) {
    let s = serve(route, store).await;
    s.pause(None, "t", "p1").await;

    // A run without resume on the paused thread.
    let (code, message) = refused(&s, None, "t", "p2", None).await;
    assert_eq!(code, "interrupt_resume_required", "{message}");
    assert!(
        message.contains("'approve'") && message.contains("'cc'"),
        "{message}"
    );

    // Part of the open set answered.
    let partial = json!([approve(json!({ "approved": true }))]);
    let (code, message) = refused(&s, None, "t", "p1", Some(partial)).await;
    assert_eq!(code, "interrupt_unanswered", "{message}");
    assert!(message.contains("'cc'"), "{message}");

    // The same interrupt answered twice.
    let twice = json!([
        approve(json!({ "approved": true })),
        approve(json!({ "approved": false })),
        cc_cancelled()
    ]);
    let (code, message) = refused(&s, None, "t", "p1", Some(twice)).await;
    assert_eq!(code, "interrupt_duplicate", "{message}");
    assert!(message.contains("'approve'"), "{message}");

    // An id that is not open, besides the right answers.
    let unknown = json!([
        approve(json!({ "approved": true })),
        cc_cancelled(),
        { "interruptId": "nope", "status": "cancelled" }
    ]);
    let (code, message) = refused(&s, None, "t", "p1", Some(unknown)).await;
    assert_eq!(code, "interrupt_unknown", "{message}");
    assert!(message.contains("'nope'"), "{message}");

    // Payloads against the schema: the failing path in the message.
    let wrong_type = json!([approve(json!({ "approved": "yes" })), cc_cancelled()]);
    let (code, message) = refused(&s, None, "t", "p1", Some(wrong_type)).await;
    assert_eq!(code, "interrupt_invalid_payload", "{message}");
    assert!(
        message.contains("'approve'") && message.contains("at '/approved'"),
        "{message}"
    );
    let missing = json!([approve(json!({ "approve": true })), cc_cancelled()]);
    let (code, message) = refused(&s, None, "t", "p1", Some(missing)).await;
    assert_eq!(code, "interrupt_invalid_payload", "{message}");
    assert!(
        message.contains("at ''") && message.contains("approved"),
        "{message}"
    );

    // None of them consumed anything: the right answer resumes the run.
    assert_eq!(s.counts.resumed(), 0);
    let r = s.send(None, "t", "p1", Some(answer())).await;
    assert!(r.finished(), "{:?}", types(r.events()));
    assert_eq!(r.text(), "approved=true cc=false");
    assert_eq!((s.counts.calls(), s.counts.resumed()), (2, 1));

    // Replayed after that success.
    let (code, message) = refused(&s, None, "t", "p1", Some(answer())).await;
    assert_eq!(code, "interrupt_answered", "{message}");
    assert!(message.contains("already answered"), "{message}");

    // A thread with nothing open: any answer is unknown.
    let (code, message) = refused(&s, None, "other", "o1", Some(answer())).await;
    assert_eq!(code, "interrupt_unknown", "{message}");

    // An interrupt whose expiresAt has passed.
    s.pause(None, "expired-t", "e1").await;
    let (code, message) = refused(&s, None, "expired-t", "e1", Some(answer())).await;
    assert_eq!(code, "interrupt_expired", "{message}");
    assert!(message.contains("'approve'"), "{message}");

    assert_eq!((s.counts.calls(), s.counts.resumed()), (3, 1));
    assert_eq!(*s.counts.read.lock().unwrap(), ["approved=true cc=false"]);
}

async fn a_resumed_run_that_fails_leaves_the_answer_open(route: Route, store: Store) {
    let s = serve(route, store).await;
    s.pause(None, "t", "p1").await;
    s.counts.fail_next_resume.store(true, Ordering::SeqCst);
    let r = s.send(None, "t", "p1", Some(answer())).await;
    let (code, message) = r.run_error();
    assert_eq!(code, "mail_down", "{message}");
    assert_eq!((s.counts.calls(), s.counts.resumed()), (2, 1));

    // The same answer again, at once: the failed run released its claim.
    let r = s.send(None, "t", "p1", Some(answer())).await;
    assert!(r.finished(), "{:?}", r.events());
    assert_eq!(r.text(), "approved=true cc=false");
    assert_eq!((s.counts.calls(), s.counts.resumed()), (3, 2));

    // Consumed by that success.
    let (code, message) = refused(&s, None, "t", "p1", Some(answer())).await;
    assert_eq!(code, "interrupt_answered", "{message}");
    assert_eq!(*s.counts.read.lock().unwrap(), ["approved=true cc=false"]);
}

async fn two_identical_resumes_at_once_run_the_answer_once(route: Route, store: Store) {
    let s = Arc::new(serve(route, store).await);
    s.pause(None, "t", "p1").await;
    s.counts.hold.store(true, Ordering::SeqCst);
    let send =
        |s: Arc<Setup>| tokio::spawn(async move { s.send(None, "t", "p1", Some(answer())).await });
    let (a, b) = (send(s.clone()), send(s.clone()));
    // The run that proceeds is held in the agent: the other one ends first.
    common::wait_for(10, || a.is_finished() || b.is_finished()).await;
    // Two permits: were both to proceed, both end, and the counts say so.
    s.counts.gate.add_permits(2);
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    let (won, lost) = if matches!(&a, Reply::Events(e) if types(e).last() == Some(&"RUN_FINISHED"))
    {
        (a, b)
    } else {
        (b, a)
    };
    assert!(won.finished(), "one resume proceeds: {won:?} / {lost:?}");
    assert_eq!(won.text(), "approved=true cc=false");
    match &lost {
        Reply::Events(_) => {
            let (code, message) = lost.refusal();
            assert_eq!(code, "interrupt_answered", "{message}");
            assert!(
                message.contains("being answered by another run"),
                "{message}"
            );
        }
        // The CopilotKit runtime runs one run at a time per thread: the second request
        // is refused before its run starts.
        Reply::Refused(status, code) => {
            assert!(route.copilotkit(), "{status} {code}");
            assert_eq!((*status, code.as_str()), (409, "thread_running"));
        }
    }
    println!("{route:?}: the second identical resume got {lost:?}");
    assert_eq!(s.counts.resumed(), 1, "the resumed branch ran once");
    assert_eq!(s.counts.calls(), 2);
    assert_eq!(*s.counts.read.lock().unwrap(), ["approved=true cc=false"]);

    // Afterwards the answer is consumed.
    let (code, message) = refused(&s, None, "t", "p1", Some(answer())).await;
    assert_eq!(code, "interrupt_answered", "{message}");
}

async fn another_owners_answer_is_unknown(route: Route, store: Store) {
    let s = serve(route, store).await;
    s.pause(Some("ann"), "t", "p1").await;
    let (code, message) = refused(&s, Some("bob"), "t", "p1", Some(answer())).await;
    assert_eq!(code, "interrupt_unknown", "{message}");
    // The anonymous owner is another owner too.
    let (code, message) = refused(&s, None, "t", "p1", Some(answer())).await;
    assert_eq!(code, "interrupt_unknown", "{message}");
    assert_eq!(s.counts.resumed(), 0);
    // Nothing was consumed: the owner's answer resumes the run.
    let r = s.send(Some("ann"), "t", "p1", Some(answer())).await;
    assert!(r.finished(), "{:?}", r.events());
    assert_eq!(r.text(), "approved=true cc=false");
    assert_eq!((s.counts.calls(), s.counts.resumed()), (2, 1));
}

/// Each scenario on each route, on the in-memory stores (`memory::route::name`) and on
/// a real Redis (`redis::route::name`).
macro_rules! on_each_route {
    ($($name:ident),* $(,)?) => {
        on_each_route!(@route plain, Plain; $($name),*);
        on_each_route!(@route resumable, Resumable; $($name),*);
        on_each_route!(@route copilotkit, CopilotKit; $($name),*);
        on_each_route!(@route single_route, Single; $($name),*);
    };
    (@route $m:ident, $route:ident; $($name:ident),*) => {
        mod $m {
            mod memory {
                $(#[tokio::test]
                async fn $name() {
                    super::super::$name(super::super::Route::$route, None).await
                })*
            }
            mod redis {
                $(#[tokio::test]
                async fn $name() {
                    let test = concat!(stringify!($m), "::redis::", stringify!($name));
                    if let Some(store) = super::super::redis(test).await {
                        super::super::$name(super::super::Route::$route, Some(store)).await
                    }
                })*
            }
        }
    };
}

on_each_route!(
    every_refusal_is_a_run_error_before_the_agent,
    a_resumed_run_that_fails_leaves_the_answer_open,
    two_identical_resumes_at_once_run_the_answer_once,
    another_owners_answer_is_unknown,
);
