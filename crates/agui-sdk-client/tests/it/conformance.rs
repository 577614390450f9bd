//! The AG-UI 1.1 client conformance corpus (`fixtures/conformance-1.1/streams/`), replayed
//! over real HTTP/SSE into the client's `Conversation`, every `expect` key asserted with the
//! corpus's own semantics. Where this client deliberately differs, the entry in
//! `fixtures/conformance-1.1/overrides-rust.json` replaces the named keys, with its reason.
//!
//! Prints one line per fixture and fails naming every fixture that did not pass.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agui_sdk_client::{Conversation, Flow, HttpAgent, RunParams, Subscriber};
use agui_sdk_core::semantics::{InboundWarning, ProtocolVersion};
use agui_sdk_core::{Event, Message};
use agui_sdk_testkit::server::{spawn, TestServer};
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use serde_json::{Map, Value};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance-1.1")
}

/// One fixture, its expectations resolved for this lane.
struct Fixture {
    name: String,
    raw: Value,
    expect: Map<String, Value>,
    overridden: bool,
}

fn load_fixtures() -> Vec<Fixture> {
    let dir = corpus_dir();
    let overrides: Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("overrides-rust.json")).expect("overrides file"),
    )
    .expect("overrides JSON");
    let manifest = std::fs::read_to_string(dir.join("streams/MANIFEST.txt")).expect("manifest");
    let names: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut out = Vec::new();
    for file in names {
        let text = std::fs::read_to_string(dir.join("streams").join(file)).expect(file);
        let raw: Value = serde_json::from_str(&text).expect(file);
        let name = raw["name"].as_str().expect("name").to_owned();
        assert_eq!(
            format!("{name}.json"),
            file,
            "a fixture's name is its file name"
        );
        let mut expect = raw["expect"].as_object().expect("expect").clone();
        let mut overridden = false;
        if let Some(o) = overrides.get(&name) {
            let o = o.as_object().expect("an override is an object");
            assert!(
                o.get("intentional")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty()),
                "the override of {name} says why"
            );
            for (k, v) in o {
                if k != "intentional" {
                    expect.insert(k.clone(), v.clone());
                }
            }
            overridden = true;
        }
        out.push(Fixture {
            name,
            raw,
            expect,
            overridden,
        });
    }
    for name in overrides.keys() {
        assert!(
            out.iter().any(|f| &f.name == name),
            "override for a fixture the corpus does not have: {name}"
        );
    }
    out
}

// ---- the replay server ----------------------------------------------------------------

#[derive(Clone, Default)]
struct Replay {
    /// Fixture name → its stream.
    streams: Arc<std::collections::HashMap<String, Vec<Value>>>,
    /// Fixture name → the request body received.
    requests: Arc<Mutex<std::collections::HashMap<String, Value>>>,
}

async fn replay(
    State(r): State<Replay>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    r.requests.lock().unwrap().insert(name.clone(), request);
    let Some(stream) = r.streams.get(&name) else {
        return (axum::http::StatusCode::NOT_FOUND, "no such fixture").into_response();
    };
    // Each event verbatim, one SSE event each, as a producer would have sent it.
    let mut sse = String::new();
    for ev in stream {
        sse.push_str("data: ");
        sse.push_str(&serde_json::to_string(ev).unwrap());
        sse.push_str("\n\n");
    }
    ([("content-type", "text/event-stream")], sse).into_response()
}

async fn start_server(fixtures: &[Fixture]) -> (TestServer, Requests) {
    let streams = fixtures
        .iter()
        .map(|f| {
            let s = f.raw["stream"].as_array().expect("stream").clone();
            (f.name.clone(), s)
        })
        .collect();
    let state = Replay {
        streams: Arc::new(streams),
        requests: Default::default(),
    };
    let requests = state.requests.clone();
    let app = axum::Router::new()
        .route("/{name}", axum::routing::post(replay))
        .with_state(state);
    (spawn(app).await, requests)
}

/// Fixture name → the request body the replay server received.
type Requests = Arc<Mutex<std::collections::HashMap<String, Value>>>;

// ---- the client side -------------------------------------------------------------------

#[derive(Default)]
struct Seen {
    events: Vec<Value>,
    warnings: Vec<String>,
}

struct Recorder(Arc<Mutex<Seen>>);

impl Subscriber for Recorder {
    fn on_event(&mut self, event: &Event) -> Flow {
        let v = serde_json::to_value(event).unwrap();
        self.0.lock().unwrap().events.push(v);
        Flow::Continue
    }
    fn on_warning(&mut self, warning: &InboundWarning) {
        self.0.lock().unwrap().warnings.push(warning.to_string());
    }
}

/// What one fixture's run produced, as the corpus observes it.
struct Observed {
    /// `Ok(())`: the client consumed the stream (a producer's RUN_ERROR included);
    /// `Err(text)`: the client rejected it.
    outcome: Result<(), String>,
    events: Vec<Value>,
    warnings: Vec<String>,
    messages: Vec<Value>,
    state: Value,
    request: Value,
}

