//! `agui serve`: runs the demo agents over HTTP, at `POST /{name}` and through the
//! CopilotKit runtime at `/copilotkit`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::io::CliError;

/// Arguments of `agui serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub addr: SocketAddr,
    /// Pause between streamed pieces, in milliseconds (0 for tests).
    #[arg(long, default_value_t = 40)]
    pub delay_ms: u64,
    /// Seconds in-flight runs may continue after SIGINT/SIGTERM; connections get one
    /// more second to finish, then the process exits.
    #[arg(long, default_value_t = 10)]
    pub grace_secs: u64,
    /// Most runs at once, whatever their size (default: no count, only the memory
    /// budget); a run beyond it is refused with `503` code `too_many_runs`.
    #[arg(long, value_name = "N")]
    pub max_runs: Option<usize>,
    /// Memory of all runs together, in MiB (each run counted at its request's parsed
    /// size plus 64 KiB); a run that does not fit is refused with `503` code
    /// `memory_budget`. `0` turns the budget off.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub memory_budget: usize,
    /// Where resumable runs (requests with `AGUI-Resumable: 1`) are kept: `memory`
    /// (this process), `redis://HOST:PORT[/DB]` or `postgres://USER@HOST:PORT/DB` (shared
    /// by every replica using it; PostgreSQL's tables in the schema `agui`), or `off`.
    /// The CopilotKit runtime's threads are kept there too (with `off`, in this process's
    /// memory).
    #[arg(long, default_value = "memory")]
    pub store: String,
    /// Most CopilotKit threads the store keeps, every user's together (default: 10,000
    /// in memory, 100,000 in Redis or PostgreSQL): a new thread forgets the one idle the
    /// longest, and is refused with `503` code `threads_full` when every thread is
    /// running.
    #[arg(long, value_name = "N")]
    pub max_threads: Option<u64>,
    /// This replica's name in a shared store (default: random).
    #[arg(long)]
    pub replica_id: Option<String>,
    /// Lease of a run's producer, in milliseconds: a replica that dies holding runs
    /// (resumable runs, CopilotKit runtime runs) has them closed (`RUN_ERROR` code
    /// `run_lost`) by another once it expires.
    #[arg(long, default_value_t = 10_000)]
    pub lease_ms: u64,
    /// How long a resumed run's claim on the answers it brings lasts without renewal
    /// (`30s`, `2s`, `500ms`; at least 1 s): a replica that dies while resuming a run
    /// holds its answers this long, then the same answer can be sent again (elsewhere,
    /// with a shared store). The claim is renewed every third of it while the run goes on.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    pub interrupt_claim_ttl: Duration,
    /// A model endpoint (`https://api.openai.com/v1`, `https://api.anthropic.com/v1`,
    /// `http://127.0.0.1:11434/v1`, …), spoken to in the API `--model-api` names: adds
    /// an agent `chat` backed by it.
    #[arg(
        long,
        value_name = "URL",
        requires = "model",
        conflicts_with = "openai_url"
    )]
    pub model_url: Option<String>,
    /// The API `--model-url` speaks: `chat` (OpenAI-compatible chat completions),
    /// `responses` (OpenAI Responses) or `anthropic` (Anthropic Messages).
    #[arg(long, value_name = "API", default_value = "chat", value_parser = ["chat", "responses", "anthropic"])]
    pub model_api: String,
    /// An OpenAI-compatible chat-completions endpoint: the same as `--model-url URL
    /// --model-api chat`.
    #[arg(long, value_name = "URL", requires = "model")]
    pub openai_url: Option<String>,
    /// The model the `chat` agent asks for.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The environment variable holding the endpoint's API key (never a flag: a key on
    /// a command line is seen by every process of the machine); default
    /// `OPENAI_API_KEY`, or `ANTHROPIC_API_KEY` for `--model-api anthropic`. Unset: no
    /// key is sent.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Turns Anthropic's extended thinking on with this budget of tokens (at least
    /// 1024; the answer's `max_tokens` is raised above it when needed).
    #[arg(long, value_name = "TOKENS")]
    pub thinking_budget: Option<u32>,
    /// How much an OpenAI reasoning model reasons: `low`, `medium` or `high` (sent to
    /// Responses as `reasoning.effort`, to chat completions as `reasoning_effort`).
    #[arg(long, value_name = "EFFORT", value_parser = ["low", "medium", "high"])]
    pub reasoning_effort: Option<String>,
    /// An MCP server the `chat` agent offers the tools of, started as this command
    /// (split as a shell splits words: `--mcp 'npx -y @modelcontextprotocol/server-everything'`);
    /// repeatable. It gets only the variables of `--mcp-env`.
    #[arg(long, value_name = "COMMAND ARGS…", requires = "model")]
    pub mcp: Vec<String>,
    /// A variable every `--mcp` server gets: `NAME=VALUE`, or `NAME` alone for this
    /// process's value (a secret is better passed so: a command line is seen by every
    /// process of the machine); repeatable.
    #[arg(long, value_name = "NAME=VALUE")]
    pub mcp_env: Vec<String>,
    /// An MCP server over Streamable HTTP (`https://mcp.example.com/mcp`) the `chat`
    /// agent offers the tools of; repeatable.
    #[arg(long, value_name = "URL", requires = "model")]
    pub mcp_url: Vec<String>,
    /// Tools of the `chat` agent whose calls wait for a user's approval, by the name
    /// the model sees (`add`, an MCP tool's offered name), or `all`: such a call ends
    /// the run with an interrupt, and the next run's answer runs it (once) or declines
    /// it; comma-separated or repeated.
    #[arg(long, value_name = "TOOL,…", value_delimiter = ',', requires = "model")]
    pub approve_tools: Vec<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// The `chat` agent `--model-url` (or `--openai-url`) asks for, with one
