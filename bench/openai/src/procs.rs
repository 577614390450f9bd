//! The driver's processes: the endpoint and AG-UI servers it starts, and the CPU time
//! it reads of them and of the machine.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::now_ns;

/// A child process that printed `listening PORT`.
pub(crate) struct Proc {
    pub(crate) child: Child,
    pub(crate) port: u16,
}

impl Proc {
    pub(crate) fn spawn(cmd: &[String]) -> Proc {
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the port");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{cmd:?} printed {line:?}"));
        Proc { child, port }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds (user + system, all threads) so far.
    pub(crate) fn cpu(&self) -> f64 {
        cpu_of(self.pid())
    }

    /// SIGTERM, then waits (up to `wait`), then kills.
    pub(crate) fn stop(mut self, wait: Duration) {
        // SAFETY: sending a signal to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let until = std::time::Instant::now() + wait;
        while std::time::Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// CPU seconds of a process: the sum of its live threads' `schedstat` (nanoseconds on
/// a CPU), finer than the clock ticks of `stat`. (A thread that ended between two
/// readings would be missed; the processes here keep theirs.)
pub(crate) fn cpu_of(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    let mut ns = 0u64;
    for t in tasks.flatten() {
        let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        ns += s
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    ns as f64 / 1e9
}

/// Context switches (voluntary and not) of a process's live threads so far.
pub(crate) fn switches_of(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut n = 0u64;
    for t in tasks.flatten() {
        let s = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for l in s.lines() {
            if l.starts_with("voluntary_ctxt_switches:")
                || l.starts_with("nonvoluntary_ctxt_switches:")
            {
                n += l
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    n
}

/// Busy CPU seconds of the whole machine so far (all cores).
pub(crate) fn machine_busy() -> f64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = s.lines().next().unwrap_or("");
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return 0.0;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let total: f64 = v.iter().take(8).sum();
    (total - v[3] - v[4]) / ticks()
}

pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPU time of the three processes and of the whole machine, at one moment.
#[derive(Clone, Copy)]
pub(crate) struct Cpu {
    pub(crate) upstream: f64,
    pub(crate) agent: f64,
    pub(crate) driver: f64,
    pub(crate) machine: f64,
    pub(crate) wall: u64,
    pub(crate) agent_switches: u64,
}

/// An AG-UI server process.
pub(crate) struct Agent {
    pub(crate) proc: Proc,
    pub(crate) url: String,
    /// Its runtime, for the tables.
    pub(crate) label: &'static str,
}

impl Agent {
    pub(crate) fn spawn(
        exe: &str,
        up_url: &str,
        workers: Option<&str>,
        label: &'static str,
    ) -> Agent {
        let mut cmd = vec![
            exe.to_owned(),
            "agent".into(),
            "--upstream".into(),
            up_url.to_owned(),
        ];
        if let Some(w) = workers {
            cmd.extend(["--workers".into(), w.to_owned()]);
        }
        let proc = Proc::spawn(&cmd);
        let url = format!("http://127.0.0.1:{}", proc.port);
        Agent { proc, url, label }
    }
}

/// CPU of the endpoint, of `agent`, of this process and of the machine, now.
pub(crate) fn snapshot(upstream: &Proc, agent: &Agent) -> Cpu {
    Cpu {
        upstream: upstream.cpu(),
        agent: agent.proc.cpu(),
        driver: cpu_of(std::process::id()),
        machine: machine_busy(),
        wall: now_ns(),
        agent_switches: switches_of(agent.proc.pid()),
    }
}

/// The other processes' share of the machine during a phase, in cores.
pub(crate) fn others(before: Cpu, after: Cpu) -> f64 {
    let wall = (after.wall - before.wall) as f64 / 1e9;
    let ours = (after.upstream - before.upstream)
        + (after.agent - before.agent)
        + (after.driver - before.driver);
    ((after.machine - before.machine) - ours).max(0.0) / wall.max(1e-9)
}
