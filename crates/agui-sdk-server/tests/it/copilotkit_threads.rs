//! The CopilotKit runtime's thread routes, suggestions and `/info`, as CopilotKit 1.74
//! (`@ag-ui/client` 0.0.59) calls them: a user's threads listed, read and cleared,
//! scoped to the owner an authentication layer established (another owner can neither
//! list, read, connect to nor stop them), the suggest route's run kept nowhere, and
//! `/info` saying which thread routes exist.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_redis::{RedisRunStore, RunLimits};
use agui_sdk_server::copilotkit::CopilotRuntime;
use agui_sdk_server::runs::{Owner, RunStore};
use agui_sdk_server::{agent_fn, AgentError, Emitter, RunContext, Shutdown};
use common::{start, types, Client, TestServer};
use serde_json::{json, Value};

/// The store a scenario runs on: the default in-memory one, or a real Redis.
type Store = Option<Arc<dyn RunStore>>;

/// A Redis store under a prefix of its own (`AGUI_TEST_REDIS_URL`, by default
/// `redis://127.0.0.1:6379`); without one, `None` and a line saying the test is skipped,
/// or a failure under `AGUI_REQUIRE_REDIS=1` (set by `scripts/test-all.sh`, and so CI):
/// the test kit's Redis gate.
async fn redis(test: &str) -> Option<Arc<dyn RunStore>> {
    let url = agui_sdk_testkit::redis::url(test)?;
    let prefix = agui_sdk_testkit::redis::prefix("ck");
    let store = tokio::time::timeout(
        Duration::from_secs(10),
        RedisRunStore::connect(&url, &prefix, RunLimits::shared()),
    )
    .await
    .unwrap_or_else(|_| panic!("{test}: Redis at {url} answers but connecting timed out"))
    .unwrap_or_else(|e| panic!("{test}: Redis at {url} answers but the store cannot connect: {e}"));
    Some(Arc::new(store))
}

/// Each scenario as two tests: `memory::name` on the in-memory store and
/// `redis::name` on a real Redis.
macro_rules! on_each_store {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test]
            async fn $name() {
                super::$name(None).await
            })*
        }
        mod redis {
            $(#[tokio::test]
            async fn $name() {
                if let Some(store) = super::redis(stringify!($name)).await {
                    super::$name(Some(store)).await
                }
            })*
        }
    };
}

on_each_store!(
    info_says_which_thread_routes_exist_and_that_suggestions_do,
    a_users_threads_are_listed_read_and_cleared_and_no_one_elses,
    threads_are_renamed_archived_restored_deleted_and_paged_by_their_owner_only,
    thread_routes_answer_through_the_single_route,
    a_stop_from_another_owner_stops_nothing,
    a_suggestion_run_streams_and_is_kept_in_no_thread,
);

/// A runtime at `/copilotkit` on `store` whose requests are owned by their `X-User`
/// header (what an application's authentication layer would establish); none without
/// it.
async fn serve(store: Store, runtime: CopilotRuntime) -> TestServer {
    let shutdown = Shutdown::new();
    let runtime = match store {
        Some(store) => runtime.store(store),
        None => runtime,
    };
    let app = axum::Router::new()
        .nest(
            "/copilotkit",
            runtime.shutdown(shutdown.clone()).into_router(),
        )
        .layer(axum::middleware::from_fn(
            |mut req: axum::extract::Request, next: axum::middleware::Next| async move {
                if let Some(user) = req.headers().get("x-user").and_then(|v| v.to_str().ok()) {
                    let owner = Owner(user.to_owned());
                    req.extensions_mut().insert(owner);
                }
                next.run(req).await
            },
        ));
    start(app, shutdown).await
}

