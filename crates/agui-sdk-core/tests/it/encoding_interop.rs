//! Interoperability with the reference packages from the npm registry (`@ag-ui/encoder`,
//! `@ag-ui/proto` 1.0.0 and the `@ag-ui/client` stream parsers, run by
//! `interop/encoding.mjs`): the reference reads our SSE and protobuf, we read theirs,
//! for every event type (the 75 golden events, which cover all 31, and 300 generated
//! ones with every optional field, unknown keys and free-form JSON).
//!
//! Needs `node` and the packages: run `scripts/setup-interop.sh` first (CI does);
//! without them the tests print `skipped` (a failure under `AGUI_REQUIRE_INTEROP=1`).

use crate::common;
use crate::interop_gate;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use agui_sdk_core::encoding::{proto, sse, Encoding};
use agui_sdk_core::{Event, EventType};
use common::codec::{as_1_0, decode_split, generated_events, js_view};
use serde_json::Value;

const SETUP: &str = "run scripts/setup-interop.sh to install the reference packages";

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

/// Runs `node interop/encoding.mjs ARGS` with `stdin`; returns its output, or its
/// stderr as the error when the reference rejected the input.
fn reference(args: &[&str], stdin: &[u8]) -> Result<Vec<u8>, String> {
    let dir = interop_dir();
    assert!(
        dir.join("node_modules/@ag-ui/proto/package.json").exists(),
        "@ag-ui/proto is not installed in interop/node_modules: {SETUP}"
    );
    let mut child = Command::new("node")
        .arg("encoding.mjs")
        .args(args)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run node ({e}): install Node.js and {SETUP}"));
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || pipe.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The golden events and generated ones.
fn corpus() -> Vec<Event> {
    let mut events: Vec<Event> = common::lines("events.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect();
    events.extend(generated_events(1, 300));
    let types: std::collections::BTreeSet<EventType> =
        events.iter().map(Event::event_type).collect();
    assert_eq!(
        types.len(),
        EventType::ALL.len(),
        "every event type is covered"
    );
    events
}

/// The events as JSON Lines for the reference to read, written exactly (serde_json's
/// spelling keeps `-0.0`, which the canonical ECMAScript spelling writes as `0`, as
/// `JSON.stringify` does), so that both sides encode the very same values.
fn jsonl(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for ev in events {
        serde_json::to_writer(&mut out, ev).unwrap();
        out.push(b'\n');
    }
    out
}

/// What the reference client's parser yielded, one JSON value per event.
fn parsed_lines(out: &[u8]) -> Vec<Value> {
    std::str::from_utf8(out)
        .unwrap()
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Reads what the reference yielded as events (validating each).
fn as_events(values: &[Value]) -> Vec<Event> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            agui_sdk_core::wire::from_json_value(v)
                .unwrap_or_else(|e| panic!("reference output {i} is not a valid event: {e}: {v}"))
        })
        .collect()
}

#[test]
fn the_reference_reads_our_sse() {
    if !interop_gate::ready("the_reference_reads_our_sse") {
        return;
    }
    let events = corpus();
    let mut ours = Vec::new();
    for ev in &events {
        sse::encode_event(ev, &mut ours);
    }
    for chunk in ["7", "65536"] {
        let out = reference(&["decode", "sse", chunk], &ours).expect("the reference reads our SSE");
        let theirs = as_events(&parsed_lines(&out));
        assert_eq!(theirs.len(), events.len());
        for (i, (t, e)) in theirs.iter().zip(&events).enumerate() {
            assert_eq!(js_view(t), js_view(e), "event {i} ({})", e.event_type());
        }
    }
}

