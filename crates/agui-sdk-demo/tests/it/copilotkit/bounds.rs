//! What the runtime refuses or limits: idle-thread eviction, CORS and cross-site
//! requests, memory budgets, events for pre-1.0 clients, scoped stops and response
//! heads sent before any event; and the demo app serving both route families.

use super::*;

#[tokio::test]
async fn idle_threads_are_evicted_beyond_the_limit() {
    let s = serve(
        CopilotRuntime::new()
            .agent("echo", echo())
            .run_limits(RunLimits::default().max_threads(2)),
    )
    .await;
    for t in ["a", "b", "c"] {
        post(
            s.addr,
            "/copilotkit/agent/echo/run",
            &body(t, "r", json!([user("u", t)])),
        )
        .await
        .events()
        .await;
    }
    let count = |t: &'static str| {
        let addr = s.addr;
        async move {
            post(
                addr,
                "/copilotkit/agent/echo/connect",
                &body(t, "x", json!([])),
            )
            .await
            .events()
            .await
            .len()
        }
    };
    assert_eq!(count("a").await, 0, "the longest idle thread was evicted");
    assert_eq!(count("b").await, 5);
    assert_eq!(count("c").await, 5);
}

#[tokio::test]
async fn cors_echoes_requested_headers_for_allowed_origins_only() {
    let s = serve(CopilotRuntime::new().agent("echo", echo())).await;
    let preflight = |origin: &'static str| {
        let addr = s.addr;
        async move {
            Client::request(
                addr,
                "OPTIONS",
                "/copilotkit/agent/echo/run",
                &[
                    ("Origin", origin),
                    ("Access-Control-Request-Method", "POST"),
                    (
                        "Access-Control-Request-Headers",
                        "authorization,content-type,x-tenant",
                    ),
                ],
                b"",
            )
            .await
        }
    };
    let ok = preflight("http://localhost:5173").await;
    assert!(ok.status < 300, "{}", ok.status);
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    let allowed = ok
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for h in ["authorization", "content-type", "x-tenant"] {
        assert!(allowed.contains(h), "{allowed}");
    }
    assert!(ok
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));

    let evil = preflight("http://evil.example").await;
    assert_eq!(evil.header("access-control-allow-origin"), None);

    let get = Client::request(
        s.addr,
        "GET",
        "/copilotkit/info",
        &[("Origin", "http://127.0.0.1:3000")],
        b"",
    )
    .await;
    assert_eq!(
        get.header("access-control-allow-origin"),
        Some("http://127.0.0.1:3000")
    );

    // An explicit list with credentials.
    let s = serve(CopilotRuntime::new().agent("echo", echo()).cors(
        Cors::new(AllowedOrigins::List(vec!["https://app.example".into()])).credentials(true),
    ))
    .await;
    let c = Client::request(
        s.addr,
        "OPTIONS",
        "/copilotkit/info",
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "authorization"),
        ],
        b"",
    )
    .await;
    assert_eq!(
        c.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(c.header("access-control-allow-credentials"), Some("true"));
    let c = Client::request(
        s.addr,
        "GET",
        "/copilotkit/info",
        &[("Origin", "http://localhost:1")],
        b"",
    )
    .await;
    assert_eq!(c.header("access-control-allow-origin"), None);
}

#[tokio::test]
async fn a_pre_1_0_client_gets_events_its_schemas_accept() {
    let s = serve(agui_sdk_demo::copilot_runtime(Duration::ZERO)).await;
    let run = |version: Option<&str>, run: &'static str| {
        let mut b = body("t", run, json!([user("u", "go")]));
        if let Some(v) = version {
            b["protocolVersion"] = json!(v);
        }
        let addr = s.addr;
        async move {
            post(addr, "/copilotkit/agent/subagents/run", &b)
                .await
                .events()
                .await
        }
    };
    let old = run(None, "r1").await;
    assert!(old
        .iter()
        .all(|e| !e.event_type().as_str().starts_with("SUBAGENT_")));
    let customs: Vec<&str> = old
        .iter()
        .filter_map(|e| match e {
            Event::Custom(c) => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        customs.contains(&"SUBAGENT_STARTED") && customs.contains(&"SUBAGENT_FINISHED"),
        "{customs:?}"
    );
    match &old[0] {
        Event::RunStarted(s) => assert_eq!(s.protocol_version, None),
        _ => unreachable!(),
    }
    let new = run(Some("1.1"), "r2").await;
    assert!(new
        .iter()
        .any(|e| e.event_type().as_str() == "SUBAGENT_STARTED"));
}

