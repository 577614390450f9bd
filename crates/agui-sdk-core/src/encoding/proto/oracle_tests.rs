//! The direct writer held to its oracle: for every event, [`super::encode_message`]
//! writes the bytes prost writes of the generated structs the event is copied into
//! (`encode.rs`, which exists for this test only).

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use prost::Message as _;
use serde_json::Value;

use super::{encode, encode_event, encode_message, generated};
use crate::Event;

#[path = "../../../tests/it/common/mod.rs"]
#[allow(unused_imports, missing_docs)]
mod common;

/// The oracle: the event copied into the prost structs, which prost writes.
fn encode_message_via_structs(event: &Event, out: &mut Vec<u8>) {
    let msg = generated::Event {
        event: Some(encode::event(event)),
    };
    out.reserve(msg.encoded_len());
    msg.encode_raw(out);
}

/// Small events, and events made large by a long string so that nested lengths need
/// two or three varint bytes.
#[test]
fn protobuf_direct_writer_matches_the_generated_structs() {
    common::codec::check(
        512,
        || (common::arb::event(), 0usize..3),
        |(mut ev, grow)| {
            if grow > 0 {
                let long = "x".repeat(if grow == 1 { 200 } else { 20_000 });
                let meta = ev.metadata_mut();
                meta.get_or_insert_with(Default::default)
                    .insert("pad".into(), Value::String(long));
            }
            let mut direct = Vec::new();
            encode_message(&ev, &mut direct);
            let mut structs = Vec::new();
            encode_message_via_structs(&ev, &mut structs);
            prop_assert_eq!(&direct, &structs, "{:?}", ev);
            let mut framed = Vec::new();
            encode_event(&ev, &mut framed);
            prop_assert_eq!(&framed[..4], &(structs.len() as u32).to_be_bytes()[..]);
            prop_assert_eq!(&framed[4..], &structs[..]);
            Ok(())
        },
    );
}

/// The field boundaries of a message body.
fn field_ends(mut body: &[u8]) -> Vec<usize> {
    let total = body.len();
    let mut ends = Vec::new();
    while !body.is_empty() {
        let (tag, wire) = prost::encoding::decode_key(&mut body).unwrap();
        prost::encoding::skip_field(wire, tag, &mut body, Default::default()).unwrap();
        ends.push(total - body.len());
    }
    ends
}

/// An event's arm split in two occurrences at a field boundary reads as the event: the
/// table reader merges repeated occurrences of the arm, as protobuf requires. Every
/// event here has its base event first and at least one field after it.
#[test]
fn protobuf_reader_merges_an_arm_split_in_two() {
    common::codec::check(
        256,
        || (common::arb::event(), any::<prop::sample::Index>()),
        |(ev, at)| {
            let mut whole = Vec::new();
            encode_message(&ev, &mut whole);
            let mut env = &whole[..];
            let (arm, _) = prost::encoding::decode_key(&mut env).unwrap();
            let len = prost::encoding::decode_varint(&mut env).unwrap() as usize;
            let body = &env[..len];
            let ends = field_ends(body);
            let cut = ends[at.index(ends.len())];
            let mut split = Vec::new();
            for part in [&body[..cut], &body[cut..]] {
                prost::encoding::encode_key(
                    arm,
                    prost::encoding::WireType::LengthDelimited,
                    &mut split,
                );
                prost::encoding::encode_varint(part.len() as u64, &mut split);
                split.extend_from_slice(part);
            }
            let read =
                super::decode_message(&split).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let direct =
                super::decode_message(&whole).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(read, direct);
            Ok(())
        },
    );
}

/// Damaged frames: whatever prost's generated decoder of the schema refuses, the table
/// reader refuses too (and neither panics).
#[test]
fn protobuf_reader_refuses_what_prost_refuses() {
    common::codec::check(
        512,
        || {
            (
                common::arb::event(),
                any::<prop::sample::Index>(),
                any::<u8>(),
                0usize..3,
            )
        },
        |(ev, at, byte, how)| {
            let mut bytes = Vec::new();
            encode_message(&ev, &mut bytes);
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] ^= byte | 1,
                1 => bytes.truncate(i),
                _ => bytes.insert(i, byte),
            }
            let ours = super::decode_message(&bytes);
            if generated::Event::decode(&bytes[..]).is_err() {
                prop_assert!(ours.is_err(), "read {:?} from bytes prost refuses", ours);
            }
            Ok(())
        },
    );
}
