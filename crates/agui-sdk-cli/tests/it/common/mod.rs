//! Helpers shared by the CLI tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Path of a reference vector under `fixtures/reference/`.
pub(crate) fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/reference")
        .join(path)
}

/// Runs `agui` with `args`, feeding `stdin`.
pub(crate) fn agui(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agui runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// `agui serve` running as a child process, killed when dropped.
pub(crate) struct Served {
    /// The process.
    pub child: std::process::Child,
    /// `ADDR` (host:port).
    pub addr: String,
    /// `http://ADDR`.
    pub base: String,
    /// What it logged (standard error) so far.
    pub log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agui serve --addr 127.0.0.1:0 ARGS…` with the environment `env`, run
/// through `wrapper` (such as `prlimit …`) when given; returns once it listens. Its log
/// keeps being read, so that it never blocks on a full pipe.
pub(crate) fn spawn_serve(wrapper: &[&str], args: &[&str], env: &[(&str, &str)]) -> Served {
    use std::io::{BufRead, BufReader};
    let mut command = match wrapper.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(env!("CARGO_BIN_EXE_agui"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_agui")),
    };
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("agui serve runs");
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let base = loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "agui serve exited"
        );
        log.lock().unwrap().push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("agui: listening on ") {
            break rest.to_owned();
        }
    };
    let sink = log.clone();
    std::thread::spawn(move || {
        for l in reader.lines().map_while(Result::ok) {
            let mut s = sink.lock().unwrap();
            s.push_str(&l);
            s.push('\n');
        }
    });
    let addr = base.trim_start_matches("http://").to_owned();
    Served {
        child,
        addr,
        base,
        log,
    }
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmHWM:`); 0 when unreadable.
pub(crate) fn status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