/// demonstration server-side tool (`add`).
fn chat_agent(args: &ServeArgs) -> Result<Option<agui_sdk_server::FnAgent>, CliError> {
    let (flag, url, api) = match (&args.model_url, &args.openai_url) {
        (Some(url), _) => ("--model-url", url, args.model_api.as_str()),
        (None, Some(_)) if args.model_api != "chat" => {
            return Err(CliError::Usage(format!(
                "--openai-url is a chat-completions endpoint; for --model-api {} give it as --model-url URL",
                args.model_api
            )));
        }
        (None, Some(url)) => ("--openai-url", url, "chat"),
        (None, None) => {
            if args.model.is_some() {
                return Err(CliError::Usage(
                    "--model needs the endpoint it is asked of: --model-url URL (or --openai-url URL)".into(),
                ));
            }
            return Ok(None);
        }
    };
    let Some(model) = &args.model else {
        return Err(CliError::Usage(format!("{flag} needs --model NAME")));
    };
    let shown = agui_sdk_client::endpoint::redact_url(url);
    let (builder, default_key): (fn(String, String) -> agui_sdk_model::ModelAgentBuilder, _) =
        match api {
            "responses" => (
                |u, m| agui_sdk_model::ModelAgent::responses(u, m),
                "OPENAI_API_KEY",
            ),
            "anthropic" => (
                |u, m| agui_sdk_model::ModelAgent::anthropic(u, m),
                "ANTHROPIC_API_KEY",
            ),
            _ => (
                |u, m| agui_sdk_model::ModelAgent::chat_completions(u, m),
                "OPENAI_API_KEY",
            ),
        };
    let mut b = builder(url.clone(), model.clone())
        .description(format!("{model} at {shown}"))
        .forward_params(&["temperature", "max_tokens"])
        .tool(
            "add",
            "Adds two numbers and returns the sum.",
            |x: AddArgs, _ctx: agui_sdk_model::ToolContext| async move {
                Ok(agui_sdk_model::ToolResult::text((x.a + x.b).to_string()))
            },
        );
    if let Some(budget) = args.thinking_budget {
        // The answer's tokens include the thinking's: `max_tokens` is kept above it.
        let floor = u64::from(budget).saturating_add(4096);
        b = b
            .thinking(agui_sdk_model::Thinking::Budget(budget))
            .max_tokens(floor);
    }
    if let Some(effort) = &args.reasoning_effort {
        let effort = effort
            .parse::<agui_sdk_model::Effort>()
            .map_err(|e| CliError::Usage(format!("--reasoning-effort: {e}")))?;
        b = b.reasoning_effort(effort);
    }
    b = mcp_servers(args, b)?;
    for tool in args.approve_tools.iter().filter(|t| !t.is_empty()) {
        b = match tool.as_str() {
            "all" => b.approve_all_tools(agui_sdk_model::Approval::Always),
            name => b.approve_tool(name, agui_sdk_model::Approval::Always),
        };
    }
    let var = args.api_key_env.as_deref().unwrap_or(default_key);
    match std::env::var(var) {
        Ok(key) if !key.is_empty() => b = b.api_key(key),
        _ => tracing::info!(var = %var, "no API key in the environment: none is sent"),
    }
    b.build()
        .map(Some)
        .map_err(|e| CliError::Usage(format!("{flag} {shown} ({api}): {e}")))
}

