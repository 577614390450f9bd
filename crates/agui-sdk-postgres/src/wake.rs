//! Wake-ups by `LISTEN`/`NOTIFY`: every append notifies the store's channel (the schema's
//! name) with its run's key, in its transaction, so the notification is delivered when
//! the events are committed, to every replica. Each store holds one connection of its
//! own that listens on the channel; a task reads its notifications and broadcasts the
//! run keys to the store's waiters, which check their run when theirs comes.
//!
//! A notification can be lost (the listening connection drops; a waiter lags behind the
//! broadcast): the listener reconnects with a bounded backoff and then wakes every
//! waiter, a waiter that lagged checks its run, and every waiter checks its run at
//! least every [`FALLBACK`] besides. A lost wake-up costs at most that delay.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};

/// How often a waiter checks its run when no notification comes: the most a lost
/// notification delays a viewer.
pub const FALLBACK: Duration = Duration::from_secs(2);

/// The first and the longest wait between two attempts of the listener to reconnect.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// Run keys broadcast to the waiters; how many a slow waiter may lag behind.
const CAPACITY: usize = 1024;

/// A wake-up: the run key notified, or every run (after a reconnect).
#[derive(Debug, Clone)]
pub(crate) enum Wake {
    /// The run with this key moved.
    Run(Arc<str>),
    /// Notifications may have been lost: every waiter checks its run.
    All,
}

/// The wake-up side of a store: its listener task and the broadcast to its waiters.
pub(crate) struct Wakeups {
    sender: broadcast::Sender<Wake>,
    received: Arc<AtomicU64>,
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl std::fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wakeups")
            .field("received", &self.received())
            .finish_non_exhaustive()
    }
}

impl Wakeups {
    /// Starts the listener on a connection of its own made with `config`, listening on
    /// `channel`; returns once it listens, or after `ready_within` (it keeps trying).
    pub(crate) async fn start(
        config: tokio_postgres::Config,
        channel: String,
        ready_within: Duration,
    ) -> Self {
        let (sender, _) = broadcast::channel(CAPACITY);
        let received = Arc::new(AtomicU64::new(0));
        let (ready, listening) = tokio::sync::oneshot::channel();
        let listener = tokio::spawn(listen(
            config,
            channel,
            sender.clone(),
            received.clone(),
            ready,
        ));
        if tokio::time::timeout(ready_within, listening).await.is_err() {
            tracing::warn!("PostgreSQL run store: wake-ups not listening yet; waiters check every {FALLBACK:?} until they are");
        }
        Wakeups {
            sender,
            received,
            listener,
        }
    }

    /// Notifications the listener has received.
    pub(crate) fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// A receiver of the wake-ups to come.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Wake> {
        self.sender.subscribe()
    }
}

/// The listener: connects, listens, forwards each notification; on any loss, wakes
/// every waiter and reconnects after a backoff that doubles up to its bound.
async fn listen(
    config: tokio_postgres::Config,
    channel: String,
    sender: broadcast::Sender<Wake>,
    received: Arc<AtomicU64>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let mut backoff = BACKOFF.0;
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let mut messages =
                    futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                let statement = format!("LISTEN \"{channel}\"");
                let listen = client.batch_execute(&statement);
                tokio::pin!(listen);
                // The connection is polled for the LISTEN to be sent and answered.
                let listening = loop {
                    tokio::select! {
                        r = &mut listen => break r.map_err(|e| e.to_string()),
                        m = messages.next() => match m {
                            Some(Ok(_)) => {}
                            Some(Err(e)) => break Err(e.to_string()),
                            None => break Err("the connection closed".into()),
                        },
                    }
                };
                match listening {
                    Ok(()) => {
                        backoff = BACKOFF.0;
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                        // What was notified while no connection listened is unknown.
                        let _ = sender.send(Wake::All);
                        let why = loop {
                            match messages.next().await {
                                Some(Ok(AsyncMessage::Notification(n))) => {
                                    received.fetch_add(1, Ordering::Relaxed);
                                    let _ = sender.send(Wake::Run(n.payload().into()));
                                }
                                Some(Ok(_)) => {}
                                Some(Err(e)) => break e.to_string(),
                                None => break "the connection closed".into(),
                            }
                        };
                        tracing::warn!(error = %why, "PostgreSQL run store: the wake-up connection was lost; reconnecting");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "PostgreSQL run store: LISTEN failed; retrying")
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "PostgreSQL run store: cannot connect for wake-ups; retrying")
            }
        }
        let _ = sender.send(Wake::All);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF.1);
    }
}
