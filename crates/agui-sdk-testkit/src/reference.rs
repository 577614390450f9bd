//! The servers and the client built on the reference SDKs (installed under `interop/`
//! by `scripts/setup-interop.sh`), run as child processes on loopback. Call
//! [`crate::interop::ready`] first: these fail when the packages are missing.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::interop;

/// A reference server child process, killed when dropped.
#[derive(Debug)]
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

/// Starts `program script 0` in `interop/`, reads its `listening PORT` line and waits
/// until the port accepts connections (the Python server prints its port once bound,
/// before uvicorn listens).
pub fn spawn(program: impl Into<PathBuf>, script: &str) -> RefServer {
    let mut child = Command::new(program.into())
        .arg(script)
        .arg("0")
        .current_dir(interop::dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the reference server starts");
    let stdout = child.stdout.take().expect("its standard output is piped");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the reference server prints its port");
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected server output {line:?}"));
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    RefServer {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// The Python interpreter of `interop/.venv`, with the reference Python SDK.
pub fn python() -> PathBuf {
    interop::dir().join(".venv/bin/python")
}

/// The Node server on the reference TypeScript encoder (SSE and protobuf), playing the
/// scripts of `interop/scenarios.json`.
pub fn node_server() -> RefServer {
    spawn("node", "ref-server.mjs")
}

/// The Python server on the reference Python SDK with uvicorn (SSE only), playing the
/// same scripts.
pub fn python_server() -> RefServer {
    spawn(python(), "ref_server.py")
}

/// Runs the reference `HttpAgent` against `url` with a plan (see
/// `interop/ref-client.mjs`), over protobuf when `proto`; returns one JSON object per
/// run.
pub fn reference_client(
    url: &str,
    plan: &serde_json::Value,
    proto: bool,
) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("node");
    cmd.current_dir(interop::dir())
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
        .expect("its standard input is piped")
        .write_all(plan.to_string().as_bytes())
        .expect("the plan is written");
    let out = child.wait_with_output().expect("the reference client ends");
    assert!(
        out.status.success(),
        "reference client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("the reference client writes UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect()
}
