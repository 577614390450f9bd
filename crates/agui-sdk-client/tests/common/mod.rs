//! Helpers for the client's interop tests: the reference-SDK servers and the reference
//! client, run as child processes on loopback.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The repository's `interop/` folder.
pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

fn require_setup() {
    let dir = interop_dir();
    assert!(
        dir.join("node_modules/@ag-ui/client").is_dir() && dir.join(".venv/bin/python").is_file(),
        "the reference packages are not installed: run scripts/setup-interop.sh"
    );
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

fn spawn(mut cmd: Command) -> RefServer {
    require_setup();
    let mut child = cmd
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
        .unwrap_or_else(|| panic!("unexpected server output {line:?}"));
    RefServer {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// The Node server on the reference TypeScript encoder (SSE and protobuf).
pub fn node_server() -> RefServer {
    let mut cmd = Command::new("node");
    cmd.arg("ref-server.mjs").arg("0");
    spawn(cmd)
}

/// The Python server on the reference Python SDK with uvicorn (SSE only).
pub fn python_server() -> RefServer {
    let mut cmd = Command::new(interop_dir().join(".venv/bin/python"));
    cmd.arg("ref_server.py").arg("0");
    spawn(cmd)
}

/// Runs the reference `HttpAgent` with a plan (see `interop/ref-client.mjs`); returns
/// one JSON object per run.
pub fn reference_client(
    url: &str,
    plan: &serde_json::Value,
    proto: bool,
) -> Vec<serde_json::Value> {
    require_setup();
    let mut cmd = Command::new("node");
    cmd.current_dir(interop_dir())
        .arg("ref-client.mjs")
        .arg(url);
    if proto {
        cmd.arg("--proto");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(plan.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "reference client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
