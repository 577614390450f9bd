//! `negotiate` gives the reference `EventEncoder`'s verdict for every recorded `Accept`
//! header (`cases/accept.jsonl`), wildcards selecting protobuf included.

use crate::common;

use agui_sdk_core::encoding::{negotiate, Encoding, EventEncoder};

#[test]
fn accept_cases_match_the_reference() {
    let cases = common::json_lines("cases/accept.jsonl");
    assert_eq!(cases.len(), 33);
    for case in cases {
        let accept = case["accept"].as_str();
        let want = case["contentType"].as_str().unwrap();
        assert_eq!(negotiate(accept).content_type(), want, "Accept: {accept:?}");
        assert_eq!(EventEncoder::for_accept(accept).content_type(), want);
    }
}

#[test]
fn content_type_selects_the_decoder_as_the_reference_client_does() {
    assert_eq!(
        Encoding::from_content_type(Some("application/vnd.ag-ui.event+proto")),
        Encoding::Proto
    );
    for other in [
        None,
        Some("text/event-stream"),
        Some("application/vnd.ag-ui.event+proto; charset=utf-8"),
        Some("APPLICATION/VND.AG-UI.EVENT+PROTO"),
        Some("text/plain"),
    ] {
        assert_eq!(
            Encoding::from_content_type(other),
            Encoding::Sse,
            "{other:?}"
        );
    }
}
