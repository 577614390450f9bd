//! Whatever bytes a peer sends (an agent through the relay or the proxy, a recording
//! file), the recording neither panics nor loses its footing: split anywhere, the same
//! rows and findings come out, every finding names an event that exists (or the next
//! one), and nothing past the limits is kept.

use agui_sdk_inspect::{End, Framing, Limits, Recording};
use proptest::prelude::*;

/// Realistic frames to mutate: valid events, a broken one, chunks, unknown types.
const FRAMES: &[&str] = &[
    r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
    r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
    r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"h\u00e9"}"#,
    r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"x"}"#,
    r#"{"type":"STATE_SNAPSHOT","snapshot":{"a":[1,2,{"b":null}]}}"#,
    r#"{"type":"STATE_DELTA","delta":[{"op":"copy","from":"","path":"/a/-"}]}"#,
    r#"{"type":"TOOL_CALL_START","toolCallId":"k","toolCallName":"f"}"#,
    r#"{"type":"FUTURE_EVENT","x":1}"#,
    r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"r"}]}}"#,
    r#"{"type":"RUN_ERROR","message":"boom"}"#,
    r#"{"type":"#,
];

fn body(frames: &[usize], format: Framing, noise: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for &i in frames {
        let f = FRAMES[i % FRAMES.len()];
        match format {
            Framing::Sse => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(f.as_bytes());
                out.extend_from_slice(b"\n\n");
            }
            _ => {
                out.extend_from_slice(f.as_bytes());
                out.push(b'\n');
            }
        }
    }
    out.extend_from_slice(noise);
    out
}

fn record(bytes: &[u8], format: Framing, cuts: &[usize], limits: Limits) -> Recording {
    let mut r = Recording::with_format(format, limits);
    let mut at = 0;
    for &c in cuts {
        let c = c % (bytes.len() + 1);
        if c > at {
            r.push(&bytes[at..c], 0.0);
            at = c;
        }
    }
    r.push(&bytes[at..], 0.0);
    r.finish(End::Completed, 1.0);
    r
}

fn check(r: &Recording, limits: &Limits) {
    let rows = r.rows().len() as u64;
    assert!(rows as usize <= limits.max_events);
    for (i, row) in r.rows().iter().enumerate() {
        assert_eq!(row.index, i as u64);
    }
    for f in r.findings() {
        assert!(f.index <= rows, "finding {f:?} past {rows} rows");
    }
    assert!(r.findings().len() <= limits.max_findings);
    assert!(r.end().is_some());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_split_of_mutated_streams_reads_the_same(
        frames in proptest::collection::vec(0usize..32, 0..40),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        format in prop_oneof![Just(Framing::Sse), Just(Framing::JsonLines), Just(Framing::Proto)],
        max_events in 1usize..50,
    ) {
        let limits = Limits { max_events, max_findings: 20, ..Limits::default() };
        let bytes = body(&frames, format, &noise);
        let whole = record(&bytes, format, &[], limits);
        check(&whole, &limits);
        let split = record(&bytes, format, &cuts, limits);
        check(&split, &limits);
        prop_assert_eq!(whole.rows().len(), split.rows().len());
        prop_assert_eq!(whole.findings(), split.findings());
        prop_assert_eq!(whole.raw_events(), split.raw_events());
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        format in prop_oneof![Just(Framing::Sse), Just(Framing::JsonLines), Just(Framing::Proto)],
    ) {
        let limits = Limits::default();
        let r = record(&bytes, format, &[], limits);
        check(&r, &limits);
        // And sniffed, as an uploaded recording is.
        let r = record(&bytes, Framing::sniff(&bytes), &[], limits);
        check(&r, &limits);
    }
}