/// Replies `echo: <last user text>`, then sets the state `{"turns": n}`.
fn echo() -> agui_sdk_server::FnAgent {
    agent_fn(
        |input: RunAgentInput, _ctx: RunContext, tx: Emitter| async move {
            let text = input.last_user_text().unwrap_or_default();
            let id = format!("{}-reply", input.run_id);
            tx.text_message(&id, [format!("echo: {text}")], Duration::ZERO)
                .await?;
            let turns = input.messages.len();
            tx.emit(Event::state_snapshot(json!({ "turns": turns })))
                .await?;
            Ok::<(), AgentError>(())
        },
    )
}

fn body(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "tools": [], "context": [],
        "forwardedProps": {}, "state": {},
        "messages": [{ "id": format!("{run}-u"), "role": "user", "content": text }],
    })
}

async fn call(
    s: &TestServer,
    user: Option<&str>,
    method: &str,
    path: &str,
    body: &Value,
) -> Client {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(u) = user {
        headers.push(("X-User", u));
    }
    let bytes = if method == "GET" {
        Vec::new()
    } else {
        serde_json::to_vec(body).unwrap()
    };
    Client::request(
        s.addr,
        method,
        &format!("/copilotkit{path}"),
        &headers,
        &bytes,
    )
    .await
}

async fn run(s: &TestServer, user: Option<&str>, thread: &str, run_id: &str, text: &str) {
    let mut c = call(
        s,
        user,
        "POST",
        "/agent/echo/run",
        &body(thread, run_id, text),
    )
    .await;
    assert_eq!(c.status, 200);
    let events = c.events().await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    // Runs that end in distinct milliseconds list in a known order.
    tokio::time::sleep(Duration::from_millis(3)).await;
}

async fn get(s: &TestServer, user: Option<&str>, path: &str) -> (u16, Value) {
    let mut c = call(s, user, "GET", path, &Value::Null).await;
    let status = c.status;
    (status, c.json().await)
}

async fn info_says_which_thread_routes_exist_and_that_suggestions_do(store: Store) {
    let s = serve(store, CopilotRuntime::new().agent("echo", echo())).await;
    let (status, info) = get(&s, None, "/info").await;
    assert_eq!(status, 200);
    assert_eq!(
        info["threadEndpoints"],
        json!({"list": true, "inspect": true, "mutations": true, "realtimeMetadata": false})
    );
    assert_eq!(info["suggestions"], true);
    assert_eq!(info["openGenerativeUIEnabled"], false);
    // The single route serves no thread routes: its `info` says so.
    let mut c = call(&s, None, "POST", "", &json!({"method": "info"})).await;
    let single = c.json().await;
    assert_eq!(single["threadEndpoints"]["list"], false);
    assert_eq!(single["threadEndpoints"]["inspect"], false);
    assert_eq!(single["threadEndpoints"]["mutations"], false);
    assert_eq!(
        single["singleRoute"],
        json!({"resourceOperations": true, "threadEndpoints": {"list": true, "inspect": true, "mutations": true, "realtimeMetadata": false}})
    );
    assert!(
        info.get("singleRoute").is_none(),
        "the REST info has no single-route part"
    );
}

