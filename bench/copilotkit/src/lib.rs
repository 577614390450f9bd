//! What the benchmark's drivers share: a server process started from its command,
//! its resident size, and the requests every server answers the same way.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Server {
    /// Starts `cmd` (split on spaces) and reads its `listening <port>` line.
    pub fn start(cmd: &str) -> Server {
        let mut parts = cmd.split_whitespace();
        let prog = parts.next().expect("empty server command");
        let mut child = Command::new(prog)
            .args(parts)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        let mut reader = BufReader::new(stdout);
        reader.read_line(&mut line).expect("server output");
        let port: u16 = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{cmd:?} printed {line:?}, not `listening <port>`"));
        // Keep draining its output so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `VmRSS` of a process, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A response's body as JSON, `null` when it is not.
#[allow(async_fn_in_trait)]
pub trait JsonOrNull {
    /// The body as JSON, `null` when it is not.
    async fn json_or_null(self) -> Value;
}

impl JsonOrNull for reqwest::Response {
    async fn json_or_null(self) -> Value {
        let bytes = self.bytes().await.unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }
}

/// Asks the server to collect garbage; its heap in use after.
pub async fn gc(client: &reqwest::Client, base: &str) -> Option<u64> {
    let v = client
        .post(format!("{base}/debug/gc"))
        .send()
        .await
        .expect("POST /debug/gc")
        .json_or_null()
        .await;
    v["heapUsed"].as_u64()
}

/// The HTTP client of every driver: kept-alive connections, no Nagle, 120 s timeout.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .tcp_nodelay(true)
        .build()
        .expect("client")
}