#[tokio::test]
async fn a_pre_1_0_replay_has_nothing_after_a_run_error() {
    let calls = Arc::new(AtomicUsize::new(0));
    let flaky = {
        let calls = calls.clone();
        agent_fn(move |input: RunAgentInput, _ctx: RunContext, tx: Emitter| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    return Err(AgentError::public("model overloaded").with_code("overloaded"));
                }
                tx.text_message(&format!("{}-m", input.run_id), ["fine"], Duration::ZERO)
                    .await?;
                Ok(())
            }
        })
    };
    let s = serve(CopilotRuntime::new().agent("f", flaky)).await;
    for r in ["r1", "r2"] {
        post(
            s.addr,
            "/copilotkit/agent/f/run",
            &body("t", r, json!([user(r, "x")])),
        )
        .await
        .events()
        .await;
    }
    let mut old = post(
        s.addr,
        "/copilotkit/agent/f/connect",
        &body("t", "x", json!([])),
    )
    .await;
    let old = old.events().await;
    assert!(!types(&old).contains(&"RUN_ERROR"), "{:?}", types(&old));
    match &old[1] {
        Event::RunFinished(f) => {
            assert_eq!(f.run_id, "r1");
            assert_eq!(f.result.as_ref().unwrap()["error"]["code"], "overloaded");
        }
        other => panic!("{other:?}"),
    }
    let mut b = body("t", "x", json!([]));
    b["protocolVersion"] = json!("1.1");
    let new = post(s.addr, "/copilotkit/agent/f/connect", &b)
        .await
        .events()
        .await;
    assert_eq!(
        types(&new)[1],
        "RUN_ERROR",
        "a 1.x client gets the run as it was"
    );
}

#[tokio::test]
async fn the_demo_app_serves_both_route_families() {
    let shutdown = Shutdown::new();
    let app = agui_sdk_demo::app(Duration::ZERO, Default::default(), shutdown.clone(), None);
    let s = start(app, shutdown).await;
    let mut c = post(s.addr, "/agentic_chat", &common::input("t", "r", "hi")).await;
    assert_eq!(c.status, 200);
    let events = c.events().await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    let mut c = Client::request(s.addr, "GET", "/copilotkit/info", &[], b"").await;
    let info = c.json().await;
    assert_eq!(info["agents"].as_object().unwrap().len(), 11);
    assert_eq!(
        info["agents"]["default"]["description"],
        info["agents"]["agentic_chat"]["description"]
    );
    let mut c = post(
        s.addr,
        "/copilotkit",
        &json!({ "method": "agent/run", "params": { "agentId": "default" }, "body": body("t2", "r", json!([user("u", "hi")])) }),
    )
    .await;
    let events = c.events().await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    verify_all(&events);
}

#[tokio::test]
async fn large_runs_beyond_the_memory_budget_are_refused() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let shutdown = Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.memory_budget = Some(8 << 20);
    let app = axum::Router::new().nest(
        "/copilotkit",
        CopilotRuntime::new()
            .agent("g", gated(gate.clone(), dropped))
            .config(config)
            .shutdown(shutdown.clone())
            .into_router(),
    );
    let s = start(app, shutdown).await;
    let big = |thread: &str| {
        // 230 KB of JSON that parses into 5,000 messages (some 5 MB counted).
        let messages: Vec<serde_json::Value> = (0..5_000)
            .map(|i| json!({"id": format!("m{i}"), "role": "user", "content": "x"}))
            .collect();
        body(thread, "r", json!(messages))
    };
    let mut first = post(s.addr, "/copilotkit/agent/g/run", &big("t1")).await;
    first
        .next_event_within(5)
        .await
        .expect("the first big run streams");
    let mut second = post(s.addr, "/copilotkit/agent/g/run", &big("t2")).await;
    assert_eq!(second.status, 503);
    let b = second.json().await;
    assert_eq!(
        (b["error"].as_str(), b["code"].as_str()),
        (Some("Service unavailable"), Some("memory_budget"))
    );
    gate.add_permits(1);
    first.events().await;
}