async fn a_users_threads_are_listed_read_and_cleared_and_no_one_elses(store: Store) {
    let s = serve(store, CopilotRuntime::new().agent("echo", echo())).await;
    run(&s, Some("ann"), "t1", "r1", "hello").await;
    run(&s, Some("ann"), "t1", "r2", "again").await;
    run(&s, Some("ann"), "t2", "r3", "other thread").await;
    run(&s, Some("bob"), "t1", "r1", "bob's own t1").await;

    // Ann's list: her two threads, the last updated first, as CopilotKit shapes them.
    let (status, list) = get(&s, Some("ann"), "/threads?agentId=echo").await;
    assert_eq!(status, 200);
    let threads = list["threads"].as_array().unwrap();
    let ids: Vec<&str> = threads.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["t2", "t1"]);
    assert_eq!(list["nextCursor"], Value::Null);
    let t1 = &threads[1];
    assert_eq!(t1["agentId"], "echo");
    assert_eq!(t1["archived"], false);
    assert_eq!(t1["name"], Value::Null);
    let created = t1["createdAt"].as_str().unwrap();
    let updated = t1["updatedAt"].as_str().unwrap();
    assert!(
        created.ends_with('Z') && created.len() == 24,
        "ISO 8601: {created}"
    );
    assert!(created <= updated);
    // Another agent's filter finds none; the limit holds.
    let (_, none) = get(&s, Some("ann"), "/threads?agentId=other").await;
    assert_eq!(none["threads"], json!([]));
    let (_, one) = get(&s, Some("ann"), "/threads?limit=1").await;
    assert_eq!(one["threads"].as_array().unwrap().len(), 1);

    // Bob and the anonymous owner see only their own.
    let (_, bob) = get(&s, Some("bob"), "/threads").await;
    let bob_ids: Vec<&str> = bob["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(bob_ids, ["t1"]);
    let (_, anon) = get(&s, None, "/threads").await;
    assert_eq!(anon["threads"], json!([]));

    // Ann's t1: its messages, events and state.
    let (_, m) = get(&s, Some("ann"), "/threads/t1/messages").await;
    let messages = m["messages"].as_array().unwrap();
    let summary: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            ("user", "hello"),
            ("assistant", "echo: hello"),
            ("user", "again"),
            ("assistant", "echo: again")
        ]
    );
    let (_, e) = get(&s, Some("ann"), "/threads/t1/events").await;
    let events: Vec<Event> = e["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .collect();
    agui_sdk_core::semantics::verify_events(&events).expect("the thread's events verify");
    assert_eq!(
        types(&events)
            .iter()
            .filter(|t| **t == "RUN_STARTED")
            .count(),
        2
    );
    let (_, st) = get(&s, Some("ann"), "/threads/t1/state").await;
    assert_eq!(st["state"], json!({"turns": 1}));
    // Bob's t1 is another thread: his messages only.
    let (_, bm) = get(&s, Some("bob"), "/threads/t1/messages").await;
    assert_eq!(bm["messages"].as_array().unwrap().len(), 2);
    assert_eq!(bm["messages"][0]["content"], "bob's own t1");
    // An unknown thread reads empty.
    let (_, u) = get(&s, Some("ann"), "/threads/nope/messages").await;
    assert_eq!(u["messages"], json!([]));
    let (_, us) = get(&s, Some("ann"), "/threads/nope/state").await;
    assert_eq!(us["state"], Value::Null);

    // Connect replays only the owner's thread.
    let mut c = call(
        &s,
        Some("bob"),
        "POST",
        "/agent/echo/connect",
        &body("t2", "x", ""),
    )
    .await;
    assert!(c.events().await.is_empty(), "bob has no thread t2");

    // Clearing Ann's threads leaves Bob's.
    let c = call(&s, Some("ann"), "POST", "/threads/clear", &json!({})).await;
    assert_eq!(c.status, 204);
    let (_, after) = get(&s, Some("ann"), "/threads").await;
    assert_eq!(after["threads"], json!([]));
    let (_, bob) = get(&s, Some("bob"), "/threads").await;
    assert_eq!(bob["threads"].as_array().unwrap().len(), 1);
}

