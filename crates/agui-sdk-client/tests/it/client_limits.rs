//! The client's ceilings against a server on loopback streaming a valid run that never
//! ends: the run stops with `ClientError::LimitExceeded` naming the ceiling, its value
//! and the event that crossed it, with what came before applied.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use agui_sdk_client::{ClientError, Conversation, HttpAgent, RunParams, DEFAULT_MAX_MESSAGE_BYTES};
use agui_sdk_core::Message;
use agui_sdk_testkit::server::{spawn, TestServer};
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::Response;
use axum::routing::post;
use axum::Router;

const KIB: usize = 1024;
const MIB: u64 = 1 << 20;

/// An SSE frame of `json`.
fn frame(json: &str) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

/// A server answering every run with `head` (after `RUN_STARTED` on the input's thread
/// and run), then `repeat` for ever; `sent` counts the bytes of body produced.
async fn endless(head: Vec<String>, repeat: String, sent: Arc<AtomicU64>) -> TestServer {
    let app = Router::new().route(
        "/",
        post(move |body: Bytes| {
            let (head, repeat, sent) = (head.clone(), repeat.clone(), sent.clone());
            async move {
                let input: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let started = serde_json::json!({"type": "RUN_STARTED",
                    "threadId": input["threadId"], "runId": input["runId"]});
                let mut first = vec![frame(&started.to_string())];
                first.extend(head.iter().map(|h| frame(h)));
                let repeat = frame(&repeat);
                let stream = futures_util::stream::iter(first)
                    .chain(futures_util::stream::repeat(repeat))
                    .map(move |b| {
                        sent.fetch_add(b.len() as u64, Ordering::Relaxed);
                        Ok::<_, std::io::Error>(b)
                    });
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from_stream(stream))
                    .unwrap()
            }
        }),
    );
    spawn(app).await
}

use futures_util::StreamExt;

fn message_server_parts() -> (Vec<String>, String) {
    (
        vec![r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#.into()],
        format!(
            r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{}"}}"#,
            "a".repeat(64 * KIB)
        ),
    )
}

fn limit_of(e: &ClientError) -> (&'static str, u64, u64, &str) {
    match e {
        ClientError::LimitExceeded {
            limit,
            max,
            event_index,
            what,
        } => (limit, *max, *event_index, what.as_str()),
        other => panic!("not a limit: {other}"),
    }
}

#[tokio::test]
async fn a_message_stops_at_its_ceiling_with_the_text_before_it_applied() {
    let sent = Arc::default();
    let (head, repeat) = message_server_parts();
    let srv = endless(head, repeat, sent).await;
    let http = HttpAgent::builder(srv.url("/")).build().unwrap();
    let mut chat = Conversation::builder(http).max_message_bytes(MIB).build();
    let e = chat.run_agent(RunParams::new()).await.unwrap_err();
    // 16 deltas of 64 KiB fill the MiB; the 17th, event 18 after RUN_STARTED and
    // TEXT_MESSAGE_START, passes it.
    assert_eq!(
        limit_of(&e),
        (
            "max_message_bytes",
            MIB,
            18,
            "message \"m1\"'s text (1114112 bytes)"
        )
    );
    assert_eq!(
        e.to_string(),
        "message \"m1\"'s text (1114112 bytes) passed the limit max_message_bytes of 1048576 bytes at event 18"
    );
    let Some(Message::Assistant(a)) = chat.messages().last() else {
        panic!("{:?}", chat.messages());
    };
    assert_eq!(a.content.as_deref().map(str::len), Some(MIB as usize));
}

#[tokio::test]
async fn the_defaults_stop_an_endless_message_after_16_mib() {
    let sent = Arc::new(AtomicU64::new(0));
    let (head, repeat) = message_server_parts();
    let srv = endless(head, repeat, sent.clone()).await;
    let mut chat = Conversation::new(HttpAgent::builder(srv.url("/")).build().unwrap());
    let e = chat.run_agent(RunParams::new()).await.unwrap_err();
    let (limit, max, index, _) = limit_of(&e);
    assert_eq!(
        (limit, max, index),
        ("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES, 258)
    );
    let sent = sent.load(Ordering::Relaxed);
    assert!(
        sent > DEFAULT_MAX_MESSAGE_BYTES && sent < 2 * DEFAULT_MAX_MESSAGE_BYTES,
        "{sent} bytes produced"
    );
}

#[tokio::test]
async fn tool_arguments_stop_at_their_ceiling() {
    let sent = Arc::default();
    let head =
        vec![r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}"#.to_owned()];
    let repeat = format!(
        r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{}"}}"#,
        "1".repeat(16 * KIB)
    );
    let srv = endless(head, repeat, sent).await;
    let mut chat = Conversation::builder(HttpAgent::builder(srv.url("/")).build().unwrap())
        .max_tool_args_bytes(256 * 1024)
        .max_message_bytes(0)
        .build();
    let e = chat.run_agent(RunParams::new()).await.unwrap_err();
    assert_eq!(
        limit_of(&e),
        (
            "max_tool_args_bytes",
            256 * 1024,
            18,
            "tool call \"c1\"'s arguments (278528 bytes)"
        )
    );
}

#[tokio::test]
async fn a_run_stops_at_its_byte_ceiling_whatever_its_events() {
    let sent = Arc::new(AtomicU64::new(0));
    // Small messages, each complete: no message ceiling is ever near.
    let repeat = format!(
        r#"{{"type":"CUSTOM","name":"n","value":"{}"}}"#,
        "c".repeat(4 * KIB)
    );
    let srv = endless(Vec::new(), repeat, sent.clone()).await;
    let agent = HttpAgent::builder(srv.url("/"))
        .max_run_bytes(2 * MIB)
        .build()
        .unwrap();
    let mut stream = agent.run(&agui_sdk_core::RunAgentInput::new("t", "r", vec![]));
    let mut events = 0u64;
    let e = loop {
        match stream.next().await {
            Some(Ok(_)) => events += 1,
            Some(Err(e)) => break e,
            None => panic!("the stream ended"),
        }
    };
    let (limit, max, index, what) = limit_of(&e);
    assert_eq!((limit, max, index), ("max_run_bytes", 2 * MIB, events));
    assert!(what.starts_with("the run's stream ("), "{what}");
    assert!(
        events > 400 && events < 520,
        "{events} events before the limit"
    );
    // The connection is dropped with the stream: the server stops producing, having
    // got ahead of the client by what loopback's socket buffers hold (a few MiB).
    drop(stream);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let after = sent.load(Ordering::Relaxed);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(sent.load(Ordering::Relaxed), after, "still producing");
    assert!(after < 2 * MIB + 16 * MIB, "{after} bytes produced");
}
