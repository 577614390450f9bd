//! The checker against the servers the interop tests run on the reference SDKs: the
//! Node server on `@ag-ui/encoder` (SSE and protobuf) and the Python SDK's encoder on
//! uvicorn (SSE), each playing the scripts of `interop/scenarios.json`.
//!
//! Their event streams are the reference encoders' and must pass every scenario that
//! judges a stream. Their findings are pinned, each with why:
//! - `invalid-input`, request 1: the test servers check only that the body is JSON, so
//!   `{"threadId":42,"messages":"none"}` gets a 200 stream from Node and a 500 from
//!   Python (its script substitution fails on a number): an error each, as the servers
//!   do not validate the input (the SDKs leave that to the application);
//! - `protocol-version`: the scripts' `RUN_STARTED` declares no `protocolVersion` (a
//!   1.0 producer predates the field): a warning;
//! - `tools/offered`, for the `tools` script: it calls `get_weather` whatever the
//!   request offers (a warning, once for every scenario it runs in);
//! - the four interrupt scenarios, `capabilities`, `resumable`: skipped, as the
//!   servers answer `GET` with 400 and advertise nothing.

use std::time::Duration;

use agui_sdk_check::{Checker, Level};
use agui_sdk_testkit::interop as interop_gate;
use agui_sdk_testkit::reference;

/// What a reference server's report must be: `(scenario, rule, level, request)` for
/// every finding, and the scenarios skipped.
async fn check_server(base: &str, invalid_status: &str) {
    for script in ["chat", "tools", "state", "reasoning", "interrupt"] {
        let url = format!("{base}/{script}");
        let report = Checker::new(&url)
            .timeout(Duration::from_secs(10))
            .run()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let text = report.to_text(false);
        println!("{text}");
        let findings: Vec<_> = report
            .scenarios
            .iter()
            .flat_map(|s| {
                s.findings
                    .iter()
                    .map(move |f| (s.id, f.rule, f.level, f.request))
            })
            .collect();
        let mut want = vec![
            ("invalid-input", "input/invalid-rejected", Level::Error, 1),
            (
                "protocol-version",
                "versioning/producer-declares",
                Level::Warning,
                0,
            ),
        ];
        if script == "tools" {
            want.insert(0, ("chat", "tools/offered", Level::Warning, 0));
        }
        assert_eq!(findings, want, "{url}:\n{text}");
        let invalid = &report.scenario("invalid-input").unwrap().findings[0];
        assert!(
            invalid.message.contains(invalid_status),
            "{url}: {}",
            invalid.message
        );
        let skipped: Vec<_> = report
            .scenarios
            .iter()
            .filter(|s| s.skipped.is_some())
            .map(|s| s.id)
            .collect();
        assert_eq!(
            skipped,
            [
                "interrupts",
                "interrupts-unknown",
                "interrupts-replay",
                "interrupts-no-resume",
                "capabilities",
                "resumable"
            ],
            "{url}:\n{text}"
        );
    }
}

#[tokio::test]
async fn the_reference_node_server() {
    if !interop_gate::ready("the_reference_node_server") {
        return;
    }
    let server = reference::node_server();
    check_server(&server.base, "got HTTP 200 (text/event-stream)").await;
}

#[tokio::test]
async fn the_reference_python_server() {
    if !interop_gate::ready("the_reference_python_server") {
        return;
    }
    let server = reference::python_server();
    check_server(&server.base, "got HTTP 500").await;
}
