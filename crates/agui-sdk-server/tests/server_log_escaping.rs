//! What the server logs of a client's strings, through a subscriber of the
//! application's own (`tracing-subscriber`'s default format, which writes `Display`
//! field values as they are): a hostile `threadId` and `runId`, and an agent error
//! quoting the client, are logged escaped, every line its own.
//!
//! A test binary of its own: tracing caches whether a callsite is enabled for the whole
//! process, so a span first met on another test's thread (no subscriber there) could be
//! left out of this test's lines.

use std::sync::{Arc, Mutex};

use agui_sdk_server::{agent_fn, AgentError};
use common::{serve_one, Client};

#[path = "it/common/mod.rs"]
mod common;

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn client_strings_are_logged_escaped_by_a_plain_subscriber() {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    // The process's only subscriber, set before any callsite is met.
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let nasty = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}\nFORGED 2026-01-01 INFO fake line";
    let agent = agent_fn(|input, _ctx, _tx| async move {
        Err(AgentError::public(format!(
            "no such thread {}",
            input.thread_id
        )))
    });
    let srv = serve_one("a", agent).await;
    let body = serde_json::json!({
        "threadId": format!("t{nasty}"),
        "runId": format!("r{nasty}"),
        "messages": [],
    });
    let events = Client::post_json(srv.addr, "/a", &body)
        .await
        .events()
        .await;
    assert_eq!(events.len(), 2, "{events:?}");
    drop(srv);
    let bytes = out.0.lock().unwrap().clone();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("agent failed"), "{text}");
    for b in [0x1b, 0x07, b'\r'] {
        assert!(!bytes.contains(&b), "byte {b:#x} logged raw: {text:?}");
    }
    assert!(
        !text.contains('\u{9b}') && !text.contains('\u{202e}'),
        "{text:?}"
    );
    for line in text.lines() {
        assert!(!line.starts_with("FORGED"), "a forged line: {line:?}");
    }
    let escaped =
        r"\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}\nFORGED 2026-01-01 INFO fake line";
    assert!(text.contains(&format!("thread_id=t{escaped}")), "{text}");
    assert!(text.contains(&format!("run_id=r{escaped}")), "{text}");
    assert!(
        text.contains(&format!("error=no such thread t{escaped}")),
        "{text}"
    );
}