/// The `--mcp` and `--mcp-url` servers added to `b`; a server named as an earlier one
/// (two `npx` commands) gets its position as a suffix.
fn mcp_servers(
    args: &ServeArgs,
    mut b: agui_sdk_model::ModelAgentBuilder,
) -> Result<agui_sdk_model::ModelAgentBuilder, CliError> {
    let mut env = Vec::new();
    for e in &args.mcp_env {
        match e.split_once('=') {
            Some((k, v)) if !k.is_empty() => env.push((k.to_owned(), v.to_owned())),
            Some(_) => {
                return Err(CliError::Usage(format!(
                    "--mcp-env {:?}: expected NAME=VALUE or NAME",
                    agui_sdk_core::Escaped(e).to_string()
                )))
            }
            None => match std::env::var(e) {
                Ok(v) => env.push((e.clone(), v)),
                Err(_) => {
                    return Err(CliError::Usage(format!(
                        "--mcp-env {e}: this process has no variable {e} to pass on"
                    )))
                }
            },
        }
    }
    let mut names = std::collections::HashSet::new();
    let mut servers = Vec::new();
    for command in &args.mcp {
        let words = shlex::split(command)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "--mcp {:?}: not a command (an empty one, or an unclosed quote)",
                    agui_sdk_core::Escaped(command).to_string()
                ))
            })?;
        let mut server = agui_sdk_model::McpServer::stdio(words[0].clone(), words[1..].to_vec());
        for (k, v) in &env {
            server = server.env(k.clone(), v.clone());
        }
        servers.push(server);
    }
    for url in &args.mcp_url {
        servers.push(agui_sdk_model::McpServer::http(url.clone()));
    }
    for (i, mut server) in servers.into_iter().enumerate() {
        if !names.insert(server.server_name().to_owned()) {
            let name = format!("{}-{}", server.server_name(), i + 1);
            names.insert(name.clone());
            server = server.name(&name);
        }
        b = b.mcp_server(server);
    }
    Ok(b)
}

/// A store that cannot be opened: its URL, and the cause (which a client library may
/// quote), with the password redacted.
fn store_error(url: &str, e: &dyn std::fmt::Display) -> CliError {
    let shown = agui_sdk_client::endpoint::redact_url(url);
    let cause = agui_sdk_client::endpoint::redact_url_in(&e.to_string(), url);
    CliError::Usage(format!("--store {shown}: {cause}"))
}

/// How long connections have to finish after shutdown starts: the runs' grace period and
/// one second for their last bytes.
fn config_drain(grace_secs: u64) -> Duration {
    Duration::from_secs(grace_secs).saturating_add(Duration::from_secs(1))
}

/// The run store `--store` names (`None` for `off`): every kind of run uses it, the
/// resumable runs and the CopilotKit runtime's threads.
async fn store(
    args: &ServeArgs,
) -> Result<Option<Arc<dyn agui_sdk_server::runs::RunStore>>, CliError> {
    Ok(match args.store.as_str() {
        "off" => None,
        "memory" => {
            let mut limits = agui_sdk_server::runs::RunLimits::default();
            if let Some(n) = args.max_threads {
                limits = limits.max_threads(n);
            }
            Some(Arc::new(agui_sdk_server::runs::InMemoryRunStore::new(
                limits,
            )))
        }
        url if url.starts_with("redis://") || url.starts_with("rediss://") => {
            let mut limits = agui_sdk_server::runs::RunLimits::shared();
            if let Some(n) = args.max_threads {
                limits = limits.max_threads(n);
            }
            let store = agui_sdk_redis::RedisRunStore::connect(url, "agui", limits)
                .await
                .map_err(|e| store_error(url, &e))?;
            Some(Arc::new(store))
        }
        url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            let mut limits = agui_sdk_server::runs::RunLimits::shared();
            if let Some(n) = args.max_threads {
                limits = limits.max_threads(n);
            }
            let store = agui_sdk_postgres::PostgresRunStore::connect(url, "agui", limits)
                .await
                .map_err(|e| store_error(url, &e))?;
            Some(Arc::new(store))
        }
        other => {
            return Err(CliError::Usage(format!(
                "--store {other:?}: expected memory, off, redis://HOST:PORT or postgres://USER@HOST:PORT/DB"
            )))
        }
    })
}

