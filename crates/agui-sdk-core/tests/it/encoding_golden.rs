//! The reference's own encodings of the golden stream: `events.sse` and `events.pb`
//! decode to the events the reference decoded from them, and encoding `events.jsonl`
//! reproduces them (SSE byte for byte; protobuf byte for byte too, where protobuf leaves
//! no choice).

use crate::common;

use agui_sdk_core::encoding::{
    proto, sse, DecodeError, DecodeErrorKind, Encoding, EventDecoder, EventEncoder,
};
use agui_sdk_core::Event;
use serde_json::Value;

fn golden_events() -> Vec<Event> {
    common::lines("events.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect()
}

fn decode_all(encoding: Encoding, bytes: &[u8], chunk: usize) -> Result<Vec<Event>, DecodeError> {
    let mut dec = EventDecoder::new(encoding);
    let mut out = Vec::new();
    for c in bytes.chunks(chunk.max(1)) {
        dec.push(c);
        while let Some(ev) = dec.next() {
            out.push(ev?);
        }
    }
    dec.finish();
    while let Some(ev) = dec.next() {
        out.push(ev?);
    }
    Ok(out)
}

#[test]
fn sse_golden_decodes_to_the_golden_events() {
    let lines = common::lines("events.jsonl");
    let bytes = common::read("events.sse");
    for chunk in [bytes.len(), 4096, 7, 1] {
        let events = decode_all(Encoding::Sse, &bytes, chunk).unwrap();
        assert_eq!(events.len(), lines.len());
        for (i, (ev, line)) in events.iter().zip(&lines).enumerate() {
            assert_eq!(&ev.to_json_string(), line, "event {i} (chunks of {chunk})");
        }
    }
}

/// A stream cut inside an event: the events before the cut, then a truncation error at
/// the cut event's index and frame offset, then nothing.
#[test]
fn a_cut_sse_stream_ends_with_a_truncation_error() {
    let bytes = common::read("events.sse");
    let mut dec = EventDecoder::new(Encoding::Sse);
    let mut got = Vec::new();
    for c in bytes[..5000].chunks(512) {
        dec.push(c);
        got.extend(std::iter::from_fn(|| dec.next()));
    }
    dec.finish();
    got.extend(std::iter::from_fn(|| dec.next()));
    assert_eq!(got.len(), 30);
    assert!(got[..29].iter().all(Result::is_ok));
    match &got[29] {
        Err(e) => {
            assert!(matches!(e.kind, DecodeErrorKind::Truncated { .. }), "{e}");
            assert_eq!((e.index, e.offset), (29, 4845));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn sse_encoding_reproduces_the_reference_bytes() {
    let mut out = Vec::new();
    for ev in golden_events() {
        sse::encode_event(&ev, &mut out);
    }
    assert_eq!(out, common::read("events.sse"));
}

#[test]
fn sse_offsets_match_the_reference_index() {
    let bytes = common::read("events.sse");
    let mut dec = agui_sdk_core::encoding::SseDecoder::new();
    dec.push(&bytes);
    for entry in common::json_lines("events.index.jsonl") {
        let frame = dec.next_frame().unwrap().unwrap();
        assert_eq!(frame.index, entry["index"].as_u64().unwrap());
        assert_eq!(frame.offset, entry["sse"]["offset"].as_u64().unwrap());
    }
}

#[test]
fn proto_golden_decodes_to_what_the_reference_decoded() {
    let decoded: Vec<Event> = common::lines("events.pb.decoded.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect();
    let bytes = common::read("events.pb");
    for chunk in [bytes.len(), 4096, 5, 1] {
        let events = decode_all(Encoding::Proto, &bytes, chunk).unwrap();
        assert_eq!(events.len(), decoded.len());
        for (i, (ev, want)) in events.iter().zip(&decoded).enumerate() {
            assert_eq!(ev, want, "event {i} (chunks of {chunk})");
            // Same JSON, key order included (the decoded file follows ts-proto's field
            // order; ours is canonical, so compare as ordered-insensitive values and as
            // canonical text).
            assert_eq!(ev.to_json_string(), want.to_json_string(), "event {i}");
        }
    }
}

#[test]
fn proto_round_trip_differs_from_json_only_where_the_reference_does() {
    // The reference's list of differences: event 0 gains `input.resume: []`.
    let diffs: Value =
        serde_json::from_slice(&common::read("proto-roundtrip-differences.json")).unwrap();
    let differing: Vec<u64> = diffs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["index"].as_u64().unwrap())
        .collect();
    for (i, ev) in golden_events().iter().enumerate() {
        let mut frame = Vec::new();
        proto::encode_event(ev, &mut frame);
        let back = decode_all(Encoding::Proto, &frame, frame.len()).unwrap();
        assert_eq!(back.len(), 1);
        if differing.contains(&(i as u64)) {
            assert_ne!(&back[0], ev, "event {i}");
        } else {
            assert_eq!(&back[0], ev, "event {i}");
        }
    }
}

#[test]
fn proto_encoding_reproduces_the_reference_frames() {
    let index = common::json_lines("events.index.jsonl");
    let mut identical = 0;
    for (i, (ev, entry)) in golden_events().iter().zip(&index).enumerate() {
        let mut frame = Vec::new();
        proto::encode_event(ev, &mut frame);
        let want = entry["pb"]["hex"].as_str().unwrap();
        let got: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want, "event {i} ({})", ev.event_type());
        identical += 1;
    }
    assert_eq!(identical, 75);
    // And the whole stream.
    let mut all = Vec::new();
    let enc = EventEncoder::new(Encoding::Proto);
    for ev in golden_events() {
        enc.encode(&ev, &mut all);
    }
    assert_eq!(all, common::read("events.pb"));
}

#[test]
fn proto_offsets_match_the_reference_index() {
    let bytes = common::read("events.pb");
    let mut dec = agui_sdk_core::encoding::ProtoDecoder::new();
    dec.push(&bytes);
    for entry in common::json_lines("events.index.jsonl") {
        assert_eq!(dec.offset(), entry["pb"]["offset"].as_u64().unwrap());
        dec.next().unwrap().unwrap();
    }
    dec.finish();
    assert!(dec.next().is_none());
}
