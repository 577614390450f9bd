//! Requests the runtime refuses or negotiates, over real loopback HTTP: malformed,
//! oversized and hostile bodies, unknown agents and methods, `Accept`, capabilities,
//! tower layers.

use crate::common;

use std::time::Duration;

use agui_sdk_core::{AgentCapabilities, Event, EventType};
use agui_sdk_server::Shutdown;
use common::{input, start, Client};
use serde_json::json;

use common::demo_server;

#[tokio::test]
async fn malformed_and_invalid_bodies_get_400_with_a_json_error() {
    let srv = demo_server().await;
    let json_ct = [("Content-Type", "application/json")];

    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &json_ct,
        b"{\"threadId\": ",
    )
    .await;
    assert_eq!(c.status, 400);
    assert_eq!(c.header("content-type"), Some("application/json"));
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "malformed_json");
    assert!(body["error"]["line"].is_u64());

    let bad = json!({"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "robot", "content": "x"}]});
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &bad).await;
    assert_eq!(c.status, 400);
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "invalid_input");
    assert_eq!(body["error"]["field"], "messages/0");
    assert!(body["error"]["message"].as_str().unwrap().contains("robot"));

    let missing = json!({"threadId": "t", "messages": []});
    let body = Client::post_json(srv.addr, "/agentic_chat", &missing)
        .await
        .json()
        .await;
    assert_eq!(body["error"]["code"], "invalid_input");
    assert!(body["error"]["message"].as_str().unwrap().contains("runId"));

    let null_field = json!({"threadId": "t", "runId": "r", "messages": [], "forwardedProps": null});
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &null_field).await;
    assert_eq!(c.status, 400);
    assert_eq!(c.json().await["error"]["field"], "forwardedProps");

    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &[("Content-Type", "text/plain")],
        b"{}",
    )
    .await;
    assert_eq!(c.status, 415);
    assert_eq!(c.json().await["error"]["code"], "unsupported_media_type");
}
#[tokio::test]
async fn oversized_body_gets_413_with_a_json_error() {
    let srv = demo_server().await;
    let big = input("t", "r", &"x".repeat(10_000));
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &big).await;
    assert_eq!(c.status, 413);
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "body_too_large");
    assert!(body["error"]["message"].as_str().unwrap().contains("4096"));
}
#[tokio::test]
async fn oversized_chunked_body_without_length_gets_413() {
    let srv = demo_server().await;
    let mut sock = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = "POST /agentic_chat HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    sock.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b' '; 3000];
    for _ in 0..2 {
        sock.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
        sock.write_all(&chunk).await.unwrap();
        sock.write_all(b"\r\n").await.unwrap();
    }
    sock.write_all(b"0\r\n\r\n").await.unwrap();
    let mut resp = Vec::new();
    let _ = sock.read_to_end(&mut resp).await;
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"body_too_large\""), "{text}");
}
#[tokio::test]
async fn unknown_agent_and_wrong_method_get_json_errors() {
    let srv = demo_server().await;
    let mut c = Client::post_json(srv.addr, "/no_such_agent", &input("t", "r", "x")).await;
    assert_eq!(c.status, 404);
    let body = c.json().await;
    assert_eq!(body["error"]["code"], "unknown_agent");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no_such_agent"));

    let mut c = Client::request(srv.addr, "DELETE", "/agentic_chat", &[], b"").await;
    assert_eq!(c.status, 405);
    assert_eq!(c.json().await["error"]["code"], "method_not_allowed");

    let mut c = Client::request(srv.addr, "GET", "/a/b/c", &[], b"").await;
    assert_eq!(c.status, 404);
    assert_eq!(c.json().await["error"]["code"], "not_found");
}
#[tokio::test]
async fn requests_without_accept_get_sse() {
    let srv = demo_server().await;
    let body = serde_json::to_vec(&input("t", "r", "hello")).unwrap();
    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &[("Content-Type", "application/json")],
        &body,
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("content-type"), Some("text/event-stream"));
    let ev = c.events().await;
    assert_eq!(
        ev.first().map(Event::event_type),
        Some(EventType::RunStarted)
    );
    assert_eq!(
        ev.last().map(Event::event_type),
        Some(EventType::RunFinished)
    );
}
#[tokio::test]
async fn capabilities_are_served_as_json() {
    let srv = demo_server().await;
    let mut c = Client::request(srv.addr, "GET", "/reasoning", &[], b"").await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("content-type"), Some("application/json"));
    let body = c.body().await;
    let caps: AgentCapabilities = agui_sdk_core::wire::from_json_slice(&body).unwrap();
    assert_eq!(caps.identity.unwrap().name.as_deref(), Some("reasoning"));
    let r = caps.reasoning.unwrap();
    assert_eq!((r.supported, r.encrypted), (Some(true), Some(true)));
    assert_eq!(caps.transport.unwrap().streaming, Some(true));

    let mut c = Client::request(srv.addr, "GET", "/agents", &[], b"").await;
    let list = c.json().await;
    let agents = list["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, agui_sdk_demo::NAMES);
    for a in agents {
        assert_eq!(a["path"], format!("/{}", a["name"].as_str().unwrap()));
        let _: AgentCapabilities =
            agui_sdk_core::wire::from_json_value(&a["capabilities"]).unwrap();
    }

    let mut c = Client::request(srv.addr, "GET", "/nope", &[], b"").await;
    assert_eq!(c.status, 404);
    assert_eq!(c.json().await["error"]["code"], "unknown_agent");
}
#[tokio::test]
async fn works_behind_tower_layers_cors_and_bearer_auth() {
    use axum::http::{header, HeaderValue, Method, Request, StatusCode};
    use axum::middleware::{self, Next};
    use axum::response::IntoResponse;
    use tower::ServiceExt;
    use tower_http::cors::CorsLayer;

    async fn auth(req: axum::extract::Request, next: Next) -> axum::response::Response {
        let ok = req.headers().get(header::AUTHORIZATION)
            == Some(&HeaderValue::from_static("Bearer s3cret"));
        if ok || req.method() == Method::OPTIONS {
            next.run(req).await
        } else {
            agui_sdk_server::ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "token required",
            )
            .into_response()
        }
    }
    let app = agui_sdk_demo::router(Duration::ZERO)
        .into_router()
        .layer(middleware::from_fn(auth))
        .layer(
            CorsLayer::new()
                .allow_origin(HeaderValue::from_static("http://app.example"))
                .allow_methods([Method::POST])
                .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION]),
        );
    let body = || axum::body::Body::from(serde_json::to_vec(&input("t", "r", "hi")).unwrap());

    let preflight = Request::builder()
        .method(Method::OPTIONS)
        .uri("/agentic_chat")
        .header(header::ORIGIN, "http://app.example")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = app.clone().oneshot(preflight).await.unwrap();
    assert_eq!(
        res.headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .unwrap(),
        "http://app.example"
    );

    let anonymous = Request::post("/agentic_chat")
        .header(header::CONTENT_TYPE, "application/json")
        .body(body())
        .unwrap();
    let res = app.clone().oneshot(anonymous).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 16)
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["error"]["code"], "unauthorized");

    let authed = Request::post("/agentic_chat")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, "Bearer s3cret")
        .header(header::ORIGIN, "http://app.example")
        .body(body())
        .unwrap();
    let res = app.oneshot(authed).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .unwrap(),
        "http://app.example"
    );
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.starts_with("data: {\"type\":\"RUN_STARTED\""));
    assert!(text
        .trim_end()
        .ends_with("\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}"));
}
#[tokio::test]
async fn content_negotiation_serves_protobuf_or_sse() {
    use agui_sdk_core::encoding::{Encoding, EventDecoder};
    let srv = demo_server().await;
    let body = serde_json::to_vec(&input("t", "r", "hi")).unwrap();
    for (accept, expected) in [
        (Some("application/vnd.ag-ui.event+proto"), Encoding::Proto),
        // Unlike the reference's rule, a bare wildcard (curl, a browser's fetch) gets SSE.
        (Some("*/*"), Encoding::Sse),
        (
            Some("text/event-stream;q=0.5, application/vnd.ag-ui.event+proto"),
            Encoding::Proto,
        ),
        (Some("text/event-stream"), Encoding::Sse),
        (
            Some("text/event-stream, application/vnd.ag-ui.event+proto;q=0"),
            Encoding::Sse,
        ),
        (None, Encoding::Sse),
    ] {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = accept {
            headers.push(("Accept", a));
        }
        let mut c = Client::request(srv.addr, "POST", "/agentic_chat", &headers, &body).await;
        assert_eq!(c.status, 200);
        assert_eq!(
            c.header("content-type"),
            Some(expected.content_type()),
            "{accept:?}"
        );
        let bytes = c.body().await;
        let mut dec = EventDecoder::new(expected);
        dec.push(&bytes);
        dec.finish();
        let events: Vec<Event> = std::iter::from_fn(|| dec.next())
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{accept:?}: {e}"));
        assert_eq!(
            events.first().map(Event::event_type),
            Some(EventType::RunStarted)
        );
        assert_eq!(
            events.last().map(Event::event_type),
            Some(EventType::RunFinished)
        );
        assert!(events.len() > 4);
    }
}
#[tokio::test]
async fn hostile_bodies_get_4xx_and_the_server_keeps_serving() {
    let shutdown = Shutdown::new();
    let router = agui_sdk_demo::router(Duration::ZERO)
        .body_timeout(Duration::from_millis(200))
        .shutdown(shutdown.clone())
        .into_router();
    let srv = start(router, shutdown).await;
    let json_ct = [("Content-Type", "application/json")];

    // Deep nesting stops at the parser's depth limit.
    let deep = format!(
        r#"{{"threadId":"t","runId":"r","messages":[],"state":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let mut c = Client::request(srv.addr, "POST", "/agentic_chat", &json_ct, deep.as_bytes()).await;
    assert_eq!(c.status, 400);
    assert_eq!(c.json().await["error"]["code"], "malformed_json");

    // Not UTF-8.
    let mut c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &json_ct,
        b"{\"threadId\":\"\xff\xfe\"}",
    )
    .await;
    assert_eq!(c.status, 400);
    assert!(c.json().await["error"]["code"].is_string());

    // Not an object at all.
    let mut c = Client::request(srv.addr, "POST", "/agentic_chat", &json_ct, b"[1,2,3]").await;
    assert_eq!(c.status, 400);
    assert_eq!(c.json().await["error"]["code"], "invalid_input");

    // A body that never finishes arriving.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    sock.write_all(b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"thr")
        .await
        .unwrap();
    let mut resp = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut resp))
        .await
        .expect("the server answers the slow body")
        .unwrap();
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"body_timeout\""), "{text}");

    // Still serving.
    let mut c = Client::post_json(srv.addr, "/agentic_chat", &input("t", "r", "hi")).await;
    assert_eq!(c.status, 200);
    assert_eq!(
        c.events().await.last().map(Event::event_type),
        Some(EventType::RunFinished)
    );
}

