//! Agent routes, resumable runs and the CopilotKit runtime in one process, sharing one
//! agent, one configuration and one shutdown switch.
//!
//! ```text
//! cargo run -p agui-sdk-server --example all_in_one
//! # an AG-UI client:
//! curl -N localhost:8000/assistant -H 'content-type: application/json' \
//!   -d '{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}'
//! # the same run, resumable (re-attach with GET /assistant/runs/r2/events):
//! curl -N localhost:8000/assistant -H 'content-type: application/json' \
//!   -H 'AGUI-Resumable: 1' -H 'AGUI-Resume-Token: a-random-secret-of-22-chars' \
//!   -d '{"threadId":"t1","runId":"r2","messages":[{"id":"u1","role":"user","content":"hi"}]}'
//! # CopilotKit's React components: runtimeUrl="http://localhost:8000/copilotkit"
//! ```

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_server::copilotkit::CopilotRuntime;
use agui_sdk_server::prelude::*;
use agui_sdk_server::runs::{InMemoryRunStore, Resumable, RunLimits};
use agui_sdk_server::{serve, ServerConfig, Shutdown};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // One agent, mounted on both surfaces.
    let assistant: Arc<dyn Agent> = Arc::new(agent_fn(|input, _ctx, tx| async move {
        let text = input.last_user_text().unwrap_or_default();
        let id = tx.new_id("reply");
        let words: Vec<String> = format!("You said: {text}")
            .split_inclusive(' ')
            .map(str::to_owned)
            .collect();
        tx.text_message(&id, words, Duration::from_millis(50)).await
    }));

    // One configuration and one shutdown switch: `serve` triggers it on SIGINT/SIGTERM,
    // and every run, whichever route started it, gets the same grace period.
    let mut config = ServerConfig::default();
    config.shutdown_grace = Duration::from_secs(5);
    let shutdown = Shutdown::new();

    // Runs opted in with `AGUI-Resumable: 1` survive a dropped connection.
    let resumable = Resumable::new(Arc::new(InMemoryRunStore::new(RunLimits::default())));
    let agents = AgentRouter::new()
        .shared_agent("assistant", assistant.clone())
        .config(config.clone())
        .shutdown(shutdown.clone())
        .resumable(resumable);

    // CopilotKit's runtime contract under /copilotkit, its threads in memory.
    let copilotkit = CopilotRuntime::new()
        .shared_agent("assistant", assistant)
        .default_agent("assistant")
        .config(config)
        .shutdown(shutdown.clone());

    let app = agents
        .into_router()
        .nest("/copilotkit", copilotkit.into_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    println!("listening on http://127.0.0.1:8000 (/assistant, /copilotkit)");
    serve(listener, app, shutdown).await
}