async fn threads_are_renamed_archived_restored_deleted_and_paged_by_their_owner_only(store: Store) {
    let s = serve(store, CopilotRuntime::new().agent("echo", echo())).await;
    for (t, r) in [("t1", "r1"), ("t2", "r2"), ("t3", "r3")] {
        run(&s, Some("ann"), t, r, "hi").await;
    }
    let ids = |v: &Value| -> Vec<String> {
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, all) = get(&s, Some("ann"), "/threads?agentId=echo").await;
    assert_eq!(ids(&all), ["t3", "t2", "t1"]);
    assert!(all["threads"][0]["lastRunAt"].is_string());

    // Paging: two pages of two, then none; no thread twice, none skipped.
    let (_, p1) = get(&s, Some("ann"), "/threads?agentId=echo&limit=2").await;
    assert_eq!(ids(&p1), ["t3", "t2"]);
    let cursor = p1["nextCursor"].as_str().expect("a next page").to_owned();
    let (_, p2) = get(
        &s,
        Some("ann"),
        &format!("/threads?agentId=echo&limit=2&cursor={cursor}"),
    )
    .await;
    assert_eq!(ids(&p2), ["t1"]);
    assert_eq!(p2["nextCursor"], Value::Null);
    let (status, _) = get(&s, Some("ann"), "/threads?cursor=nonsense").await;
    assert_eq!(status, 400);

    // A rename changes the name, not the order.
    let mut c = call(
        &s,
        Some("ann"),
        "PATCH",
        "/threads/t1",
        &json!({"agentId": "echo", "name": "First"}),
    )
    .await;
    assert_eq!(c.status, 200);
    let renamed = c.json().await;
    assert_eq!(
        (renamed["id"].as_str(), renamed["name"].as_str()),
        (Some("t1"), Some("First"))
    );
    let (_, all) = get(&s, Some("ann"), "/threads?agentId=echo").await;
    assert_eq!(ids(&all), ["t3", "t2", "t1"]);
    assert_eq!(all["threads"][2]["name"], "First");

    // Archived: listed only with includeArchived=true, marked; PATCH archived:false restores.
    let mut c = call(
        &s,
        Some("ann"),
        "POST",
        "/threads/t2/archive",
        &json!({"agentId": "echo"}),
    )
    .await;
    assert_eq!(c.json().await, json!({"threadId": "t2", "archived": true}));
    let (_, visible) = get(&s, Some("ann"), "/threads?agentId=echo").await;
    assert_eq!(ids(&visible), ["t3", "t1"]);
    let (_, with) = get(
        &s,
        Some("ann"),
        "/threads?agentId=echo&includeArchived=true",
    )
    .await;
    assert_eq!(ids(&with), ["t3", "t2", "t1"]);
    assert_eq!(with["threads"][1]["archived"], true);
    let mut c = call(
        &s,
        Some("ann"),
        "PATCH",
        "/threads/t2",
        &json!({"agentId": "echo", "archived": false}),
    )
    .await;
    assert_eq!(c.json().await["archived"], false);
    let (_, visible) = get(&s, Some("ann"), "/threads?agentId=echo").await;
    assert_eq!(ids(&visible), ["t3", "t2", "t1"]);

    // Delete: gone from the list, its history too.
    let mut c = call(
        &s,
        Some("ann"),
        "DELETE",
        "/threads/t3",
        &json!({"agentId": "echo"}),
    )
    .await;
    assert_eq!(c.json().await, json!({"threadId": "t3", "deleted": true}));
    let (_, left) = get(&s, Some("ann"), "/threads").await;
    assert_eq!(ids(&left), ["t2", "t1"]);
    let (_, m) = get(&s, Some("ann"), "/threads/t3/messages").await;
    assert_eq!(m["messages"], json!([]));

    // Another owner, or none, touches nothing: 404, and Ann's threads are as they were.
    for (method, path, body) in [
        (
            "PATCH",
            "/threads/t1",
            json!({"agentId": "echo", "name": "Mine now"}),
        ),
        ("POST", "/threads/t1/archive", json!({"agentId": "echo"})),
        ("DELETE", "/threads/t1", json!({"agentId": "echo"})),
    ] {
        for user in [Some("bob"), None] {
            let c = call(&s, user, method, path, &body).await;
            assert_eq!(c.status, 404, "{user:?} {method} {path}");
        }
    }
    let (_, left) = get(&s, Some("ann"), "/threads?includeArchived=true").await;
    assert_eq!(ids(&left), ["t2", "t1"]);
    assert_eq!(left["threads"][1]["name"], "First");
    assert_eq!(left["threads"][1]["archived"], false);

    // Bodies as the runtime takes them: agentId required, only name and archived.
    for body in [
        json!({"name": "x"}),
        json!({"agentId": "echo", "color": "red"}),
        json!({"agentId": "echo", "name": 5}),
    ] {
        let c = call(&s, Some("ann"), "PATCH", "/threads/t1", &body).await;
        assert_eq!(c.status, 400, "{body}");
    }
    // Subscribing is the hosted mode's.
    let mut c = call(
        &s,
        None,
        "POST",
        "/threads/subscribe",
        &json!({"agentId": "echo"}),
    )
    .await;
    assert_eq!(c.status, 422);
    assert!(c.json().await["error"]
        .as_str()
        .unwrap()
        .contains("CopilotKitIntelligence"));
}

