//! The direct writer held to its oracle: for every event, [`super::encode_message`]
//! writes the bytes prost writes of the generated structs the event is copied into
//! (`encode.rs`, which exists for this test only).

use proptest::prelude::*;
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
