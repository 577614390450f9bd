//! The protobuf codec reads free-form JSON as deep as the JSON decoder does: a state
//! that decodes from SSE JSON encodes to protobuf and decodes back.

use agui_sdk_core::encoding::{Encoding, EventDecoder, EventEncoder};
use agui_sdk_core::Event;

#[test]
fn a_state_as_deep_as_json_allows_round_trips_through_protobuf() {
    // The deepest state the JSON decoder takes inside a STATE_SNAPSHOT.
    let mut deepest = None;
    for depth in (100..140).rev() {
        let state = "[".repeat(depth) + &"]".repeat(depth);
        let json = format!("{{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{state}}}");
        if let Ok(e) = Event::from_json_str(&json) {
            deepest = Some((depth, e));
            break;
        }
    }
    let (depth, event) = deepest.expect("some depth decodes");
    assert!(depth >= 120, "the JSON decoder reads {depth} levels");
    let bytes = EventEncoder::new(Encoding::Proto).encode_to_vec(&event);
    let mut dec = EventDecoder::new(Encoding::Proto);
    dec.push(&bytes);
    dec.finish();
    let back = dec.next().expect("a frame").expect("it decodes");
    assert_eq!(back, event);
}