/// How a lane is set up: the real client, or one with a stage broken on purpose.
#[derive(Clone, Copy, PartialEq)]
enum Lane {
    Real,
    NoEnforcement,
    NoVerification,
}

async fn run_fixture(base: &str, requests: &Requests, f: &Fixture, lane: Lane) -> Observed {
    let http = HttpAgent::builder(format!("{base}/{}", f.name))
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut builder = Conversation::builder(http)
        .subscribe(Recorder(seen.clone()))
        .enforce(lane != Lane::NoEnforcement)
        .verify(lane != Lane::NoVerification);
    if let Some(v) = f
        .raw
        .pointer("/client/maxProtocolVersion")
        .and_then(Value::as_str)
    {
        builder = builder.max_protocol_version(ProtocolVersion::parse(v).expect("a version pin"));
    }
    let mut input = f.raw.get("input").cloned().unwrap_or(Value::Null);
    if let Some(messages) = input.get_mut("messages") {
        // What an application holding the input as JSON does: legacy content upgraded on
        // the way in, then typed.
        agui_sdk_core::semantics::upgrade_legacy_content(messages);
        let messages: Vec<Message> =
            agui_sdk_core::wire::from_json_value(messages).expect("the fixture's input messages");
        builder = builder.messages(messages);
    }
    let mut agent = builder.build();
    let outcome = match agent.run_agent(RunParams::new()).await {
        Ok(_) => Ok(()),
        // The producer's own failure is delivered, not a rejection.
        Err(agui_sdk_client::ClientError::RunFailed { .. }) => Ok(()),
        Err(e) => Err(e.to_string()),
    };
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let request = requests
        .lock()
        .unwrap()
        .remove(&f.name)
        .unwrap_or(Value::Null);
    Observed {
        outcome,
        events: seen.events,
        warnings: seen.warnings,
        messages: agent
            .messages()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect(),
        state: agent.state().clone(),
        request,
    }
}

// ---- the corpus's assertions -----------------------------------------------------------

/// The corpus's subset match: arrays have the same length and match element-wise,
/// objects match on the keys the expectation names, everything else is equal.
fn subset(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!(
                    "{path}: expected {} elements, got {}: {actual}",
                    e.len(),
                    a.len()
                ));
            }
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                subset(e, a, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                match a.get(k) {
                    Some(av) => subset(ev, av, &format!("{path}.{k}"))?,
                    None => return Err(format!("{path}.{k}: missing in {actual}")),
                }
            }
            Ok(())
        }
        (e, a) if json_eq(e, a) => Ok(()),
        (e, a) => Err(format!("{path}: expected {e}, got {a}")),
    }
}

/// Equality with numbers compared by value (`1` equals `1.0`), as JavaScript compares.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Resolves a dotted path (`outcome.interrupts.0.id`) inside a value.
fn dotted<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(o) => o.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// `"<index>.<dotted path>"` inside the delivered events.
fn event_path<'a>(events: &'a [Value], key: &str) -> Option<&'a Value> {
    let (index, rest) = key.split_once('.')?;
    dotted(events.get(index.parse::<usize>().ok()?)?, rest)
}

