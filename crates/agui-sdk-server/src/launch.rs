//! The one launch of a run, for every route that starts one: an admitted request (see
//! [`crate::admission`]) and where its events go ([`Target`]) become the response.
//!
//! It owns everything between admission and the wire: the run's span, its context and
//! lifecycle guard, the start of the agent, and then either the plain run's stream
//! (its events encoded inside the HTTP body, the run cancelled when the client goes
//! away) or, for a run kept in the run store, its producer on a task of its own and the
//! response as the run's first viewer. The agent routes and the CopilotKit runtime's
//! routes only read their request, choose the target and map their errors.

#[cfg(any(feature = "resumable", feature = "copilotkit"))]
use std::collections::HashSet;
#[cfg(any(feature = "resumable", feature = "copilotkit"))]
use std::sync::Arc;

use std::sync::Arc as Shared;

use agui_sdk_agent::runs::{InterruptKey, Interrupts};
use agui_sdk_core::RunAgentInput;
use axum::response::Response;

use crate::agent::Agent;
use crate::budget::RunPermit;
use crate::config::{ServerConfig, VerifierFactory};
use crate::context::RunContext;
use crate::engine::RunDriver;
use crate::lifecycle::{default_verifier, LifecycleGuard};
use crate::response::{streaming_response, RunStream, StreamSettings};
#[cfg(any(feature = "resumable", feature = "copilotkit"))]
use crate::runs::{
    producer::{self, ProducerSettings, Production, Registry, ThreadRun, ViewerGuard},
    viewer::{self, ViewerSettings},
    Fence, RunKey, RunStore,
};
use crate::shutdown::Shutdown;

/// The routes that launch runs: they name the run's span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `POST /{agent}` ([`crate::router`]): span `run`.
    Agent,
    /// The CopilotKit runtime's routes: span `copilotkit_run` for a thread's run,
    /// `copilotkit_suggest` for a run kept nowhere.
    #[cfg(feature = "copilotkit")]
    CopilotKit,
}

/// An admitted run of one agent.
pub(crate) struct Run<'a> {
    /// The route that launches it.
    pub route: Route,
    /// The agent's name.
    pub name: &'a str,
    /// The agent.
    pub agent: &'a Shared<dyn Agent>,
    /// The request's owner (`""`: the anonymous owner): whose thread's interrupts the
    /// run answers and raises.
    pub owner: &'a str,
    /// The request's input.
    pub input: RunAgentInput,
    /// The run slot and memory the run holds until it ends.
    pub permit: RunPermit,
}

/// Where a run's events go.
pub(crate) enum Target {
    /// Straight to this response, encoded as they come; the run is cancelled when the
    /// client goes away.
    Plain(StreamSettings),
    /// Into the run store, by a producer of their own; the response is the run's first
    /// viewer.
    #[cfg(any(feature = "resumable", feature = "copilotkit"))]
    Stored(Stored),
}

/// A run kept in the run store (a resumable run, or a CopilotKit thread's run), created
/// there by the route (which found it new).
#[cfg(any(feature = "resumable", feature = "copilotkit"))]
pub(crate) struct Stored {
    /// The store.
    pub store: Arc<dyn RunStore>,
    /// The runs this replica produces.
    pub registry: Arc<Registry>,
    /// The run's key.
    pub key: RunKey,
    /// The fence the store gave its producer.
    pub fence: Fence,
    /// The producer's timing.
    pub producer: ProducerSettings,
    /// How the response writes.
    pub viewer: ViewerSettings,
    /// Whether the response says where it starts (`AGUI-First-Seq`, `AGUI-Head-Seq`:
    /// a resumable run's).
    pub seq_headers: bool,
    /// For a thread's run: the ids of the messages the thread holds already (the
    /// run's `RUN_STARTED` records the request's input less them).
    pub thread: Option<Arc<HashSet<String>>>,
}

/// What launches the runs of one router: its configuration (verification, shutdown
/// grace), shutdown switch, verifier and interrupt ledger.
pub(crate) struct Launcher {
    config: ServerConfig,
    shutdown: Shutdown,
    verifier: Option<VerifierFactory>,
    interrupts: Interrupts,
}

impl Launcher {
    pub(crate) fn new(
        config: ServerConfig,
        shutdown: Shutdown,
        verifier: Option<VerifierFactory>,
        interrupts: Interrupts,
    ) -> Self {
        Launcher {
            config,
            shutdown,
            verifier,
            interrupts,
        }
    }