#[test]
fn we_read_the_references_sse() {
    if !interop_gate::ready("we_read_the_references_sse") {
        return;
    }
    let events = corpus();
    let theirs = reference(&["encode", "sse"], &jsonl(&events)).unwrap();
    let ours_bytes = {
        let mut out = Vec::new();
        for ev in &events {
            sse::encode_event(ev, &mut out);
        }
        out
    };
    for sizes in [vec![], vec![1, 2, 3, 5, 8, 13], vec![4096]] {
        let back = decode_split(Encoding::Sse, &theirs, &sizes).unwrap();
        assert_eq!(back.len(), events.len());
        for (i, (b, e)) in back.iter().zip(&events).enumerate() {
            assert_eq!(js_view(b), js_view(e), "event {i} ({})", e.event_type());
        }
    }
    // Byte for byte, except where JavaScript cannot hold the event as we do: object
    // keys that are integer-like (JavaScript moves them first) and integers beyond 2^53
    // (JavaScript rounds them when it parses the event).
    let split = |b: &[u8]| -> Vec<Vec<u8>> {
        b.split_inclusive(|c| *c == b'\n')
            .filter(|l| *l != b"\n")
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (theirs_frames, ours_frames) = (split(&theirs), split(&ours_bytes));
    assert_eq!(theirs_frames.len(), events.len());
    let mut same = 0;
    for (i, ev) in events.iter().enumerate() {
        if theirs_frames[i] == ours_frames[i] {
            same += 1;
        } else {
            let json = serde_json::from_str(&ev.to_json_string()).unwrap();
            assert!(
                has_integer_like_key(&json) || has_unsafe_integer(&json),
                "event {i}: SSE bytes differ:\nours:   {}\ntheirs: {}",
                String::from_utf8_lossy(&ours_frames[i]),
                String::from_utf8_lossy(&theirs_frames[i])
            );
        }
    }
    eprintln!(
        "SSE: {same} of {} frames byte-identical to the reference's",
        events.len()
    );
    // Not vacuous: the golden events and many generated ones are compared byte for byte.
    assert!(same >= 150, "only {same} of {} identical", events.len());
}

#[test]
fn the_reference_reads_our_protobuf() {
    if !interop_gate::ready("the_reference_reads_our_protobuf") {
        return;
    }
    let events = corpus();
    let mut ours = Vec::new();
    for ev in &events {
        proto::encode_event(ev, &mut ours);
    }
    let ours_decoded = decode_split(Encoding::Proto, &ours, &[]).unwrap();
    // The reference is 1.0: it skips 1.1's `encrypted_value_type` fields as unknown ones
    // and reads the rest of such a frame as we do. Not vacuous: the generated events
    // carry the field.
    let with_1_1 = ours_decoded.iter().filter(|e| as_1_0(e) != **e).count();
    assert!(with_1_1 >= 10, "only {with_1_1} events carry 1.1 fields");
    for chunk in ["5", "65536"] {
        let out = reference(&["decode", "proto", chunk], &ours)
            .expect("the reference reads our protobuf");
        let theirs = as_events(&parsed_lines(&out));
        assert_eq!(theirs.len(), events.len());
        for (i, (t, o)) in theirs.iter().zip(&ours_decoded).enumerate() {
            // Numbers compared as the doubles they are: beyond 2^53 JavaScript prints a
            // double's shortest digits (4062055744277861400), we its exact integer
            // value (4062055744277861376).
            assert_eq!(
                js_view(t),
                js_view(&as_1_0(o)),
                "event {i} ({}): the reference reads it differently",
                o.event_type()
            );
        }
    }
}

#[test]
fn we_read_the_references_protobuf() {
    if !interop_gate::ready("we_read_the_references_protobuf") {
        return;
    }
    let events = corpus();
    let theirs = reference(&["encode", "proto"], &jsonl(&events)).unwrap();
    let their_reading = as_events(&parsed_lines(
        &reference(&["decode", "proto"], &theirs).unwrap(),
    ));
    assert_eq!(their_reading.len(), events.len());
    for sizes in [vec![], vec![1, 2, 3, 5, 8, 13], vec![4096]] {
        let ours = decode_split(Encoding::Proto, &theirs, &sizes).unwrap();
        assert_eq!(ours.len(), their_reading.len());
        for (i, (o, t)) in ours.iter().zip(&their_reading).enumerate() {
            assert_eq!(js_view(o), js_view(t), "event {i} ({})", t.event_type());
        }
    }
}

#[test]
fn our_protobuf_frames_are_the_references_bytes() {
    if !interop_gate::ready("our_protobuf_frames_are_the_references_bytes") {
        return;
    }
    // The reference encoder is 1.0, so the events are compared without 1.1's field.
    let events: Vec<Event> = corpus().iter().map(as_1_0).collect();
    let theirs = reference(&["encode", "proto"], &jsonl(&events)).unwrap();
    let mut at = 0;
    let mut same = 0;
    for (i, ev) in events.iter().enumerate() {
        let len = u32::from_be_bytes(theirs[at..at + 4].try_into().unwrap()) as usize;
        let frame = &theirs[at..at + 4 + len];
        at += 4 + len;
        let mut ours = Vec::new();
        proto::encode_event(ev, &mut ours);
        if ours == frame {
            same += 1;
        } else {
            // Protobuf leaves map order open; JavaScript writes integer-like keys first.
            assert!(
                has_integer_like_key(&serde_json::from_str(&ev.to_json_string()).unwrap()),
                "event {i} ({}): frames differ",
                ev.event_type()
            );
        }
    }
    assert_eq!(at, theirs.len());
    eprintln!(
        "protobuf: {same} of {} frames byte-identical to the reference's",
        events.len()
    );
    assert!(
        same * 10 >= events.len() * 9,
        "only {same} of {} identical",
        events.len()
    );
}

/// Whether some object key is a canonical array index ("0", "17"), which JavaScript
/// orders before the other keys.
fn has_integer_like_key(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, v)| {
            (k == "0"
                || (!k.starts_with('0')
                    && k.bytes().all(|b| b.is_ascii_digit())
                    && k.parse::<u32>().is_ok_and(|n| n < u32::MAX)))
                || has_integer_like_key(v)
        }),
        Value::Array(a) => a.iter().any(has_integer_like_key),
        _ => false,
    }
}

/// Whether some number is an integer JavaScript cannot hold exactly.
fn has_unsafe_integer(v: &Value) -> bool {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    match v {
        Value::Number(n) => {
            n.as_u64().is_some_and(|u| u > MAX_SAFE)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() > MAX_SAFE)
        }
        Value::Object(o) => o.values().any(has_unsafe_integer),
        Value::Array(a) => a.iter().any(has_unsafe_integer),
        _ => false,
    }
}

#[test]
fn both_reject_the_same_truncated_streams() {
    if !interop_gate::ready("both_reject_the_same_truncated_streams") {
        return;
    }
    let events: Vec<Event> = corpus().into_iter().take(20).collect();
    for encoding in [Encoding::Sse, Encoding::Proto] {
        let mut bytes = Vec::new();
        for ev in &events {
            match encoding {
                Encoding::Sse => sse::encode_event(ev, &mut bytes),
                Encoding::Proto => proto::encode_event(ev, &mut bytes),
            }
        }
        let cut = &bytes[..bytes.len() - 3];
        let format = if encoding == Encoding::Sse {
            "sse"
        } else {
            "proto"
        };
        let ours = decode_split(encoding, cut, &[]);
        assert!(ours.is_err(), "{format}: we accept a cut stream");
        let theirs = reference(&["decode", format], cut);
        match encoding {
            // The reference rejects a cut binary stream...
            Encoding::Proto => assert!(theirs.is_err()),
            // ...but parses whatever an SSE stream's last block holds at its end (here
            // JSON cut short, which fails to parse).
            Encoding::Sse => assert!(theirs.is_err()),
        }
    }
}
