//! `agui check URL` end to end: against `agui serve`, against a server that breaks a
//! rule, and against nothing; the JSON and JUnit reports checked against their shapes,
//! and the exit statuses (0 passed, 1 an error finding, 2 usage or unreachable).

use crate::common;

use std::io::{Read, Write};

use common::{agui, spawn_serve};
use serde_json::Value;

/// Checks `v` against the report's JSON shape; returns the scenarios.
fn assert_report_shape(v: &Value, target: &str) -> Vec<Value> {
    let o = v.as_object().expect("the report is an object");
    let keys: Vec<&str> = o.keys().map(String::as_str).collect();
    assert_eq!(keys, ["target", "passed", "scenarios", "summary"], "{v}");
    assert_eq!(v["target"], target);
    assert!(v["passed"].is_boolean());
    let (mut errors, mut warnings) = (0, 0);
    let mut by_status = std::collections::BTreeMap::<String, usize>::new();
    let scenarios = v["scenarios"].as_array().expect("scenarios").clone();
    for s in &scenarios {
        let so = s.as_object().unwrap();
        let skipped = s["skipped"].as_bool().expect("skipped is a boolean");
        let status = s["status"].as_str().expect("status is a string");
        assert!(
            ["passed", "failed", "not-exercised", "skipped"].contains(&status),
            "{s}"
        );
        *by_status.entry(status.to_owned()).or_default() += 1;
        assert_eq!(s["passed"], status == "passed", "{s}");
        assert_eq!(skipped, status == "skipped", "{s}");
        let mut want = vec!["id", "status", "passed", "skipped"];
        if skipped || status == "not-exercised" {
            want.push("reason");
            assert!(s["reason"].as_str().is_some_and(|r| !r.is_empty()), "{s}");
        }
        want.push("findings");
        want.push("repeated");
        assert_eq!(
            so.keys().map(String::as_str).collect::<Vec<_>>(),
            want,
            "{s}"
        );
        assert!(s["id"].is_string() && s["passed"].is_boolean());
        let mut failed = false;
        for f in s["findings"].as_array().expect("findings") {
            let fo = f.as_object().unwrap();
            for k in fo.keys() {
                assert!(
                    ["rule", "level", "request", "event", "message", "alsoIn"]
                        .contains(&k.as_str()),
                    "unexpected key {k} in {f}"
                );
            }
            assert!(f["rule"].as_str().is_some_and(|r| r.contains('/')), "{f}");
            assert!(f["message"].as_str().is_some_and(|m| !m.is_empty()), "{f}");
            for k in ["request", "event"] {
                assert!(f.get(k).is_none_or(Value::is_u64), "{f}");
            }
            match f["level"].as_str() {
                Some("error") => {
                    errors += 1;
                    failed = true;
                }
                Some("warning") => warnings += 1,
                other => panic!("level {other:?} in {f}"),
            }
        }
        for r in s["repeated"].as_array().expect("repeated") {
            assert!(r["reportedIn"].is_string() && r["rule"].is_string(), "{r}");
            failed |= r["level"] == "error";
        }
        if failed {
            assert_eq!(status, "failed", "{s}");
        }
    }
    assert_eq!(v["summary"]["errors"], errors);
    assert_eq!(v["summary"]["warnings"], warnings);
    assert_eq!(v["passed"], errors == 0);
    for (key, status) in [
        ("passed", "passed"),
        ("failed", "failed"),
        ("notExercised", "not-exercised"),
        ("skipped", "skipped"),
    ] {
        let n = by_status.get(status).copied().unwrap_or(0);
        assert_eq!(v["summary"][key], n, "{key}: {v}");
    }
    assert_eq!(v["summary"].as_object().unwrap().len(), 6);
    scenarios
}

/// Whether `xml` is well-formed (balanced tags, quoted attributes, escaped text);
/// returns its elements as `(name, attributes text, depth)`.
fn xml_elements(xml: &str) -> Vec<(String, String, usize)> {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("an XML declaration");
    let mut stack: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        assert!(!text.contains('>'), "raw > in text: {text:?}");
        for (i, _) in text.match_indices('&') {
            let ent = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#10;"]
                    .iter()
                    .any(|e| ent.starts_with(e)),
                "bare & in {text:?}"
            );
        }
        let gt = rest[lt..].find('>').expect("an unclosed tag") + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, attrs) = tag.split_once(' ').unwrap_or((tag, ""));
        assert_eq!(
            attrs.matches('"').count() % 2,
            0,
            "unquoted attribute in <{tag}>"
        );
        assert!(!attrs.contains('<'), "< in attributes of <{tag}>");
        out.push((name.to_owned(), attrs.to_owned(), stack.len()));
        if !self_closing {
            stack.push(name.to_owned());
        }
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    assert!(rest.trim().is_empty());
    out
}

