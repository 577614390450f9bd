//! `agui run` and `agui demo` end to end, against `agui serve` on loopback.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(["serve", "--addr", "127.0.0.1:0", "--delay-ms", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let base = loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "agui serve exited"
        );
        if let Some(rest) = line.trim().strip_prefix("agui: listening on ") {
            break rest.to_owned();
        }
    };
    // Keep draining the server's log so that it never blocks on a full pipe.
    std::thread::spawn(move || for _ in reader.lines() {});
    Server { child, base }
}

fn agui(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn final_line(out: &Output) -> Value {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn run_json_prints_events_then_the_conversation() {
    let server = serve();
    for proto in [false, true] {
        let url = format!("{}/agentic_chat", server.base);
        let mut args = vec![
            "run",
            url.as_str(),
            "--message",
            "hi there",
            "--thread",
            "t1",
            "--json",
        ];
        if proto {
            args.push("--proto");
        }
        let out = agui(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["type"], "RUN_STARTED");
        assert_eq!(lines[0]["threadId"], "t1");
        assert_eq!(lines[lines.len() - 2]["type"], "RUN_FINISHED");
        let last = final_line(&out);
        assert_eq!(last["outcome"]["type"], "success");
        let messages = last["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "user");
        assert_eq!(messages[0]["content"], "hi there");
        assert_eq!(messages[1]["role"], "assistant");
        assert!(messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("hi there"));
    }
}

#[test]
fn run_exits_0_on_interrupt_and_1_on_failure() {
    let server = serve();
    let out = agui(&[
        "run",
        &format!("{}/interrupt", server.base),
        "--message",
        "send it",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let last = final_line(&out);
    assert_eq!(last["outcome"]["type"], "interrupt");
    assert!(!last["outcome"]["interrupts"].as_array().unwrap().is_empty());

    let out = agui(&["run", &format!("{}/no_such_agent", server.base), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HTTP 404"));

    let out = agui(&["run", "http://127.0.0.1:9/agentic_chat"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("transport error"));
}

#[test]
fn run_renders_for_a_person() {
    let server = serve();
    let out = agui(&[
        "run",
        &format!("{}/reasoning", server.base),
        "--message",
        "why?",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("(thinking)"), "{text}");
    assert!(text.contains("agent: After thinking"), "{text}");
    assert!(
        !text.contains("\u{1b}["),
        "no colours when stdout is not a terminal"
    );
}

#[test]
fn demo_talks_to_every_demo_agent() {
    let out = agui(&["demo", "--delay-ms", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "agentic_chat",
        "backend_tool_rendering",
        "human_in_the_loop",
        "agentic_generative_ui",
        "tool_based_generative_ui",
        "shared_state",
        "predictive_state_updates",
        "reasoning",
        "subagents",
        "interrupt",
    ] {
        assert!(
            text.contains(&format!("── {name} ──")),
            "{name} missing:\n{text}"
        );
    }
    assert!(
        text.contains("(the application renders generate_task_steps"),
        "tool round trip:\n{text}"
    );
    assert!(
        text.contains("Executing the 3 steps you approved."),
        "{text}"
    );
    assert!(text.contains("→ approved automatically"), "{text}");
    assert!(text.contains("Approved: the email is sent."), "{text}");
    assert!(text.contains("Done: 13 runs through 10 agents"), "{text}");
    // Over protobuf too.
    let out = agui(&["demo", "--delay-ms", "0", "--proto"]);
    assert!(out.status.success());
}