fn check(f: &Fixture, o: &Observed) -> Vec<String> {
    let mut fails = Vec::new();
    let types: Vec<&str> = o
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    for (key, want) in &f.expect {
        let r: Result<(), String> =
            match key.as_str() {
                "outcome" => match (want.as_str(), &o.outcome) {
                    (Some("completed"), Ok(())) | (Some("failed"), Err(_)) => Ok(()),
                    (_, Ok(())) => Err("the client consumed the stream".into()),
                    (_, Err(e)) => Err(format!("the client rejected the stream: {e}")),
                },
                "errorContains" => {
                    let needle = want.as_str().unwrap();
                    match &o.outcome {
                        Err(e) if e.contains(needle) => Ok(()),
                        Err(e) => Err(format!("error {e:?} lacks {needle:?}")),
                        Ok(()) => Err(format!("no error (expected one containing {needle:?})")),
                    }
                }
                "runError" => {
                    let errors: Vec<&str> = o
                        .events
                        .iter()
                        .filter(|e| e["type"] == "RUN_ERROR")
                        .map(|e| e["message"].as_str().unwrap_or(""))
                        .collect();
                    let ok = match want {
                        Value::Bool(true) => !errors.is_empty(),
                        Value::Bool(false) => errors.is_empty(),
                        Value::String(s) => errors.iter().any(|m| m.contains(s.as_str())),
                        _ => false,
                    };
                    if ok {
                        Ok(())
                    } else {
                        Err(format!("run errors {errors:?}, expected {want}"))
                    }
                }
                "eventTypes" => {
                    let want: Vec<&str> = want
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap())
                        .collect();
                    if want == types {
                        Ok(())
                    } else {
                        Err(format!("delivered {types:?}"))
                    }
                }
                "eventTypesAbsent" => {
                    let bad: Vec<&str> = want
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|t| types.contains(t))
                        .collect();
                    if bad.is_empty() {
                        Ok(())
                    } else {
                        Err(format!("delivered {bad:?}"))
                    }
                }
                "eventPaths" => want.as_object().unwrap().iter().try_for_each(|(k, v)| {
                    match event_path(&o.events, k) {
                        Some(a) if json_eq(a, v) => Ok(()),
                        Some(a) => Err(format!("{k} is {a}, expected {v}")),
                        None => Err(format!("{k} is absent, expected {v}")),
                    }
                }),
                "eventAbsentPaths" => want.as_array().unwrap().iter().try_for_each(|k| {
                    let k = k.as_str().unwrap();
                    match event_path(&o.events, k) {
                        Some(a) => Err(format!("{k} is present: {a}")),
                        None => Ok(()),
                    }
                }),
                "warnings" => want.as_array().unwrap().iter().try_for_each(|w| {
                    let w = w.as_str().unwrap();
                    if o.warnings.iter().any(|x| x.contains(w)) {
                        Ok(())
                    } else {
                        Err(format!(
                            "no warning contains {w:?}; warnings: {:?}",
                            o.warnings
                        ))
                    }
                }),
                "noWarnings" => {
                    if want == &Value::Bool(true) && !o.warnings.is_empty() {
                        Err(format!("warnings: {:?}", o.warnings))
                    } else {
                        Ok(())
                    }
                }
                "messageCount" => {
                    let n = want.as_u64().unwrap() as usize;
                    if o.messages.len() == n {
                        Ok(())
                    } else {
                        Err(format!("{} messages: {:?}", o.messages.len(), o.messages))
                    }
                }
                "messages" => subset(want, &Value::Array(o.messages.clone()), "messages"),
                "state" => subset(want, &o.state, "state"),
                "request" => subset(want, &o.request, "request"),
                "requestAbsentPaths" => want.as_array().unwrap().iter().try_for_each(|k| {
                    let k = k.as_str().unwrap();
                    match dotted(&o.request, k) {
                        Some(a) => Err(format!("request.{k} is present: {a}")),
                        None => Ok(()),
                    }
                }),
                other => Err(format!(
                    "unknown expect key {other:?}: this runner must learn it"
                )),
            };
        if let Err(e) = r {
            fails.push(format!("{key}: {e}"));
        }
    }
    fails
}

async fn run_lane(
    fixtures: &[Fixture],
    (server, requests): &(TestServer, Requests),
    lane: Lane,
) -> Vec<(String, Vec<String>)> {
    let base = server.base();
    let mut results = Vec::new();
    for f in fixtures {
        let observed = run_fixture(&base, requests, f, lane).await;
        results.push((f.name.clone(), check(f, &observed)));
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_corpus_1_1() {
    let fixtures = load_fixtures();
    assert_eq!(fixtures.len(), 68, "the corpus has 68 fixtures");
    let server = start_server(&fixtures).await;
    let results = run_lane(&fixtures, &server, Lane::Real).await;
    println!("\n{:<52} result", "fixture");
    let mut failed = Vec::new();
    for ((name, fails), f) in results.iter().zip(&fixtures) {
        let mark = match (fails.is_empty(), f.overridden) {
            (true, false) => "pass",
            (true, true) => "pass (override)",
            (false, _) => "FAIL",
        };
        println!("{name:<52} {mark}");
        for fail in fails {
            println!("    {fail}");
        }
        if !fails.is_empty() {
            failed.push(name.clone());
        }
    }
    let passed = results.len() - failed.len();
    println!("conformance: {passed} passed, {} failed", failed.len());
    assert!(failed.is_empty(), "fixtures failed: {failed:?}");
}

/// The lane can fail: with a stage of the pipeline turned off, the fixtures that pin
/// that stage go red.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_lane_detects_a_broken_stage() {
    let fixtures = load_fixtures();
    let server = start_server(&fixtures).await;
    let red = |results: Vec<(String, Vec<String>)>| -> Vec<String> {
        results
            .into_iter()
            .filter(|(_, f)| !f.is_empty())
            .map(|(n, _)| n)
            .collect()
    };
    let no_enforcement = red(run_lane(&fixtures, &server, Lane::NoEnforcement).await);
    for name in [
        "unknown-property-stripped",
        "unknown-event-dropped",
        "unknown-outcome-stripped",
        "unknown-part-in-message-list",
        "state-delta-unknown-op-dropped",
    ] {
        assert!(
            no_enforcement.iter().any(|n| n == name),
            "{name} stays green without enforcement: {no_enforcement:?}"
        );
    }
    let no_verification = red(run_lane(&fixtures, &server, Lane::NoVerification).await);
    for name in [
        "first-event-not-run-started-fatal",
        "nested-run-started-fatal",
        "event-after-run-finished-fatal",
        "step-finished-without-start-fatal",
    ] {
        assert!(
            no_verification.iter().any(|n| n == name),
            "{name} stays green without verification: {no_verification:?}"
        );
    }
}