/// The thread routes through the single route's `resource/request`, as CopilotKit's
/// page sends them in single-route mode: the same answers as the REST routes, for the
/// same owner only; other paths are 404.
async fn thread_routes_answer_through_the_single_route(store: Store) {
    let s = serve(store, CopilotRuntime::new().agent("echo", echo())).await;
    run(&s, Some("ann"), "t1", "r1", "hello").await;
    let resource = |user: Option<&'static str>,
                    method: &'static str,
                    path: &'static str,
                    body: Option<Value>| {
        let s = &s;
        async move {
            let mut envelope = json!({"method": "resource/request", "params": {"path": path, "httpMethod": method}});
            if let Some(b) = body {
                envelope["body"] = b;
            }
            let mut c = call(s, user, "POST", "", &envelope).await;
            let status = c.status;
            let text = c.body().await;
            (
                status,
                serde_json::from_slice::<Value>(&text).unwrap_or(Value::Null),
            )
        }
    };
    let (status, list) = resource(Some("ann"), "GET", "/threads?agentId=echo&limit=5", None).await;
    assert_eq!(status, 200);
    assert_eq!(list["threads"][0]["id"], "t1");
    let (_, bob) = resource(Some("bob"), "GET", "/threads", None).await;
    assert_eq!(bob["threads"], json!([]));
    let (_, m) = resource(Some("ann"), "GET", "/threads/t1/messages", None).await;
    assert_eq!(m["messages"].as_array().unwrap().len(), 2);
    let (_, e) = resource(Some("ann"), "GET", "/threads/t1/events", None).await;
    assert!(e["events"].as_array().unwrap().len() >= 4);
    let (status, renamed) = resource(
        Some("ann"),
        "PATCH",
        "/threads/t1",
        Some(json!({"agentId": "echo", "name": "Named"})),
    )
    .await;
    assert_eq!((status, renamed["name"].as_str()), (200, Some("Named")));
    let (status, _) = resource(
        Some("bob"),
        "DELETE",
        "/threads/t1",
        Some(json!({"agentId": "echo"})),
    )
    .await;
    assert_eq!(status, 404, "another owner's thread");
    let (status, deleted) = resource(
        Some("ann"),
        "DELETE",
        "/threads/t1",
        Some(json!({"agentId": "echo"})),
    )
    .await;
    assert_eq!((status, deleted["deleted"].as_bool()), (200, Some(true)));
    for path in ["/info", "/agent/echo/run", "//threads", "threads"] {
        let (status, _) = resource(Some("ann"), "GET", path, None).await;
        assert!(status == 404 || status == 400, "{path}: {status}");
    }
}