/// The resumable runs and the CopilotKit runtime over `store`, with `--lease-ms` and
/// `--replica-id`.
fn runtimes(
    args: &ServeArgs,
    store: Option<Arc<dyn agui_sdk_server::runs::RunStore>>,
) -> (
    Option<agui_sdk_server::runs::Resumable>,
    agui_sdk_server::copilotkit::CopilotRuntime,
) {
    let lease = Duration::from_millis(args.lease_ms.max(100));
    // A stop asked on another replica is seen within a second.
    let heartbeat = (lease / 3).min(Duration::from_secs(1));
    let mut copilot = agui_sdk_server::copilotkit::CopilotRuntime::new().lease(lease, heartbeat);
    if let Some(id) = &args.replica_id {
        copilot = copilot.replica(id.clone());
    }
    let Some(store) = store else {
        // `--store off`: the CopilotKit runtime keeps its threads in memory of its own.
        if let Some(n) = args.max_threads {
            copilot =
                copilot.run_limits(agui_sdk_server::runs::RunLimits::default().max_threads(n));
        }
        return (None, copilot);
    };
    copilot = copilot.store(store.clone());
    let mut r = agui_sdk_server::runs::Resumable::new(store)
        .lease(lease, lease / 3)
        .reaper_interval(lease / 2);
    if let Some(id) = &args.replica_id {
        r = r.replica(id.clone());
    }
    (Some(r), copilot)
}

/// The owner of a request, for the demo server: the SHA-256 of its `Authorization`
/// header, when it has one (never kept or logged in clear). Two bearer tokens see
/// disjoint CopilotKit threads and resumable runs; without the header a request is the
/// anonymous owner's (a resumable run then needs its `AGUI-Resume-Token`). An
/// application puts its own authenticated principal in [`agui_sdk_server::runs::Owner`]
/// the same way.
async fn owner_from_authorization(
    mut req: agui_sdk_server::axum::extract::Request,
    next: agui_sdk_server::axum::middleware::Next,
) -> agui_sdk_server::axum::response::Response {
    if let Some(auth) = req
        .headers()
        .get(agui_sdk_server::axum::http::header::AUTHORIZATION)
    {
        let owner = format!(
            "authorization:{}",
            agui_sdk_server::runs::sha256_hex(auth.as_bytes())
        );
        req.extensions_mut()
            .insert(agui_sdk_server::runs::Owner(owner));
    }
    next.run(req).await
}

/// Serves the demo agents until SIGINT or SIGTERM.
pub(crate) fn serve(args: ServeArgs) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::io("starting the async runtime"))?;
    crate::memory::give_back_freed_memory();
    rt.block_on(async move {
        // `serve` triggers the switch on SIGINT/SIGTERM.
        let shutdown = agui_sdk_server::Shutdown::new();
        let mut config = agui_sdk_server::ServerConfig::default();
        config.shutdown_grace = Duration::from_secs(args.grace_secs);
        config.max_runs = args.max_runs;
        config.memory_budget = (args.memory_budget > 0).then(|| args.memory_budget.saturating_mul(1 << 20));
        config.interrupts = agui_sdk_server::runs::InterruptPolicy::default()
            .claim_ttl(args.interrupt_claim_ttl);
        // The demo routes at /{name}, and the CopilotKit runtime at /copilotkit (CORS
        // open to pages served from loopback).
        let (resumable, copilot) = runtimes(&args, store(&args).await?);
        let chat = chat_agent(&args)?;
        let app = agui_sdk_demo::app_with(
            Duration::from_millis(args.delay_ms),
            config,
            shutdown.clone(),
            resumable,
            chat.map(|a| {
                (
                    "chat",
                    std::sync::Arc::new(a) as std::sync::Arc<dyn agui_sdk_server::Agent>,
                )
            }),
            Some(copilot),
        )
        .layer(agui_sdk_server::axum::middleware::from_fn(owner_from_authorization));
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(CliError::io(format!("cannot listen on {}", args.addr)))?;
        let local = listener
            .local_addr()
            .map_err(CliError::io("reading the bound address"))?;
        tracing::info!(addr = %local, store = %agui_sdk_client::endpoint::redact_url(&args.store), "serving the demo agents");
        // The one line scripts wait for: where the server listens.
        eprintln!("agui: listening on http://{local}");
        // Connections have the grace period and one second more: a connection that never
        // sends its request (or only part of it) does not hold the exit back.
        let mut limits = agui_sdk_server::ServeLimits::default();
        limits.drain = config_drain(args.grace_secs);
        agui_sdk_server::serve_with(listener, app, shutdown, limits)
            .await
            .map_err(CliError::io("serving"))
    })
}
