//! `agui serve`: runs the demo agents over HTTP, at `POST /{name}` and through the
//! CopilotKit runtime at `/copilotkit`.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use crate::io::CliError;

/// Arguments of `agui serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub addr: SocketAddr,
    /// Pause between streamed pieces, in milliseconds (0 for tests).
    #[arg(long, default_value_t = 40)]
    pub delay_ms: u64,
    /// Seconds in-flight runs may continue after SIGINT/SIGTERM.
    #[arg(long, default_value_t = 10)]
    pub grace_secs: u64,
}

/// Serves the demo agents until SIGINT or SIGTERM.
pub fn serve(args: ServeArgs) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::io("starting the async runtime"))?;
    rt.block_on(async move {
        let shutdown = agui_server::Shutdown::new();
        shutdown.trigger_on_signals();
        let mut config = agui_server::ServerConfig::default();
        config.shutdown_grace = Duration::from_secs(args.grace_secs);
        // The demo routes at /{name}, and the CopilotKit runtime at /copilotkit (CORS
        // open to pages served from loopback).
        let app = agui_server::demo::app(
            Duration::from_millis(args.delay_ms),
            config,
            shutdown.clone(),
        );
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(CliError::io(format!("cannot listen on {}", args.addr)))?;
        let local = listener
            .local_addr()
            .map_err(CliError::io("reading the bound address"))?;
        tracing::info!(addr = %local, "serving the demo agents");
        // The one line scripts wait for: where the server listens.
        eprintln!("agui: listening on http://{local}");
        agui_server::serve(listener, app, shutdown)
            .await
            .map_err(CliError::io("serving"))
    })
}
