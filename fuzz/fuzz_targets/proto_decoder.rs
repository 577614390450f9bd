//! The protobuf decoder on arbitrary bytes split at arbitrary points: it never panics,
//! the split does not change what it decodes, and every event it decodes re-encodes.
#![no_main]

use agui_sdk_core::encoding::Encoding;
use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    let (splits, stream) = common::split_input(data);
    let whole = common::decode(Encoding::Proto, stream, &[]);
    let split = common::decode(Encoding::Proto, stream, splits);
    assert_eq!(whole, split, "chunking changed the result");
    for ev in whole.iter().flatten() {
        common::check_event(ev);
    }
});