#[tokio::test]
async fn the_reference_negotiation_stays_available() {
    let shutdown = agui_sdk_server::Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.negotiation = agui_sdk_server::Negotiation::Reference;
    let router = agui_sdk_demo::router(std::time::Duration::ZERO)
        .config(config)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = common::start(router, shutdown).await;
    let body = serde_json::to_vec(&input("t", "r", "hi")).unwrap();
    let c = Client::request(
        srv.addr,
        "POST",
        "/agentic_chat",
        &[("Content-Type", "application/json"), ("Accept", "*/*")],
        &body,
    )
    .await;
    assert_eq!(
        c.header("content-type"),
        Some("application/vnd.ag-ui.event+proto")
    );
}

/// The memory amplification attack: large request bodies, many at once. Each run is
/// counted at what its request costs once parsed (estimated from its JSON's shape, plus
/// 64 KiB) against the memory budget while it streams: a run that does not fit is
/// refused with 503, small runs still fit, and a body of many small parsed objects
/// counts far more than free-form JSON of the same length (kept as text).
#[tokio::test]
async fn large_requests_beyond_the_memory_budget_are_refused() {
    use std::sync::Arc;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = gate.clone();
    let held = agui_sdk_server::agent_fn(move |_input, _ctx, tx| {
        let g = g.clone();
        async move {
            tx.emit(agui_sdk_core::Event::step_started("s")).await?;
            let _p = g
                .acquire()
                .await
                .map_err(agui_sdk_server::AgentError::internal)?;
            tx.emit(agui_sdk_core::Event::step_finished("s")).await?;
            Ok(())
        }
    });
    let shutdown = agui_sdk_server::Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.memory_budget = Some(8 << 20);
    let router = agui_sdk_server::AgentRouter::new()
        .agent("held", held)
        .config(config)
        .shutdown(shutdown.clone())
        .into_router();
    let srv = common::start(router, shutdown).await;
    // 230 KB of JSON that parses into 5,000 messages (some 5 MB counted).
    let messages: Vec<serde_json::Value> = (0..5_000)
        .map(|i| serde_json::json!({"id": format!("m{i}"), "role": "user", "content": "x"}))
        .collect();
    let big = serde_json::json!({
        "threadId": "t", "runId": "r", "messages": messages,
    });
    // A longer body that is free-form JSON (kept as text): counted at 4 times its length.
    let free_form = serde_json::json!({
        "threadId": "t", "runId": "r3", "messages": [],
        "state": { "blob": vec![0; 250_000] },
    });
    let small = common::input("t", "r2", "hi");
    let mut first = Client::post_json(srv.addr, "/held", &big).await;
    assert_eq!(first.status, 200);
    first
        .next_event_within(5)
        .await
        .expect("the first big run streams");
    let mut second = Client::post_json(srv.addr, "/held", &big).await;
    assert_eq!(second.status, 503);
    assert_eq!(second.json().await["error"]["code"], "memory_budget");
    let mut third = Client::post_json(srv.addr, "/held", &small).await;
    assert_eq!(third.status, 200, "a small run still fits");
    let mut fourth = Client::post_json(srv.addr, "/held", &free_form).await;
    assert_eq!(
        fourth.status, 200,
        "free-form JSON is cheap to hold, whatever its shape"
    );
    gate.add_permits(3);
    assert!(!third.events().await.is_empty());
    fourth.events().await;
    first.events().await;
    // The budget is back once the runs end.
    let mut again = Client::post_json(srv.addr, "/held", &big).await;
    assert_eq!(again.status, 200);
    gate.add_permits(1);
    again.events().await;
}

#[tokio::test]
async fn a_run_posted_without_a_json_content_type_is_refused() {
    // A page on any origin can POST a body with no Content-Type (`fetch(url, {body:
    // blob})`) or text/plain without a preflight: such a request starts nothing.
    let srv = common::demo_server().await;
    let body = serde_json::to_vec(&common::input("t", "r", "hi")).unwrap();
    for headers in [vec![], vec![("Content-Type", "text/plain;charset=UTF-8")]] {
        let mut c = Client::request(srv.addr, "POST", "/agentic_chat", &headers, &body).await;
        assert_eq!(c.status, 415, "{headers:?}");
        assert_eq!(c.json().await["error"]["code"], "unsupported_media_type");
    }
    let c = Client::post_json(srv.addr, "/agentic_chat", &common::input("t", "r", "hi")).await;
    assert_eq!(c.status, 200);
}