async fn a_stop_from_another_owner_stops_nothing(store: Store) {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let g = gate.clone();
    let slow = agent_fn(move |input: RunAgentInput, _ctx: RunContext, tx: Emitter| {
        let g = g.clone();
        async move {
            let m = format!("{}-m", input.run_id);
            tx.emit(Event::text_message_start(&m)).await?;
            let _p = g.acquire().await.map_err(AgentError::internal)?;
            tx.emit(Event::text_message_end(&m)).await?;
            Ok::<(), AgentError>(())
        }
    });
    let s = serve(store, CopilotRuntime::new().agent("slow", slow)).await;
    let mut running = call(
        &s,
        Some("ann"),
        "POST",
        "/agent/slow/run",
        &body("t", "r1", "go"),
    )
    .await;
    assert_eq!(
        running.next_event().await.map(|e| e.event_type().as_str()),
        Some("RUN_STARTED")
    );
    let mut c = call(&s, Some("bob"), "POST", "/agent/slow/stop/t", &json!({})).await;
    assert_eq!(
        c.json().await["stopped"],
        false,
        "bob's thread t runs nothing"
    );
    let mut c = call(&s, None, "POST", "/agent/slow/stop/t", &json!({})).await;
    assert_eq!(
        c.json().await["stopped"],
        false,
        "nor does the anonymous owner's"
    );
    let mut c = call(&s, Some("ann"), "POST", "/agent/slow/stop/t", &json!({})).await;
    assert_eq!(c.json().await["stopped"], true);
    let rest = running.events().await;
    assert_eq!(types(&rest).last(), Some(&"RUN_FINISHED"));
}

async fn a_suggestion_run_streams_and_is_kept_in_no_thread(store: Store) {
    let s = serve(store, CopilotRuntime::new().agent("echo", echo())).await;
    let mut c = call(
        &s,
        Some("ann"),
        "POST",
        "/agent/echo/suggest",
        &body("sug", "s1", "ideas?"),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.header("content-type"), Some("text/event-stream"));
    let events = c.events().await;
    agui_sdk_core::semantics::verify_events(&events).unwrap();
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    // CopilotKit's clients declare no protocol version: the run is written for them.
    match &events[0] {
        Event::RunStarted(r) => assert!(r.protocol_version.is_none()),
        other => panic!("RUN_STARTED first, got {other:?}"),
    }
    let (_, list) = get(&s, Some("ann"), "/threads").await;
    assert_eq!(
        list["threads"],
        json!([]),
        "a suggestion run is in no thread"
    );
    // The single-route method too.
    let mut c = call(
        &s,
        None,
        "POST",
        "",
        &json!({"method": "agent/suggest", "params": {"agentId": "echo"}, "body": body("sug", "s2", "more")}),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(types(&c.events().await).last(), Some(&"RUN_FINISHED"));
    // A suggestion run sent to `/run` (CopilotKit's single-route mode does so, on a fresh
    // thread), through either route: streamed, and kept in no thread either.
    let mut suggesting = body("sug-run", "s3", "ideas?");
    suggesting["forwardedProps"] =
        json!({"toolChoice": {"type": "function", "function": {"name": "copilotkitSuggest"}}});
    let mut c = call(&s, Some("ann"), "POST", "/agent/echo/run", &suggesting).await;
    assert_eq!(c.status, 200);
    assert_eq!(types(&c.events().await).last(), Some(&"RUN_FINISHED"));
    suggesting["runId"] = json!("s4");
    let mut c = call(
        &s,
        Some("ann"),
        "POST",
        "",
        &json!({"method": "agent/run", "params": {"agentId": "echo"}, "body": suggesting}),
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(types(&c.events().await).last(), Some(&"RUN_FINISHED"));
    let (_, list) = get(&s, Some("ann"), "/threads?includeArchived=true").await;
    assert_eq!(
        list["threads"],
        json!([]),
        "a suggestion run through /run is in no thread"
    );
    // The same body without the tool choice is a run of the thread.
    let mut c = call(
        &s,
        Some("ann"),
        "POST",
        "/agent/echo/run",
        &body("sug-run", "s5", "hi"),
    )
    .await;
    assert_eq!(types(&c.events().await).last(), Some(&"RUN_FINISHED"));
    let (_, list) = get(&s, Some("ann"), "/threads").await;
    assert_eq!(list["threads"][0]["id"], "sug-run");
}
