//! The transport's failure paths, against a fake server on loopback: each failure comes
//! out as a typed error after the events that preceded it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_client::{ClientError, HttpAgent};
use agui_sdk_core::semantics::InboundError;
use agui_sdk_core::{Event, EventType, RunAgentInput};
use agui_sdk_testkit::server::{spawn, DropFlag};
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use futures_util::StreamExt;

fn sse(chunks: Vec<&'static str>, pause: Duration) -> Response {
    let stream = futures_util::stream::iter(chunks).then(move |c| async move {
        tokio::time::sleep(pause).await;
        Ok::<_, std::io::Error>(c)
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

fn input() -> RunAgentInput {
    RunAgentInput::new("t", "r", vec![])
}

async fn collect(url: &str, agent: HttpAgent) -> (Vec<Event>, Option<ClientError>) {
    let _ = url;
    let mut events = Vec::new();
    let mut stream = agent.run(&input());
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

const STARTED: &str = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
const FINISHED: &str = "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";

#[tokio::test]
async fn http_500_with_a_json_body() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async {
            Response::builder()
                .status(StatusCode::INTERNAL_SERVER_ERROR)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(
                    r#"{"error":{"code":"boom","message":"agent crashed"}}"#,
                ))
                .unwrap()
        }),
    ))
    .await;
    let base = srv.base();
    let (events, err) = collect(&base, HttpAgent::builder(&base).build().unwrap()).await;
    assert!(events.is_empty());
    let err = err.expect("an error");
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.server_error_code(), Some("boom"));
    assert!(!err.is_connect() && err.run_error_code().is_none());
    match err {
        ClientError::Http {
            status,
            json: Some(json),
            body,
        } => {
            assert_eq!(status, 500);
            assert_eq!(json["error"]["code"], "boom");
            assert!(body.contains("agent crashed"));
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_complete_stream() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async { sse(vec![STARTED, FINISHED], Duration::ZERO) }),
    ))
    .await;
    let base = srv.base();
    let (events, err) = collect(&base, HttpAgent::builder(&base).build().unwrap()).await;
    assert!(err.is_none(), "{err:?}");
    let types: Vec<_> = events.iter().map(Event::event_type).collect();
    assert_eq!(types, [EventType::RunStarted, EventType::RunFinished]);
}

#[tokio::test]
async fn a_stream_cut_mid_event() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async {
            sse(
                vec![STARTED, "data: {\"type\":\"TEXT_MESSAGE_ST"],
                Duration::ZERO,
            )
        }),
    ))
    .await;
    let base = srv.base();
    let (events, err) = collect(&base, HttpAgent::builder(&base).build().unwrap()).await;
    assert_eq!(events.len(), 1, "the event before the cut is delivered");
    match err {
        Some(ClientError::Decode(e)) => assert_eq!(e.index, 1, "{e}"),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_json_names_event_and_offset() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async { sse(vec![STARTED, "data: {nope}\n\n", FINISHED], Duration::ZERO) }),
    ))
    .await;
    let base = srv.base();
    let (events, err) = collect(&base, HttpAgent::builder(&base).build().unwrap()).await;
    assert_eq!(events.len(), 1);
    match err {
        Some(ClientError::Inbound {
            byte_offset,
            source: source @ InboundError::Malformed { index: 1, .. },
        }) => {
            assert_eq!(byte_offset, Some(STARTED.len() as u64));
            let text = ClientError::Inbound {
                byte_offset,
                source,
            }
            .to_string();
            assert!(
                text.contains("event 1")
                    && text.contains(&format!("byte offset {}", STARTED.len())),
                "{text}"
            );
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_without_a_terminal_event() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async {
            sse(
                vec![
                    STARTED,
                    "data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n\n",
                ],
                Duration::ZERO,
            )
        }),
    ))
    .await;
    let base = srv.base();
    let (events, err) = collect(&base, HttpAgent::builder(&base).build().unwrap()).await;
    assert_eq!(events.len(), 2);
    let err = err.expect("an error");
    assert!(
        matches!(err, ClientError::Truncated { events: 2 }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("ended without a terminal event"),
        "{err}"
    );
    assert_eq!(err.rule_id(), Some("lifecycle/terminal-event"));
}

