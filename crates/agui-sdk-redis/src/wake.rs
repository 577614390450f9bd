//! Wake-ups over Redis pub/sub, shared by the stores: a waiter subscribes (through one
//! listener task per store) to the channel of what it waits on, checks, then waits for a
//! message on it or its timeout. Each process subscribes only to the channels its own
//! waiters need; a channel stays subscribed a while after its last waiter leaves, since
//! a reader waits again right after each read.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::watch;

/// The runs this replica's viewers wait on, by wake-up channel.
struct Waiter {
    /// The head the last wake-up announced.
    head: watch::Sender<u64>,
    /// Whether the channel's subscription is in place.
    subscribed: watch::Sender<bool>,
    /// Since when no viewer waits (the subscription is kept a while: a viewer waits
    /// again right after each read).
    idle_since: Option<std::time::Instant>,
}

/// How long a channel nobody waits on stays subscribed.
const IDLE_SUBSCRIPTION: Duration = Duration::from_secs(5);

type Waiters = Arc<Mutex<HashMap<String, Waiter>>>;

/// What the wake-up listener is asked to do, in the order the waiters changed.
enum Command {
    Subscribe(String),
}

/// The wake-up side of a store: its listener task and its waiters.
pub(crate) struct Wakeups {
    waiters: Waiters,
    commands: tokio::sync::mpsc::UnboundedSender<Command>,
    received: Arc<AtomicU64>,
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl Wakeups {
    /// Starts the listener on its own pub/sub connection to `client`.
    pub(crate) fn start(client: redis::Client) -> Self {
        let waiters: Waiters = Arc::default();
        let received = Arc::new(AtomicU64::new(0));
        let (commands, rx) = tokio::sync::mpsc::unbounded_channel();
        let listener = tokio::spawn(listen(client, rx, waiters.clone(), received.clone()));
        Wakeups {
            waiters,
            commands,
            received,
            listener,
        }
    }

    /// Messages the listener has received.
    pub(crate) fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Subscribes to `channel`, then runs `ready` (a check of the store); when it says
    /// there is nothing yet, waits for a message on `channel`, at most `timeout` in all.
    pub(crate) async fn wait(
        &self,
        channel: &str,
        timeout: Duration,
        ready: impl Future<Output = bool>,
    ) {
        let deadline = tokio::time::Instant::now() + timeout;
        let (rx, mut subscribed) = {
            let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
            let waiter = w.entry(channel.to_owned()).or_insert_with(|| {
                // Sent under the lock: the listener sees subscriptions in the order the
                // map changed (its sweep removes idle entries under the same lock).
                let _ = self.commands.send(Command::Subscribe(channel.to_owned()));
                Waiter {
                    head: watch::Sender::new(0),
                    subscribed: watch::Sender::new(false),
                    idle_since: None,
                }
            });
            waiter.idle_since = None;
            (waiter.head.subscribe(), waiter.subscribed.subscribe())
        };
        // Subscribed first (or given up on: the wait then polls), then checked: a
        // change in between is not missed.
        let _ = tokio::time::timeout_at(deadline, subscribed.wait_for(|s| *s)).await;
        if !ready.await {
            let mut rx = rx;
            let _ = tokio::time::timeout_at(deadline, rx.changed()).await;
        } else {
            drop(rx);
        }
        drop(subscribed);
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waiter) = w.get_mut(channel) {
            if waiter.head.receiver_count() == 0 {
                // The listener unsubscribes once it has stayed idle a while.
                waiter.idle_since = Some(std::time::Instant::now());
            }
        }
    }
}

/// Marks a channel's subscription as in place (or given up on), for its waiters.
fn mark_subscribed(waiters: &Waiters, channel: &str) {
    let w = waiters.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(waiter) = w.get(channel) {
        waiter.subscribed.send_replace(true);
    }
}

/// The wake-up listener: subscribes to the channels of the runs this replica's viewers
/// wait on, as they come and go, and passes each wake-up to their waiters. When the
/// connection drops it reconnects after a pause and subscribes again to every channel
/// still waited on (waiters poll meanwhile).
async fn listen(
    client: redis::Client,
    mut commands: tokio::sync::mpsc::UnboundedReceiver<Command>,
    waiters: Waiters,
    received: Arc<AtomicU64>,
) {
    loop {
        match client.get_async_pubsub().await {
            Ok(pubsub) => {
                let (mut sink, mut messages) = pubsub.split();
                // Everything waited on now; later changes come as commands (a channel
                // both here and in a queued command is subscribed twice: harmless).
                let current: Vec<String> = waiters
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .keys()
                    .cloned()
                    .collect();
                for channel in &current {
                    if let Err(e) = sink.subscribe(channel).await {
                        tracing::warn!(error = %e, "run store: cannot subscribe to wake-ups");
                    }
                    mark_subscribed(&waiters, channel);
                }
                let mut sweep = tokio::time::interval(IDLE_SUBSCRIPTION);
                loop {
                    tokio::select! {
                        _ = sweep.tick() => {
                            // Removed under the lock, unsubscribed here before any later
                            // command: a viewer that comes back after the removal sends a
                            // new Subscribe, handled after this.
                            let idle: Vec<String> = {
                                let mut w = waiters.lock().unwrap_or_else(|p| p.into_inner());
                                let idle: Vec<String> = w
                                    .iter()
                                    .filter(|(_, v)| {
                                        v.head.receiver_count() == 0
                                            && v.idle_since.is_some_and(|t| t.elapsed() >= IDLE_SUBSCRIPTION)
                                    })
                                    .map(|(k, _)| k.clone())
                                    .collect();
                                for k in &idle {
                                    w.remove(k);
                                }
                                idle
                            };
                            for channel in idle {
                                let _ = sink.unsubscribe(&channel).await;
                            }
                        }
                        command = commands.recv() => match command {
                            Some(Command::Subscribe(channel)) => {
                                if let Err(e) = sink.subscribe(&channel).await {
                                    tracing::warn!(error = %e, "run store: cannot subscribe to wake-ups");
                                }
                                mark_subscribed(&waiters, &channel);
                            }
                            // The store is gone.
                            None => return,
                        },
                        msg = messages.next() => {
                            let Some(msg) = msg else { break };
                            received.fetch_add(1, Ordering::Relaxed);
                            let channel = msg.get_channel_name();
                            let head: u64 = msg
                                .get_payload::<String>()
                                .ok()
                                .and_then(|s| s.parse().ok())
                                .unwrap_or(0);
                            let w = waiters.lock().unwrap_or_else(|p| p.into_inner());
                            if let Some(waiter) = w.get(channel) {
                                waiter.head.send_replace(head);
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "run store: wake-up connection failed"),
        }
        // Lost: waiters poll until the subscriptions are back.
        for waiter in waiters.lock().unwrap_or_else(|p| p.into_inner()).values() {
            waiter.subscribed.send_replace(false);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        // Commands queued meanwhile are covered by the resubscription above.
        while commands.try_recv().is_ok() {}
    }
}
