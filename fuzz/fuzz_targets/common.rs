//! Shared by the fuzz targets: split the input into chunks, decode, and check the
//! invariants every decoded event must satisfy.

use agui_sdk_core::encoding::{proto, sse, DecodeError, Encoding, EventDecoder};
use agui_sdk_core::Event;

/// Everything a decoder produced: events, and errors as (index, offset, fatal).
pub type Outcome = Vec<Result<Event, (u64, u64, bool)>>;

/// Decodes `data` pushed in chunks whose sizes come from `splits` (cycled).
pub fn decode(encoding: Encoding, data: &[u8], splits: &[u8]) -> Outcome {
    let mut dec = EventDecoder::new(encoding).skip_unknown_events(false);
    let mut out = Vec::new();
    let drain = |dec: &mut EventDecoder, out: &mut Outcome| {
        while let Some(r) = dec.next() {
            out.push(r.map_err(|e: DecodeError| (e.index, e.offset, e.is_fatal())));
        }
    };
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = if splits.is_empty() {
            rest.len()
        } else {
            (splits[i % splits.len()] as usize + 1).min(rest.len())
        };
        i += 1;
        dec.push(&rest[..n]);
        rest = &rest[n..];
        drain(&mut dec, &mut out);
    }
    dec.finish();
    drain(&mut dec, &mut out);
    out
}

// `renumber` and `js_view`, shared with the core's tests.
#[path = "../../crates/agui-sdk-core/tests/it/common/js_numbers.rs"]
mod js_numbers;
use js_numbers::js_view;

/// Every decoded event re-encodes: as SSE it decodes to itself (numbers as JavaScript
/// reads them, since the encoder writes them as `JSON.stringify` does), and then the
/// SSE trip is exact; as protobuf it decodes, and from then on the trip is idempotent
/// (the first trip may lose what protobuf does not carry, and turns -0.0 into 0).
pub fn check_event(ev: &Event) {
    let mut text = Vec::new();
    sse::encode_event(ev, &mut text);
    let back = decode(Encoding::Sse, &text, &[]);
    assert_eq!(back.len(), 1, "SSE re-decode of {ev:?}");
    let ev1 = back[0].as_ref().expect("our own SSE frame decodes");
    assert_eq!(js_view(ev1), js_view(ev), "SSE round trip");
    let mut text2 = Vec::new();
    sse::encode_event(ev1, &mut text2);
    assert_eq!(text2, text, "SSE trip is exact after the first");

    let mut bin = Vec::new();
    proto::encode_event(ev, &mut bin);
    let back = decode(Encoding::Proto, &bin, &[]);
    assert_eq!(back.len(), 1);
    let ev2 = back[0].as_ref().expect("our own protobuf frame decodes");
    let mut bin2 = Vec::new();
    proto::encode_event(ev2, &mut bin2);
    let back = decode(Encoding::Proto, &bin2, &[]);
    let ev3 = back[0].as_ref().expect("our own protobuf frame decodes");
    assert_eq!(ev3, ev2, "protobuf trip is idempotent");
    let mut bin3 = Vec::new();
    proto::encode_event(ev3, &mut bin3);
    assert_eq!(bin3, bin2, "protobuf trip is idempotent");
}

/// Split points from the first bytes of the input, the rest is the stream.
pub fn split_input(data: &[u8]) -> (&[u8], &[u8]) {
    let n = data.first().map_or(0, |b| (*b % 8) as usize);
    if data.len() > n {
        (
            &data[1..1 + n.min(data.len() - 1)],
            &data[1 + n.min(data.len() - 1)..],
        )
    } else {
        (&[], data)
    }
}
