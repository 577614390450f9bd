//! Graceful shutdown: stop accepting connections, give in-flight runs a bounded time to
//! finish, then end the remaining ones with `RUN_ERROR` (code `shutdown`).

use std::future::Future;
use std::io;

use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The server's shutdown switch. Clones share one switch.
///
/// When triggered: every run's [context](crate::RunContext) is cancelled (the agent is
/// told), each in-flight run gets the configured grace period
/// ([`ServerConfig::shutdown_grace`](crate::ServerConfig)) to end its stream, after
/// which the runtime sends `RUN_ERROR` and closes it; new runs are refused with
/// `503`; [`serve`] stops accepting connections and returns once every connection is
/// closed.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

impl Shutdown {
    /// A switch that has not been triggered.
    pub fn new() -> Self {
        Shutdown::default()
    }

    /// Starts shutting down.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// Whether shutdown has started.
    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves once shutdown has started.
    pub fn triggered(&self) -> impl Future<Output = ()> + Send + 'static {
        self.token.clone().cancelled_owned()
    }

    /// Triggers this switch on SIGINT or SIGTERM (Ctrl-C only on non-Unix systems).
    /// Must be called inside a Tokio runtime.
    pub fn trigger_on_signals(&self) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            termination_signal().await;
            tracing::info!("termination signal received: shutting down");
            this.trigger();
        })
    }

    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }
}

/// Resolves on the first SIGINT or SIGTERM (Ctrl-C on non-Unix systems).
pub async fn termination_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(error = %e, "cannot listen for termination signals");
                std::future::pending::<()>().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is triggered and every connection
/// has closed (in-flight runs end within the grace period). Accepted sockets have
/// `TCP_NODELAY` set: a streamed event goes out at once, not after the peer's delayed
/// acknowledgement (which holds small writes on a kept-alive connection ~40 ms).
pub async fn serve(listener: TcpListener, router: Router, shutdown: Shutdown) -> io::Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.triggered())
        .await
}
