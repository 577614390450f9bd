//! `agui run` and `agui check` against an endpoint that redirects to another origin:
//! the headers given with `-H` and the `--bearer` token go to the origin on the command
//! line only. Against listeners on loopback that record every request's headers, one on
//! `127.0.0.2` standing in for a foreign host that redirects to itself.

use std::process::{Command, Output, Stdio};

use agui_sdk_testkit::redirect::{self, Listener};
use serde_json::Value;

const TOKEN: &str = "tok-a93e";
const KEY: &str = "key-17d4";

fn agui(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agui"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// How many of `l`'s requests carried the token, and the `-H` header.
fn credentials(l: &Listener) -> (usize, usize) {
    (
        l.carrying("authorization", TOKEN),
        l.carrying("x-api-key", KEY),
    )
}

/// `agui run` exits 1 with an error naming both origins; the foreign host gets nothing.
#[test]
fn run_refuses_a_cross_origin_redirect() {
    let (home, foreign) = redirect::cross_origin_chain(10);
    let url = home.url("/agent");
    let out = agui(&[
        "run",
        &url,
        "--message",
        "hi",
        "-H",
        &format!("X-Api-Key: {KEY}"),
        "--bearer",
        TOKEN,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{url} redirected (HTTP 307) to {}",
            foreign.url("/hop/0")
        )) && stderr.contains("another origin"),
        "{stderr}"
    );
    assert!(!stderr.contains(TOKEN) && !stderr.contains(KEY), "{stderr}");
    assert_eq!(foreign.seen().len(), 0, "{:?}", foreign.seen());
    assert_eq!(credentials(&foreign), (0, 0));
    assert_eq!(credentials(&home), (1, 1));
}

/// `agui check` reports each redirect as an error finding `transport/redirect` (exit
/// 1); the foreign host gets nothing.
#[test]
fn check_reports_a_cross_origin_redirect() {
    let (home, foreign) = redirect::cross_origin_chain(10);
    let url = home.url("/agent");
    let out = agui(&[
        "check",
        &url,
        "--format",
        "json",
        "--timeout",
        "5",
        "-H",
        &format!("X-Api-Key: {KEY}"),
        "--bearer",
        TOKEN,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let findings: Vec<&Value> = report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["findings"].as_array().unwrap())
        .filter(|f| f["rule"] == "transport/redirect")
        .collect();
    assert!(!findings.is_empty(), "{report}");
    for f in &findings {
        let message = f["message"].as_str().unwrap();
        assert_eq!(f["level"], "error");
        assert!(
            message.contains(&url) && message.contains(&foreign.url("/hop/0")),
            "{message}"
        );
    }
    assert!(home.seen().len() > 1, "the check went on");
    assert_eq!(foreign.seen().len(), 0, "{:?}", foreign.seen());
    assert_eq!(credentials(&foreign), (0, 0));
}
