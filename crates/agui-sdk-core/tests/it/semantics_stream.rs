//! The `Stream` adapters (feature `stream`) agree with their iterator counterparts.
//! Run with `cargo test -p agui-sdk-core --features stream --test it semantics_stream`.
#![cfg(feature = "stream")]

use crate::common;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use agui_sdk_core::semantics::{
    compact_events, expand_chunks, CompactStream, ExpandChunksStream, VerifyStream,
};
use agui_sdk_core::Event;
use futures_core::Stream;

struct Iter<I>(I);

impl<I: Iterator<Item = Event> + Unpin> Stream for Iter<I> {
    type Item = Event;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Event>> {
        Poll::Ready(self.0.next())
    }
}

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn collect<S: Stream + Unpin>(mut s: S) -> Vec<S::Item> {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut out = Vec::new();
    while let Poll::Ready(Some(x)) = Pin::new(&mut s).poll_next(&mut cx) {
        out.push(x);
    }
    out
}

fn golden() -> Vec<Event> {
    common::lines("events.jsonl")
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect()
}

#[test]
fn stream_adapters_match_iterators() {
    let expanded: Vec<Event> = collect(ExpandChunksStream::new(Iter(golden().into_iter())))
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let by_iter: Vec<Event> = expand_chunks(golden()).map(Result::unwrap).collect();
    assert_eq!(expanded, by_iter);
    let verified = collect(VerifyStream::new(Iter(expanded.clone().into_iter())));
    assert!(verified.iter().all(Result::is_ok));
    assert_eq!(verified.len(), expanded.len());
    let compacted = collect(CompactStream::new(Iter(expanded.clone().into_iter())));
    assert_eq!(compacted, compact_events(expanded).collect::<Vec<_>>());
    assert_eq!(compacted.len(), 74);
}
