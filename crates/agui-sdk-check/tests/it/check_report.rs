//! The report's renderings of what a wire can put in a message: JSON keeps it as it
//! is, JUnit escapes it, text shows where each finding is.

use agui_sdk_check::{Finding, Level, Report, ScenarioReport};

fn report() -> Report {
    let nasty = "saw <b>&\"quoted\"</b> 'x'\u{1}\nnext line".to_owned();
    Report {
        target: "http://h/a?x=<1>&y=2".to_owned(),
        scenarios: vec![
            ScenarioReport {
                id: "chat",
                skipped: None,
                requests: 2,
                findings: vec![
                    Finding {
                        rule: "lifecycle/run-started-first",
                        level: Level::Error,
                        request: 1,
                        event: Some(0),
                        message: nasty.clone(),
                    },
                    Finding {
                        rule: "events/unknown-field",
                        level: Level::Warning,
                        request: 0,
                        event: None,
                        message: nasty,
                    },
                ],
            },
            ScenarioReport {
                id: "resumable",
                skipped: Some("not advertised".to_owned()),
                requests: 0,
                findings: vec![],
            },
        ],
    }
}

#[test]
fn json_keeps_the_message_and_names_request_and_event() {
    let r = report();
    let v = r.to_json();
    assert_eq!(v["passed"], false);
    assert_eq!(
        v["summary"],
        serde_json::json!({"errors": 1, "warnings": 1})
    );
    let f = &v["scenarios"][0]["findings"];
    assert_eq!(f[0]["request"], 1);
    assert_eq!(f[0]["event"], 0);
    assert_eq!(f[1]["request"], 0);
    assert!(f[1].get("event").is_none());
    assert_eq!(f[0]["message"], r.scenarios[0].findings[0].message.as_str());
    assert_eq!(v["scenarios"][1]["reason"], "not advertised");
    assert_eq!(v["scenarios"][1]["passed"], true);
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
    assert!(text.ends_with("1 errors, 1 warnings: failed\n"));
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
            id: "chat",
            skipped: Some(format!("server said {forged}")),
            requests: 1,
            findings: vec![Finding {
                rule: "run/run-error",
                level: Level::Error,
                request: 0,
                event: Some(3),
                message: forged.clone(),
            }],
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
