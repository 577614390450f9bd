//! Shared by the fuzz targets: split the input into chunks, decode, and check the
//! invariants every decoded event must satisfy.

use agui_core::encoding::{proto, sse, DecodeError, Encoding, EventDecoder};
use agui_core::Event;

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

/// Every decoded event re-encodes: as SSE it decodes to itself; as protobuf it decodes,
/// and encoding what it decodes to gives the same bytes (the trip is idempotent).
pub fn check_event(ev: &Event) {
    let mut text = Vec::new();
    sse::encode_event(ev, &mut text);
    let back = decode(Encoding::Sse, &text, &[]);
    assert_eq!(back.len(), 1, "SSE re-decode of {ev:?}");
    assert_eq!(back[0].as_ref().ok(), Some(ev), "SSE round trip");

    let mut bin = Vec::new();
    proto::encode_event(ev, &mut bin);
    let back = decode(Encoding::Proto, &bin, &[]);
    assert_eq!(back.len(), 1);
    let ev2 = back[0].as_ref().expect("our own protobuf frame decodes");
    let mut bin2 = Vec::new();
    proto::encode_event(ev2, &mut bin2);
    assert_eq!(bin, bin2, "protobuf trip is idempotent for {ev:?}");
}

/// Split points from the first bytes of the input, the rest is the stream.
pub fn split_input(data: &[u8]) -> (&[u8], &[u8]) {
    let n = data.first().map_or(0, |b| (*b % 8) as usize);
    if data.len() > n {
        (&data[1..1 + n.min(data.len() - 1)], &data[1 + n.min(data.len() - 1)..])
    } else {
        (&[], data)
    }
}