    /// Starts `run` towards `target`: its response.
    pub(crate) fn launch(&self, run: Run<'_>, target: Target) -> Response {
        let Run {
            route,
            name,
            agent,
            owner,
            input,
            permit,
        } = run;
        let ledger_key = InterruptKey::derive(owner, name, &input.thread_id);
        let span = span(route, &target, name, &input);
        let (ctx, guard) = span.in_scope(|| {
            if route == Route::Agent {
                tracing::info!(encoding = ?target.encoding(), messages = input.messages.len(), "run started");
            }
            self.prepare(name, &input)
        });
        match target {
            Target::Plain(settings) => {
                let driver = self.start(agent, ledger_key, input, ctx, guard, &span);
                streaming_response(&settings, RunStream::new(driver, &settings, span, permit))
            }
            #[cfg(any(feature = "resumable", feature = "copilotkit"))]
            Target::Stored(stored) => {
                let local = stored.registry.insert(&stored.key);
                // The response is the run's first viewer from the start, so that a detach
                // policy never sees the run unwatched before it is served.
                let response = viewer::response(
                    stored.store.clone(),
                    stored.key.clone(),
                    input.run_id.clone(),
                    0,
                    stored.seq_headers.then_some(0),
                    stored.viewer,
                    ViewerGuard::new(Some(local.clone())),
                );
                let thread = stored.thread.map(|known_message_ids| ThreadRun {
                    input: Some(input.clone()),
                    known_message_ids,
                    entry: Default::default(),
                });
                let driver = self.start(agent, ledger_key, input, ctx, guard, &span);
                let production = Production {
                    store: stored.store,
                    registry: stored.registry,
                    local,
                    key: stored.key,
                    fence: stored.fence,
                    settings: stored.producer,
                    permit,
                    thread,
                };
                tokio::spawn(tracing::Instrument::instrument(
                    producer::produce(production, driver),
                    span,
                ));
                response
            }
        }
    }

    /// The context and lifecycle guard of a run of the agent `name` on `input`: the
    /// verifier when verification is on, the protocol version the client can take,
    /// whether the client has a state.
    fn prepare(&self, name: &str, input: &RunAgentInput) -> (RunContext, LifecycleGuard) {
        let ctx = RunContext::new(
            name,
            input.thread_id.clone(),
            input.run_id.clone(),
            self.shutdown.token(),
        );
        let verifier = self.config.verify.then(|| match &self.verifier {
            Some(f) => f(),
            None => default_verifier(),
        });
        let guard = LifecycleGuard::new(input.thread_id.clone(), input.run_id.clone(), verifier)
            .declare_protocol_version(Some(declared_version(input.protocol_version.as_deref())))
            .input_state(input.state.is_some());
        (ctx, guard)
    }

    /// Starts `agent` on `input` with the context and guard of [`prepare`](Self::prepare),
    /// inside `span`, behind the interrupt ledger's rules for `thread` (the resume is
    /// checked before the agent starts; see [`Interrupts::run`]).
    fn start(
        &self,
        agent: &Shared<dyn Agent>,
        thread: InterruptKey,
        input: RunAgentInput,
        ctx: RunContext,
        guard: LifecycleGuard,
        span: &tracing::Span,
    ) -> RunDriver {
        let _entered = span.enter();
        let stream = self
            .interrupts
            .run(agent.clone(), thread, input, ctx.clone());
        RunDriver::new(
            stream,
            guard,
            ctx,
            self.shutdown.token(),
            self.config.shutdown_grace,
        )
    }
}

impl Target {
    /// The encoding of the response.
    fn encoding(&self) -> agui_sdk_core::encoding::Encoding {
        match self {
            Target::Plain(s) => s.encoding,
            #[cfg(any(feature = "resumable", feature = "copilotkit"))]
            Target::Stored(s) => s.viewer.encoding,
        }
    }
}

/// The span of a run (its ids are the client's: escaped for whatever subscriber writes
/// the line).
#[cfg_attr(not(feature = "copilotkit"), allow(unused_variables))]
fn span(route: Route, target: &Target, name: &str, input: &RunAgentInput) -> tracing::Span {
    use agui_sdk_core::Escaped;
    let (thread_id, run_id) = (Escaped(&input.thread_id), Escaped(&input.run_id));
    match route {
        Route::Agent => {
            tracing::info_span!("run", agent = %name, thread_id = %thread_id, run_id = %run_id)
        }
        #[cfg(feature = "copilotkit")]
        Route::CopilotKit => match target {
            Target::Plain(_) => tracing::info_span!(
                "copilotkit_suggest",
                agent = %name,
                thread_id = %thread_id,
                run_id = %run_id
            ),
            Target::Stored(_) => tracing::info_span!(
                "copilotkit_run",
                agent = %name,
                thread_id = %thread_id,
                run_id = %run_id
            ),
        },
    }
}

/// The protocol version to declare to a client that declared `client`: the client's own
/// when it is a `MAJOR.MINOR` this crate speaks (same or older), else this crate's.
pub(crate) fn declared_version(client: Option<&str>) -> std::borrow::Cow<'static, str> {
    use agui_sdk_core::semantics::ProtocolVersion;
    use std::borrow::Cow;
    // Written once: every run that declares no older version declares this one.
    static CURRENT: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| ProtocolVersion::current().to_string());
    let current = ProtocolVersion::current();
    match client {
        Some(v) if v.split('.').count() == 2 => match ProtocolVersion::parse(v) {
            Some(p) if p <= current => Cow::Owned(v.to_owned()),
            _ => Cow::Borrowed(CURRENT.as_str()),
        },
        _ => Cow::Borrowed(CURRENT.as_str()),
    }
}