#[test]
fn checking_agui_serve_passes_in_every_format() {
    let served = spawn_serve(&[], &[], &[]);
    let url = format!("{}/interrupt", served.base);
    let out = agui(&["check", &url, "--format", "json", "--timeout", "5"], b"");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Exactly one JSON object.
    let mut stream = serde_json::Deserializer::from_str(&stdout).into_iter::<Value>();
    let report = stream.next().unwrap().unwrap();
    assert!(stream.next().is_none(), "one object only: {stdout}");
    let scenarios = assert_report_shape(&report, &url);
    assert_eq!(scenarios.len(), 13);
    assert_eq!(report["passed"], true);
    for id in [
        "interrupts",
        "interrupts-unknown",
        "interrupts-replay",
        "interrupts-no-resume",
    ] {
        let s = scenarios.iter().find(|s| s["id"] == id).unwrap();
        assert_eq!(
            s["status"], "passed",
            "the interrupt agent pauses and handles each resume: {s}"
        );
    }

    let out = agui(&["check", &url, "--format", "junit"], b"");
    assert_eq!(out.status.code(), Some(0));
    let xml = String::from_utf8(out.stdout).unwrap();
    let elements = xml_elements(&xml);
    assert_eq!(elements[0].0, "testsuite");
    assert!(
        elements[0].1.contains("tests=\"13\" failures=\"0\""),
        "{xml}"
    );
    let cases: Vec<_> = elements.iter().filter(|e| e.0 == "testcase").collect();
    assert_eq!(cases.len(), 13);
    assert!(cases.iter().all(|c| c.2 == 1));
    // Skipped and not exercised scenarios are both JUnit's skipped.
    let skipped = scenarios
        .iter()
        .filter(|s| s["status"] == "skipped" || s["status"] == "not-exercised")
        .count();
    assert_eq!(
        elements.iter().filter(|e| e.0 == "skipped").count(),
        skipped
    );
    assert!(!elements.iter().any(|e| e.0 == "failure"));

    let out = agui(
        &["check", &url, "--scenario", "chat", "--scenario", "state"],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    // The interrupt agent sends no state: the state scenario says so, and does not pass.
    assert!(
        text.contains(
            "PASS chat\nNOT EXERCISED state (the agent sent no state snapshot or delta)\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("1 passed, 0 failed, 1 not exercised, 0 skipped: passed\n"),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "no colour into a pipe: {text}");
}

/// A server answering every request with the same event stream, which lacks its
/// `RUN_STARTED`, and with `HTTP 404` to `GET` (no capabilities).
fn broken_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let mut req = Vec::new();
                // The head and, for a POST, its body (the checker's are small).
                while let Ok(n) = s.read(&mut buf) {
                    req.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&req);
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let len = text[..head_end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if req.len() >= head_end + 4 + len {
                            break;
                        }
                    }
                    if n == 0 {
                        break;
                    }
                }
                let answer = if req.starts_with(b"GET") {
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found".to_owned()
                } else {
                    let body = "data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n";
                    format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                };
                let _ = s.write_all(answer.as_bytes());
            });
        }
    });
    format!("http://{addr}/agent")
}

#[test]
fn an_error_finding_exits_1_and_is_reported_in_every_format() {
    let url = broken_server();
    let out = agui(
        &[
            "check",
            &url,
            "--format",
            "json",
            "--scenario",
            "chat",
            "--scenario",
            "invalid-input",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let scenarios = assert_report_shape(&report, &url);
    assert_eq!(report["passed"], false);
    let chat = &scenarios[0]["findings"];
    assert_eq!(chat.as_array().unwrap().len(), 1, "{chat}");
    assert_eq!(chat[0]["rule"], "lifecycle/run-started-first");
    assert_eq!(chat[0]["event"], 0);
    assert!(
        chat[0].get("request").is_none(),
        "one request: no request index"
    );
    // The invalid bodies got a 200 stream: one finding per request, each naming it.
    let invalid = scenarios[1]["findings"].as_array().unwrap();
    let requests: Vec<_> = invalid
        .iter()
        .map(|f| (f["rule"].clone(), f["request"].clone()))
        .collect();
    assert_eq!(
        requests,
        [
            ("input/invalid-rejected".into(), 0.into()),
            ("input/invalid-rejected".into(), 1.into())
        ]
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("failed the check: 3 errors"));

    let out = agui(
        &["check", &url, "--format", "junit", "--scenario", "chat"],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    let elements = xml_elements(&xml);
    let failures: Vec<_> = elements.iter().filter(|e| e.0 == "failure").collect();
    assert_eq!(failures.len(), 1, "{xml}");
    assert_eq!(failures[0].2, 2, "a failure sits in its testcase");
    assert!(
        failures[0]
            .1
            .contains("type=\"lifecycle/run-started-first\""),
        "{xml}"
    );

    let out = agui(&["check", &url, "--scenario", "chat"], b"");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("FAIL chat\n    error event 0 [lifecycle/run-started-first]: First event must be 'RUN_STARTED'"), "{text}");
}

#[test]
fn usage_errors_and_an_unreachable_url_exit_2() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/agent");
    let out = agui(&["check", &url], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot reach {url}")), "{err}");
    assert!(out.stdout.is_empty());
    for args in [
        &["check", &url, "--scenario", "nonsense"][..],
        &["check", &url, "--format", "yaml"][..],
        &["check", &url, "--timeout", "0"][..],
        &["check", &url, "--header", "no colon"][..],
        &["check", "not a url"][..],
        &["check"][..],
    ] {
        let out = agui(args, b"");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
