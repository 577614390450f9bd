//! The `stream` adapter (cargo feature `stream`): byte chunks from an async source in,
//! events out; decode errors and source errors end the stream as documented.
#![cfg(feature = "stream")]

use crate::common;

use agui_sdk_core::encoding::stream::{DecodeStream, StreamError};
use agui_sdk_core::encoding::{DecodeErrorKind, Encoding, EventDecoder};
use agui_sdk_core::Event;
use futures_util::StreamExt;

fn chunks(bytes: &[u8], size: usize) -> Vec<Result<Vec<u8>, std::io::Error>> {
    bytes.chunks(size).map(|c| Ok(c.to_vec())).collect()
}

#[tokio::test]
async fn decodes_the_golden_streams_from_chunks() {
    let want: Vec<Event> = common::lines("events.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect();
    let source = futures_util::stream::iter(chunks(&common::read("events.sse"), 100));
    let got: Vec<Event> = DecodeStream::new(source, EventDecoder::new(Encoding::Sse))
        .map(|r| r.unwrap())
        .collect()
        .await;
    assert_eq!(got, want);
    let source = futures_util::stream::iter(chunks(&common::read("events.pb"), 7));
    let got = DecodeStream::new(source, EventDecoder::new(Encoding::Proto))
        .collect::<Vec<_>>()
        .await;
    assert_eq!(got.len(), 75);
    assert!(got.iter().all(Result::is_ok));
}

#[tokio::test]
async fn a_cut_stream_ends_with_a_truncation_error() {
    let sse = common::read("events.sse");
    let source = futures_util::stream::iter(chunks(&sse[..5000], 512));
    let got: Vec<_> = DecodeStream::new(source, EventDecoder::new(Encoding::Sse))
        .collect()
        .await;
    assert_eq!(got.len(), 30);
    match got.last().unwrap() {
        Err(StreamError::Decode(e)) => {
            assert!(matches!(e.kind, DecodeErrorKind::Truncated { .. }));
            assert_eq!((e.index, e.offset), (29, 4845));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_source_error_ends_the_stream() {
    let mut items = chunks(
        b"data: {\"type\":\"RUN_ERROR\",\"message\":\"a\"}\n\n",
        1000,
    );
    items.push(Err(std::io::Error::other("connection reset")));
    items.push(Ok(
        b"data: {\"type\":\"RUN_ERROR\",\"message\":\"b\"}\n\n".to_vec()
    ));
    let got: Vec<_> = DecodeStream::new(
        futures_util::stream::iter(items),
        EventDecoder::new(Encoding::Sse),
    )
    .collect()
    .await;
    assert_eq!(got.len(), 2);
    assert!(got[0].is_ok());
    assert!(matches!(&got[1], Err(StreamError::Source(e)) if e.to_string() == "connection reset"));
}
