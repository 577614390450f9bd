//! Graceful shutdown: stop accepting connections, give in-flight runs a bounded time to
//! finish, then end the remaining ones with `RUN_ERROR` (code `shutdown`).

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

/// Time bounds and signal handling of [`serve_with`]. Every field has a documented
/// default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeLimits {
    /// Whether SIGINT and SIGTERM (Ctrl-C on non-Unix systems) trigger the shutdown
    /// switch while serving, and a second one closes the connections at once (default
    /// `true`). Turn it off when the application handles signals itself; the switch
    /// still works.
    pub signals: bool,
    /// Longest time for a request head to arrive, from the connection's start or the
    /// end of its previous request (default 10 s): silent, partial-head and drip-fed
    /// connections, and idle keep-alive ones, are closed after it.
    pub header_read_timeout: Duration,
    /// After shutdown starts, how long connections have to finish before they are
    /// closed (default 11 s: the runs' default grace period and a second for their last
    /// bytes). A second SIGINT/SIGTERM closes them at once.
    pub drain: Duration,
    /// After an `accept` failure (for instance no file descriptor left), the pause
    /// before accepting again (default 50 ms): the server keeps answering as soon as a
    /// descriptor frees.
    pub accept_backoff: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            signals: true,
            header_read_timeout: Duration::from_secs(10),
            drain: Duration::from_secs(11),
            accept_backoff: Duration::from_millis(50),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is triggered (by SIGINT or SIGTERM,
/// or by anyone holding the switch), then lets connections finish within the drain
/// time of the default [`ServeLimits`] (in-flight runs end within their grace period).
/// Accepted sockets have `TCP_NODELAY` set: a streamed event goes out at once, not
/// after the peer's delayed acknowledgement. [`serve_with`] sets the bounds and can
/// leave signals to the application.
pub async fn serve(listener: TcpListener, router: Router, shutdown: Shutdown) -> io::Result<()> {
    serve_with(listener, router, shutdown, ServeLimits::default()).await
}

/// [`serve`] with explicit time bounds and signal handling. Connections speak HTTP/1.1
/// (cleartext HTTP/2 is not offered: put TLS and HTTP/2 in the proxy in front).
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    shutdown: Shutdown,
    limits: ServeLimits,
) -> io::Result<()> {
    use hyper::server::conn::http1::Builder;
    use hyper_util::rt::{TokioIo, TokioTimer};

    // HTTP/1.1 only: detecting cleartext HTTP/2 would wait for a preface with no time
    // bound (a silent or one-byte connection would stay open); TLS and HTTP/2 belong
    // to the proxy in front. So hyper's HTTP/1 connection is driven directly, not
    // hyper-util's auto-detecting one, under which the read buffer of a connection
    // streaming a run grew to 16 KiB (bench/load/stream_memory.sh).
    let mut builder = Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Aborted when serving ends, so that the signals go back to the application.
    struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            if let Some(h) = &self.0 {
                h.abort();
            }
        }
    }
    let _signals = AbortOnDrop(limits.signals.then(|| shutdown.trigger_on_signals()));
    let mut connections = tokio::task::JoinSet::new();
    let mut last_accept_error: Option<std::time::Instant> = None;
    let stop = shutdown.triggered();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        // EMFILE, ENFILE, ECONNABORTED…: log at most once a second, pause,
                        // and go on accepting.
                        if last_accept_error.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                            tracing::warn!(error = %e, "accept failed; pausing before the next accept");
                            last_accept_error = Some(std::time::Instant::now());
                        }
                        tokio::time::sleep(limits.accept_backoff).await;
                        continue;
                    }
                };
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::debug!(error = %e, "cannot set TCP_NODELAY");
                }
                // The first request's head must arrive within the limit (hyper's own
                // timer covers the heads that follow on a kept-alive connection).
                let started = Arc::new(AtomicBool::new(false));
                let mark = started.clone();
                let svc = tower::ServiceExt::map_request(router.clone(), move |req| {
                    mark.store(true, Ordering::Relaxed);
                    req
                });
                let service = hyper_util::service::TowerToHyperService::new(svc);
                let builder = builder.clone();
                let watcher = graceful.watcher();
                let first_head = limits.header_read_timeout;
                connections.spawn(async move {
                    let conn = builder.serve_connection(TokioIo::new(tcp), service);
                    let conn = watcher.watch(conn);
                    tokio::pin!(conn);
                    let result = tokio::select! {
                        r = &mut conn => Some(r),
                        () = tokio::time::sleep(first_head) => None,
                    };
                    let result = match result {
                        Some(r) => r,
                        None if !started.load(Ordering::Relaxed) => {
                            tracing::debug!(%peer, "no request head in time: closing the connection");
                            return;
                        }
                        None => conn.await,
                    };
                    if let Err(e) = result {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
                // Reap finished connection tasks as we go.
                while connections.try_join_next().is_some() {}
            }
        }
    }
    drop(listener);
    tracing::info!(
        open = connections.len(),
        "shutting down: closing connections as they finish"
    );
    let second_signal = async {
        if limits.signals {
            termination_signal().await
        } else {
            std::future::pending().await
        }
    };
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(limits.drain) => {
            tracing::warn!(open = connections.len(), "drain time over: closing the remaining connections");
        }
        () = second_signal => {
            tracing::warn!(open = connections.len(), "second signal: closing every connection now");
        }
    }
    connections.shutdown().await;
    Ok(())
}
