//! The client flow against the server's router, in process, on a free loopback port.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use approval_example::{ask_and_answer, router};

/// Serves the router on a free port: its `/approval` URL and the shutdown switch.
async fn start(deletions: Arc<AtomicUsize>) -> (String, agui_sdk_server::Shutdown) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = router(deletions);
    let shutdown = router.shutdown_handle();
    tokio::spawn(router.serve(listener));
    (format!("http://{addr}/approval"), shutdown)
}

#[tokio::test]
async fn an_approved_deletion_happens_once() {
    let deletions = Arc::new(AtomicUsize::new(0));
    let (url, shutdown) = start(deletions.clone()).await;
    let exchange = ask_and_answer(&url, true).await.unwrap();
    assert_eq!(
        exchange.question,
        "Delete the 3 backups older than 30 days?"
    );
    assert_eq!(exchange.reply, "Deleted 3 old backups.");
    assert_eq!(deletions.load(Ordering::SeqCst), 1);
    shutdown.trigger();
}

#[tokio::test]
async fn a_declined_deletion_does_not_happen() {
    let deletions = Arc::new(AtomicUsize::new(0));
    let (url, shutdown) = start(deletions.clone()).await;
    let exchange = ask_and_answer(&url, false).await.unwrap();
    assert_eq!(exchange.reply, "Nothing was deleted.");
    assert_eq!(deletions.load(Ordering::SeqCst), 0);
    shutdown.trigger();
}
