//! The report's renderings of what a wire can put in a message: JSON keeps it as it
//! is, JUnit escapes it, text shows where each finding is.

use agui_sdk_check::{Finding, Level, Repeated, Report, ScenarioReport, Status};

fn report() -> Report {
    let nasty = "saw <b>&\"quoted\"</b> 'x'\u{1}\nnext line".to_owned();
    Report {
        target: "http://h/a?x=<1>&y=2".to_owned(),
        scenarios: vec![
            ScenarioReport {
                requests: 2,
                findings: vec![
                    Finding {
                        rule: "lifecycle/run-started-first",
                        level: Level::Error,
                        request: 1,
                        event: Some(0),
                        message: nasty.clone(),
                        also_in: vec![],
                    },
                    Finding {
                        rule: "events/unknown-field",
                        level: Level::Warning,
                        request: 0,
                        event: None,
                        message: nasty,
                        also_in: vec![],
                    },
                ],
                ..scenario("chat")
            },
            ScenarioReport {
                skipped: Some("not advertised".to_owned()),
                ..scenario("resumable")
            },
        ],
    }
}

/// A scenario that ran, made no request and found nothing.
fn scenario(id: &'static str) -> ScenarioReport {
    ScenarioReport {
        id,
        skipped: None,
        not_exercised: None,
        requests: 0,
        findings: vec![],
        repeated: vec![],
    }
}

#[test]
fn json_keeps_the_message_and_names_request_and_event() {
    let r = report();
    let v = r.to_json();
    assert_eq!(v["passed"], false);
    assert_eq!(
        v["summary"],
        serde_json::json!({"errors": 1, "warnings": 1, "passed": 0, "failed": 1,
                           "notExercised": 0, "skipped": 1})
    );
    let f = &v["scenarios"][0]["findings"];
    assert_eq!(f[0]["request"], 1);
    assert_eq!(f[0]["event"], 0);
    assert_eq!(f[1]["request"], 0);
    assert!(f[1].get("event").is_none());
    assert_eq!(f[0]["message"], r.scenarios[0].findings[0].message.as_str());
    assert_eq!(v["scenarios"][1]["reason"], "not advertised");
    assert_eq!(v["scenarios"][1]["status"], "skipped");
    assert_eq!(v["scenarios"][1]["passed"], false, "skipped is not passed");
    assert_eq!(v["scenarios"][0]["status"], "failed");
}