#[tokio::test]
async fn cross_site_simple_requests_neither_start_nor_stop_a_run() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;
    let run_body = serde_json::to_vec(&body("t", "r1", json!([user("u1", "go")]))).unwrap();
    // What a page on any origin may send without a preflight: no Content-Type (a
    // `fetch` with a Blob body) or text/plain.
    for headers in [vec![], vec![("Content-Type", "text/plain")]] {
        for path in ["/copilotkit/agent/g/run", "/copilotkit/agent/g/connect"] {
            let mut c = Client::request(s.addr, "POST", path, &headers, &run_body).await;
            assert_eq!(c.status, 415, "{path} {headers:?}");
            assert_eq!(c.json().await["code"], "unsupported_media_type");
        }
    }
    // A run started by CopilotKit's own client (JSON)…
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    assert_eq!(run.status, 200);
    run.next_event_within(5).await.expect("RUN_STARTED");
    // …is not stopped by a body-less cross-site POST…
    for headers in [vec![], vec![("Content-Type", "text/plain")]] {
        let mut c =
            Client::request(s.addr, "POST", "/copilotkit/agent/g/stop/t", &headers, b"").await;
        assert_eq!(c.status, 415, "{headers:?}");
        assert_eq!(c.json().await["code"], "unsupported_media_type");
    }
    assert!(!dropped.load(Ordering::SeqCst), "the run goes on");
    // …but is by the client's JSON stop.
    let mut stop = post(s.addr, "/copilotkit/agent/g/stop/t", &json!({})).await;
    assert_eq!(stop.json().await["stopped"], true);
    let rest = run.events().await;
    assert_eq!(types(&rest).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn a_stop_is_scoped_to_the_run_its_body_names() {
    let gate = Arc::new(Semaphore::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let s = serve(CopilotRuntime::new().agent("g", gated(gate.clone(), dropped.clone()))).await;
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r1", json!([user("u1", "go")])),
    )
    .await;
    run.next_event_within(5).await.expect("RUN_STARTED");
    let json_ct = [("Content-Type", "application/json")];
    let stop = |b: &'static [u8]| {
        Client::request(s.addr, "POST", "/copilotkit/agent/g/stop/t", &json_ct, b)
    };

    // Bodies CopilotKit's runtime refuses.
    for (b, error) in [
        (&br#"{"threadId":"t"}"#[..], "Invalid stop request"),
        (br#"[]"#, "Invalid stop request"),
        (br#"not json"#, "Invalid stop request"),
        (br#"{"runId":""}"#, "Invalid runId"),
        (br#"{"runId":7}"#, "Invalid runId"),
    ] {
        let mut c = stop(b).await;
        assert_eq!(c.status, 400, "{}", String::from_utf8_lossy(b));
        assert_eq!(c.json().await["error"], error);
    }
    // Another run's id stops nothing, on the route and through the single route.
    let mut c = stop(br#"{"runId":"r0"}"#).await;
    assert_eq!(
        c.json().await,
        json!({ "stopped": false, "message": "Run 'r0' is not the active run for thread 't'." })
    );
    let envelope = json!({
        "method": "agent/stop",
        "params": { "agentId": "g", "threadId": "t" },
        "body": { "runId": "r0" },
    });
    let mut c = post(s.addr, "/copilotkit", &envelope).await;
    assert_eq!(c.json().await["stopped"], false);
    assert!(!dropped.load(Ordering::SeqCst), "the run goes on");

    // The active run's id stops it.
    let mut c = stop(br#"{"runId":"r1"}"#).await;
    assert_eq!(c.json().await["stopped"], true);
    assert_eq!(types(&run.events().await).last(), Some(&"RUN_FINISHED"));

    // An empty body stops whatever runs.
    let mut run = post(
        s.addr,
        "/copilotkit/agent/g/run",
        &body("t", "r2", json!([user("u2", "go")])),
    )
    .await;
    run.next_event_within(5).await.expect("RUN_STARTED");
    let mut c = stop(b"").await;
    assert_eq!(c.json().await["stopped"], true);
    assert_eq!(types(&run.events().await).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn connect_and_the_envelope_are_admitted_by_the_memory_budget() {
    let shutdown = Shutdown::new();
    let mut config = agui_sdk_server::ServerConfig::default();
    config.memory_budget = Some(1 << 20);
    config.body_limit = 4 << 20;
    let app = axum::Router::new().nest(
        "/copilotkit",
        CopilotRuntime::new()
            .agent("echo", echo())
            .config(config)
            .shutdown(shutdown.clone())
            .into_router(),
    );
    let s = start(app, shutdown).await;
    // 300 KB of the smallest messages: several MB once parsed, more than the budget.
    let many: Vec<Value> = (0..6_000).map(|i| user(&format!("m{i}"), "x")).collect();
    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "c1", json!(many)),
    )
    .await;
    assert_eq!(c.status, 503);
    assert_eq!(c.json().await["code"], "memory_budget");
    // A 700 KB envelope is held at twice its length, over the 1 MiB budget.
    let envelope = json!({
        "method": "agent/run",
        "params": { "agentId": "echo" },
        "body": body("t", "r1", json!([user("u1", &"y".repeat(700_000))])),
    });
    let mut c = post(s.addr, "/copilotkit", &envelope).await;
    assert_eq!(c.status, 503);
    assert_eq!(c.json().await["code"], "memory_budget");
    // Small ones pass.
    let mut c = post(
        s.addr,
        "/copilotkit/agent/echo/connect",
        &body("t", "c2", json!([user("u", "hi")])),
    )
    .await;
    assert_eq!(c.status, 200);
    c.events().await;
    let small = json!({
        "method": "agent/run",
        "params": { "agentId": "echo" },
        "body": body("t", "r2", json!([user("u2", "hi")])),
    });
    let mut c = post(s.addr, "/copilotkit", &small).await;
    assert_eq!(c.status, 200);
    assert_eq!(types(&c.events().await).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn the_response_head_of_run_and_connect_goes_out_before_any_event() {
    // CopilotKit's client re-checks /info when a response has no head after 10 s, and
    // marks the runtime failed: the head may not wait for the agent's first event.
    let gate = Arc::new(Semaphore::new(0));
    let g = gate.clone();
    let silent = agent_fn(move |input: RunAgentInput, _ctx: RunContext, tx: Emitter| {
        let g = g.clone();
        async move {
            let _p = g.acquire().await.map_err(AgentError::internal)?;
            tx.text(format!("{} done", input.run_id)).await?;
            Ok::<(), AgentError>(())
        }
    });
    let s = serve(CopilotRuntime::new().agent("s", silent)).await;
    let head = |path: &'static str, run: &'static str| {
        let addr = s.addr;
        async move {
            tokio::time::timeout(
                Duration::from_secs(5),
                post(addr, path, &body("t", run, json!([user("u", "hi")]))),
            )
            .await
            .unwrap_or_else(|_| panic!("{path}: no response head while the agent is silent"))
        }
    };
    let mut run = head("/copilotkit/agent/s/run", "r1").await;
    assert_eq!(run.status, 200);
    assert_eq!(run.header("content-type"), Some("text/event-stream"));
    let mut connect = head("/copilotkit/agent/s/connect", "r2").await;
    assert_eq!(connect.status, 200);
    gate.add_permits(1);
    assert_eq!(types(&run.events().await).last(), Some(&"RUN_FINISHED"));
    assert_eq!(types(&connect.events().await).last(), Some(&"RUN_FINISHED"));
}
