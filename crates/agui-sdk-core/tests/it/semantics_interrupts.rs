//! Interrupt helpers against the reference (`cases/interrupts.jsonl`).

use crate::common;

use std::time::{Duration, UNIX_EPOCH};

use agui_sdk_core::semantics::interrupts::{is_interrupt_expired_at, parse_iso8601_millis};
use agui_sdk_core::semantics::{
    build_resume_array, check_resume, ResumeCheckError, ResumeResponse,
};
use agui_sdk_core::{Interrupt, ResumeEntry};
use serde_json::Value;

fn interrupt(v: &Value) -> Interrupt {
    agui_sdk_core::wire::from_json_value(v).unwrap()
}

#[test]
fn interrupt_cases_match_reference() {
    let cases = common::json_lines("cases/interrupts.jsonl");
    assert_eq!(cases.len(), 4);
    for case in &cases {
        match case["fn"].as_str().unwrap() {
            "isInterruptExpired" => {
                let now = parse_iso8601_millis(case["now"].as_str().unwrap()).unwrap();
                for r in case["results"].as_array().unwrap() {
                    let i = interrupt(&r["interrupt"]);
                    assert_eq!(
                        is_interrupt_expired_at(&i, now),
                        r["expired"].as_bool().unwrap(),
                        "{}",
                        i.id
                    );
                }
            }
            "buildResumeArray" => {
                let interrupts: Vec<Interrupt> = case["interrupts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(interrupt)
                    .collect();
                let responses = case["responses"].as_object().unwrap().iter().map(|(k, v)| {
                    (
                        k.clone(),
                        ResumeResponse {
                            status: serde_json::from_value(v["status"].clone()).unwrap(),
                            payload: v.get("payload").cloned(),
                            metadata: v.get("metadata").and_then(|m| m.as_object().cloned()),
                        },
                    )
                });
                match build_resume_array(&interrupts, responses) {
                    Ok(entries) => {
                        assert_eq!(serde_json::to_value(&entries).unwrap(), case["output"]);
                    }
                    Err(e) => assert_eq!(e.to_string(), case["error"].as_str().unwrap()),
                }
            }
            other => panic!("unknown case kind {other}"),
        }
    }
}

#[test]
fn iso_dates_parse_like_javascript() {
    assert_eq!(parse_iso8601_millis("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(parse_iso8601_millis("1970-01-02"), Some(86_400_000));
    assert_eq!(
        parse_iso8601_millis("1970-01-01T01:00:00.5+01:00"),
        Some(500)
    );
    // JavaScript rolls days over within 1..=31.
    assert_eq!(
        parse_iso8601_millis("2000-02-30"),
        parse_iso8601_millis("2000-03-01")
    );
    assert_eq!(parse_iso8601_millis("2000-02-32"), None);
    assert_eq!(parse_iso8601_millis("2026-09-17T24:00:01Z"), None);
    assert_eq!(parse_iso8601_millis("-000000-01-01T00:00:00Z"), None);
    assert_eq!(
        parse_iso8601_millis("2026-09-17T10:00:00+0100"),
        Some(1_789_635_600_000)
    );
    assert_eq!(
        parse_iso8601_millis("2026-09-17T10:00:00.1234Z"),
        Some(1_789_639_200_123)
    );
    assert_eq!(parse_iso8601_millis("not a date"), None);
    assert_eq!(
        parse_iso8601_millis("+002000-01-01T00:00:00Z"),
        Some(946_684_800_000)
    );
}

#[test]
fn resume_check_requires_coverage_and_cancels_expired() {
    let mut late = Interrupt::new("late", "x");
    late.expires_at = Some("2000-01-01T00:00:00Z".into());
    let pending = vec![Interrupt::new("a", "x"), late];
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    assert_eq!(
        check_resume(&pending, None, now),
        Err(ResumeCheckError::Uncovered(vec!["a".into(), "late".into()]))
    );
    let answers = vec![
        ResumeEntry::resolved("a", serde_json::json!(true)),
        ResumeEntry::resolved("late", serde_json::json!(true)),
    ];
    let err = check_resume(&pending, Some(&answers), now).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Interrupt late expired at 2000-01-01T00:00:00Z and can no longer be answered. Cancel it to continue the thread."
    );
    let answers = vec![
        ResumeEntry::resolved("a", serde_json::json!(true)),
        ResumeEntry::cancelled("late"),
    ];
    assert_eq!(check_resume(&pending, Some(&answers), now), Ok(()));
}

#[test]
fn a_formatted_time_reads_back_as_the_same_millisecond() {
    use agui_sdk_core::semantics::interrupts::format_iso8601_millis;
    assert_eq!(format_iso8601_millis(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(
        format_iso8601_millis(1_796_551_200_123),
        "2026-12-06T10:00:00.123Z"
    );
    assert_eq!(format_iso8601_millis(-1), "1969-12-31T23:59:59.999Z");
    // Leap days, century rules and years outside 0..=9999 (written with six digits).
    for ms in [
        951_782_400_000i64,     // 2000-02-29
        4_107_542_400_000,      // 2100-03-01
        -62_198_755_200_000,    // year -1
        253_402_300_800_000,    // 10000-01-01
        8_640_000_000_000_000,  // JavaScript's last date
        -8_640_000_000_000_000, // and its first
    ] {
        let text = format_iso8601_millis(ms);
        assert_eq!(parse_iso8601_millis(&text), Some(ms), "{text}");
    }
    let mut x: i64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..10_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ms = x % 8_640_000_000_000_000;
        let text = format_iso8601_millis(ms);
        assert_eq!(parse_iso8601_millis(&text), Some(ms), "{text}");
    }
}