/// The 1.1 rules on a run's identity, through a conversation (which verifies): each
/// error names its rule.
#[tokio::test]
async fn a_run_finished_for_another_run_or_with_repeated_interrupt_ids_fails_the_run() {
    let cases: [(&'static str, &str, &str); 2] = [
        (
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"other\"}\n\n",
            "lifecycle/run-finished-run-id",
            "must agree on their runId",
        ),
        (
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"outcome\":{\"type\":\"interrupt\",\"interrupts\":[{\"id\":\"i\",\"reason\":\"a\"},{\"id\":\"i\",\"reason\":\"b\"}]}}\n\n",
            "interrupts/distinct-ids",
            "two interrupts carrying the id 'i'",
        ),
    ];
    for (finished, rule, text) in cases {
        let srv = spawn(Router::new().route(
            "/",
            post(move || async move { sse(vec![STARTED, finished], Duration::ZERO) }),
        ))
        .await;
        let base = srv.base();
        let http = HttpAgent::builder(&base).build().unwrap();
        let mut c = agui_sdk_client::Conversation::builder(http)
            .thread_id("t")
            .build();
        let err = c
            .run_agent(agui_sdk_client::RunParams::new().run_id("r"))
            .await
            .expect_err("the run fails");
        assert_eq!(err.rule_id(), Some(rule), "{err}");
        assert!(err.to_string().contains(text), "{err}");
        assert!(c.pending_interrupts().is_empty(), "{rule}: nothing adopted");
    }
}

#[tokio::test]
async fn a_slow_stream_times_out() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async { sse(vec![STARTED, FINISHED], Duration::from_millis(400)) }),
    ))
    .await;
    let base = srv.base();
    let agent = HttpAgent::builder(&base)
        .idle_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let (events, err) = collect(&base, agent).await;
    assert!(events.is_empty());
    match err {
        Some(ClientError::Timeout { after, waiting_for }) => {
            assert_eq!(after, Duration::from_millis(100));
            assert_eq!(waiting_for, "the next event");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // A patient client gets the whole run from the same server.
    let agent = HttpAgent::builder(&base)
        .idle_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let (events, err) = collect(&base, agent).await;
    assert!(err.is_none());
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn a_slow_response_times_out() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            sse(vec![STARTED, FINISHED], Duration::ZERO)
        }),
    ))
    .await;
    let base = srv.base();
    let agent = HttpAgent::builder(&base)
        .response_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let (_, err) = collect(&base, agent).await;
    assert!(
        matches!(
            err,
            Some(ClientError::Timeout {
                waiting_for: "the response",
                ..
            })
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn dropping_or_aborting_the_stream_cancels_the_request() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let srv = spawn(Router::new().route(
        "/",
        post(move || {
            let flag = flag.clone();
            async move {
                let guard = DropFlag(flag);
                let stream = futures_util::stream::unfold((0u64, guard), |(n, g)| async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let chunk = if n == 0 {
                        STARTED.to_owned()
                    } else {
                        format!("data: {{\"type\":\"CUSTOM\",\"name\":\"tick\",\"value\":{n}}}\n\n")
                    };
                    Some((Ok::<_, std::io::Error>(chunk), (n + 1, g)))
                });
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from_stream(stream))
                    .unwrap()
            }
        }),
    ))
    .await;
    let base = srv.base();
    let agent = HttpAgent::builder(&base).build().unwrap();
    let mut stream = agent.run(&input());
    for _ in 0..3 {
        stream.next().await.unwrap().unwrap();
    }
    drop(stream);
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the server still streams to a client that is gone"
    );

    dropped.store(false, Ordering::SeqCst);
    let mut stream = agent.run(&input());
    stream.next().await.unwrap().unwrap();
    stream.abort();
    assert!(stream.next().await.is_none(), "an aborted stream ends");
}