#[test]
fn junit_escapes_everything_a_message_can_hold() {
    let xml = report().to_junit();
    assert!(!xml.contains("<b>") && !xml.contains('\u{1}'), "{xml}");
    assert!(
        xml.contains(
            "saw &lt;b&gt;&amp;&quot;quoted&quot;&lt;/b&gt; &apos;x&apos;\u{FFFD}&#10;next line"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("name=\"agui check http://h/a?x=&lt;1&gt;&amp;y=2\""),
        "{xml}"
    );
    assert!(
        xml.contains("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\""),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<failure ").count(),
        1,
        "warnings are not failures"
    );
    assert!(xml.contains("<skipped message=\"not advertised\"/>"));
    assert!(xml.contains("<system-out>warning events/unknown-field:"));
}

#[test]
fn text_says_where_each_finding_is() {
    let text = report().to_text(false);
    assert!(
        text.contains("FAIL chat\n    error request 1, event 0 [lifecycle/run-started-first]: saw"),
        "{text}"
    );
    assert!(
        text.contains("    warning request 0 [events/unknown-field]"),
        "{text}"
    );
    assert!(text.contains("SKIP resumable (not advertised)"));
    assert!(
        text.ends_with(
            "1 errors, 1 warnings; 0 passed, 1 failed, 0 not exercised, 1 skipped: failed\n"
        ),
        "{text}"
    );
    assert!(!text.contains('\x1b'));
    assert!(report().to_text(true).contains("\x1b[31mFAIL\x1b[0m chat"));
}

#[test]
fn text_escapes_what_the_server_sent_and_keeps_a_finding_on_one_line() {
    let forged =
        "bad\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}\n0 errors, 0 warnings: passed".to_owned();
    let r = Report {
        target: "http://h/a".to_owned(),
        scenarios: vec![ScenarioReport {
            skipped: Some(format!("server said {forged}")),
            requests: 1,
            findings: vec![Finding {
                rule: "run/run-error",
                level: Level::Error,
                request: 0,
                event: Some(3),
                message: forged.clone(),
                also_in: vec![],
            }],
            ..scenario("chat")
        }],
    };
    for color in [false, true] {
        let text = r.to_text(color);
        let lines: Vec<&str> = text.lines().collect();
        // The target, the scenario, its finding, the summary.
        assert_eq!(lines.len(), 4, "{text}");
        assert!(!lines.iter().any(|l| l.starts_with("0 errors")), "{text}");
        for c in ['\u{7}', '\u{9b}', '\u{202e}'] {
            assert!(!text.contains(c), "{c:?} in {text:?}");
        }
        assert!(
            !text.contains("\x1b]") && !text.contains("\x1b[2J"),
            "{text:?}"
        );
        assert!(
            lines[2].ends_with(
                r"event 3 [run/run-error]: bad\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}\n0 errors, 0 warnings: passed"
            ),
            "{text}"
        );
    }
    assert!(!r.to_text(false).contains('\x1b'));
}

/// A check where `state` passed, `frontend-tool` and `interrupts` were not exercised,
/// and one finding of `chat` also broke `hang-up`.
fn honest_report() -> Report {
    Report {
        target: "http://h/a".to_owned(),
        scenarios: vec![
            ScenarioReport {
                requests: 1,
                findings: vec![Finding {
                    rule: "lifecycle/one-thread-per-stream",
                    level: Level::Error,
                    request: 0,
                    event: Some(0),
                    message: "wrong thread".to_owned(),
                    also_in: vec!["hang-up"],
                }],
                ..scenario("chat")
            },
            ScenarioReport {
                requests: 1,
                not_exercised: Some("the agent never called the offered tool".to_owned()),
                ..scenario("frontend-tool")
            },
            ScenarioReport {
                requests: 1,
                ..scenario("state")
            },
            ScenarioReport {
                requests: 1,
                not_exercised: Some("the first run did not pause".to_owned()),
                ..scenario("interrupts")
            },
            ScenarioReport {
                requests: 2,
                repeated: vec![Repeated {
                    rule: "lifecycle/one-thread-per-stream",
                    level: Level::Error,
                    reported_in: "chat",
                }],
                ..scenario("hang-up")
            },
        ],
    }
}

#[test]
fn not_exercised_is_neither_passed_nor_failed_in_every_format() {
    let r = honest_report();
    let status: Vec<_> = r.scenarios.iter().map(|s| (s.id, s.status())).collect();
    assert_eq!(
        status,
        [
            ("chat", Status::Failed),
            ("frontend-tool", Status::NotExercised),
            ("state", Status::Passed),
            ("interrupts", Status::NotExercised),
            ("hang-up", Status::Failed),
        ]
    );
    assert!(!r.scenarios[1].passed() && !r.scenarios[1].failed());
    assert_eq!(r.count(Level::Error), 1, "one root cause, counted once");

    let text = r.to_text(false);
    assert!(
        text.contains("NOT EXERCISED frontend-tool (the agent never called the offered tool)\n"),
        "{text}"
    );
    assert!(
        text.contains("NOT EXERCISED interrupts (the first run did not pause)\n"),
        "{text}"
    );
    assert!(
        text.contains("[lifecycle/one-thread-per-stream]: wrong thread (also in hang-up)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "FAIL hang-up\n    error [lifecycle/one-thread-per-stream]: as in chat (reported there)\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "1 errors, 0 warnings; 1 passed, 2 failed, 2 not exercised, 0 skipped: failed\n"
        ),
        "{text}"
    );

    let v = r.to_json();
    assert_eq!(v["scenarios"][1]["status"], "not-exercised");
    assert_eq!(v["scenarios"][1]["passed"], false);
    assert_eq!(v["scenarios"][1]["skipped"], false);
    assert_eq!(
        v["scenarios"][1]["reason"],
        "the agent never called the offered tool"
    );
    assert_eq!(v["scenarios"][2]["status"], "passed");
    assert_eq!(
        v["scenarios"][0]["findings"][0]["alsoIn"],
        serde_json::json!(["hang-up"])
    );
    assert_eq!(
        v["scenarios"][4]["repeated"],
        serde_json::json!([{"rule": "lifecycle/one-thread-per-stream", "level": "error",
                            "reportedIn": "chat"}])
    );
    assert_eq!(
        v["summary"],
        serde_json::json!({"errors": 1, "warnings": 0, "passed": 1, "failed": 2,
                           "notExercised": 2, "skipped": 0})
    );

    let xml = r.to_junit();
    assert!(
        xml.contains("tests=\"5\" failures=\"2\" errors=\"0\" skipped=\"2\""),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<skipped message=\"not exercised: the agent never called the offered tool\"/>"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("<failure type=\"lifecycle/one-thread-per-stream\" message=\"the finding reported under chat\"/>"),
        "{xml}"
    );
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
}
