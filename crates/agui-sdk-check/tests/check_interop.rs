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
//! - `interrupts`, `capabilities`, `resumable`: skipped, as the servers answer `GET`
//!   with 400 and advertise nothing.

mod common {
    use std::io::{BufRead, BufReader};
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};

    pub fn interop_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop")
    }

    /// A reference server child process, killed on drop.
    pub struct RefServer {
        child: Child,
        /// `http://127.0.0.1:PORT`.
        pub base: String,
    }

    impl Drop for RefServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts `program args…` in `interop/` and waits for its `listening PORT` line.
    pub fn spawn(program: PathBuf, script: &str) -> RefServer {
        let mut child = Command::new(program)
            .arg(script)
            .arg("0")
            .current_dir(interop_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the reference server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("unexpected server output {line:?}"))
            .to_owned();
        // The Python server prints its port once bound, before uvicorn listens.
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        RefServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

#[path = "../../../interop/gate.rs"]
mod interop_gate;

use std::time::Duration;

use agui_sdk_check::{Checker, Level};

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
        assert_eq!(
            findings,
            [
                ("invalid-input", "input/invalid-rejected", Level::Error, 1),
                (
                    "protocol-version",
                    "versioning/producer-declares",
                    Level::Warning,
                    0
                ),
            ],
            "{url}:\n{text}"
        );
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
            ["interrupts", "capabilities", "resumable"],
            "{url}:\n{text}"
        );
    }
}

#[tokio::test]
async fn the_reference_node_server() {
    if !interop_gate::ready("the_reference_node_server") {
        return;
    }
    let server = common::spawn("node".into(), "ref-server.mjs");
    check_server(&server.base, "got HTTP 200 (text/event-stream)").await;
}

#[tokio::test]
async fn the_reference_python_server() {
    if !interop_gate::ready("the_reference_python_server") {
        return;
    }
    let server = common::spawn(
        common::interop_dir().join(".venv/bin/python"),
        "ref_server.py",
    );
    check_server(&server.base, "got HTTP 500").await;
}