#[tokio::test]
async fn protobuf_is_decoded_by_content_type() {
    use agui_sdk_core::encoding::{Encoding, EventEncoder};
    let enc = EventEncoder::new(Encoding::Proto);
    let mut body = Vec::new();
    enc.encode(&Event::run_started("t", "r"), &mut body);
    enc.encode(&Event::run_finished("t", "r"), &mut body);
    let srv = spawn(Router::new().route(
        "/",
        post(move || {
            let body = body.clone();
            async move {
                Response::builder()
                    .header(header::CONTENT_TYPE, "application/vnd.ag-ui.event+proto")
                    .body(Body::from(body))
                    .unwrap()
            }
        }),
    ))
    .await;
    let base = srv.base();
    let (events, err) = collect(
        &base,
        HttpAgent::builder(&base)
            .encoding(Encoding::Proto)
            .build()
            .unwrap(),
    )
    .await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn connection_refused_says_so() {
    // A port nothing listens on: bind one, then close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/agent");
    let (events, err) = collect(&url, HttpAgent::builder(&url).build().unwrap()).await;
    assert!(events.is_empty());
    let err = err.expect("an error");
    assert!(err.is_connect(), "{err:?}");
    assert_eq!(err.status(), None);
    let text = err.to_string();
    // The cause chain is in the message, not only behind `source()`.
    assert!(text.to_lowercase().contains("connection refused"), "{text}");
}

/// A raw server: answers each connection with `reply` (written, then the connection
/// stays open or writes forever as the closure does).
async fn raw_server<F, Fut>(reply: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let reply = Arc::new(reply);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let reply = reply.clone();
            tokio::spawn(async move {
                // Read the request head and body (small).
                let mut buf = [0u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut sock, &mut buf).await;
                reply(sock).await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn an_endless_error_body_is_cut_at_64_kib() {
    use tokio::io::AsyncWriteExt;
    let base = raw_server(|mut sock| async move {
        let _ = sock
            .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 100000000000\r\n\r\n")
            .await;
        let chunk = vec![b'x'; 64 * 1024];
        while sock.write_all(&chunk).await.is_ok() {}
    })
    .await;
    let agent = HttpAgent::builder(&base).build().unwrap();
    let t0 = std::time::Instant::now();
    let (_, err) = collect(&base, agent).await;
    match err {
        Some(ClientError::Http {
            status: 500, body, ..
        }) => {
            assert_eq!(body.len(), agui_sdk_client::MAX_ERROR_BODY);
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let base = raw_server(|sock| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(sock);
    })
    .await;
    let agent = HttpAgent::builder(&base)
        .response_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let (_, err) = collect(&base, agent).await;
    assert!(
        matches!(
            err,
            Some(ClientError::Timeout {
                waiting_for: "the response",
                ..
            })
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_server_sending_only_comments_times_out_between_events() {
    use tokio::io::AsyncWriteExt;
    let base = raw_server(|mut sock| async move {
        let _ = sock
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
            .await;
        let _ = sock.write_all(STARTED.as_bytes()).await;
        loop {
            if sock.write_all(b": keep-alive\n\n").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let agent = HttpAgent::builder(&base)
        .idle_timeout(Duration::from_millis(400))
        .build()
        .unwrap();
    let (events, err) = collect(&base, agent).await;
    assert_eq!(events.len(), 1, "RUN_STARTED came");
    assert!(
        matches!(
            err,
            Some(ClientError::Timeout {
                waiting_for: "the next event",
                ..
            })
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_2xx_that_is_not_an_event_stream_is_refused_by_its_type() {
    let srv = spawn(Router::new().route(
        "/",
        post(|| async {
            Response::builder()
                .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
                .body(Body::from("<html>Gateway login</html>"))
                .unwrap()
        }),
    ))
    .await;
    let base = srv.base();
    let agent = HttpAgent::builder(&base).build().unwrap();
    let (events, err) = collect(&base, agent).await;
    assert!(events.is_empty());
    match err {
        Some(ClientError::ContentType { content_type }) => {
            assert_eq!(content_type, "text/html; charset=utf-8")
        }
        other => panic!("{other:?}"),
    }
}

/// A hostile resumable server announcing the largest sequence number cannot make the
/// client overflow: the stream ends with an error, no panic.
#[tokio::test]
async fn a_hostile_first_seq_does_not_overflow() {
    use tokio::io::AsyncWriteExt;
    let base = raw_server(|mut sock| async move {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nAGUI-First-Seq: 18446744073709551615\r\nConnection: close\r\n\r\n";
        let _ = sock.write_all(head.as_bytes()).await;
        let _ = sock.write_all(STARTED.as_bytes()).await;
        let _ = sock
            .write_all(b"data: {\"type\":\"STEP_STARTED\",\"stepName\":\"s\"}\n\n")
            .await;
    })
    .await;
    let agent = HttpAgent::builder(&base)
        .resumable(
            agui_sdk_client::ResumeOptions::default()
                .max_retries(1)
                .backoff(Duration::from_millis(1), Duration::from_millis(2)),
        )
        .build()
        .unwrap();
    let (events, err) = collect(&base, agent).await;
    assert_eq!(events.len(), 1);
    assert!(matches!(err, Some(ClientError::Resume { .. })), "{err:?}");
}
