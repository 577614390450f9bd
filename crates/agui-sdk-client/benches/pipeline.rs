#![allow(missing_docs)] // criterion_group! generates undocumented items
//! The client pipeline in-process, on a recorded stream (no HTTP).
//!
//! The stream (`agui_sdk_testkit::events::chat_run`, from a fixed seed): `RUN_STARTED`,
//! a state snapshot, 300 assistant messages of `TEXT_MESSAGE_CONTENT` deltas of 5 to 40
//! characters (about 200 per message), a tool call with its result every 10 messages, a
//! `STATE_DELTA` every 25 messages, two `TEXT_MESSAGE_CHUNK` messages and one
//! `TOOL_CALL_CHUNK` call, `RUN_FINISHED`. It is encoded once as SSE bytes, then:
//!
//! - `decode`: the SSE bytes through `EventDecoder`, fed in 64 KiB chunks;
//! - `agent`: the same bytes through the real `Conversation::run_agent` (over a `Transport`
//!   whose `EventStream` decodes the bytes lazily, 64 KiB at a time, as the HTTP body
//!   stream does): decode, chunk expansion, verification and the reducer, with the
//!   bookkeeping `Conversation` adds (input building, new-message collection).
//! - `core-steps`: the frames through the core inbound pipeline (`Inbound` with a
//!   reducer: enforcement, expansion, verification, reduction) called directly, with no
//!   async runtime, to show what `Conversation` adds.
//!
//! Throughput is in events (criterion `Throughput::Elements`).
//! `cargo bench -p agui-sdk-client --bench pipeline`

use std::hint::black_box;
use std::sync::Arc;

use agui_sdk_client::{ClientError, Conversation, EventStream, RunParams, Transport};
use agui_sdk_core::encoding::{DecoderLimits, Encoding, EventDecoder, EventEncoder, RawBody};
use agui_sdk_core::semantics::{Inbound, InboundConfig, Reducer};
use agui_sdk_core::{Event, RunAgentInput};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;

const THREAD: &str = "thread-bench";
const RUN: &str = "run-bench";
const CHUNK: usize = 64 * 1024;

/// Decodes `bytes` lazily, 64 KiB at a time, as the HTTP body stream feeds the decoder.
struct LazyDecode {
    bytes: Arc<Vec<u8>>,
    at: usize,
    decoder: EventDecoder,
    finished: bool,
}

impl Iterator for LazyDecode {
    type Item = Result<Event, ClientError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.decoder.next() {
                return Some(r.map_err(ClientError::from));
            }
            if self.finished {
                return None;
            }
            if self.at < self.bytes.len() {
                let end = (self.at + CHUNK).min(self.bytes.len());
                self.decoder.push(&self.bytes[self.at..end]);
                self.at = end;
            } else {
                self.decoder.finish();
                self.finished = true;
            }
        }
    }
}

fn lazy(bytes: &Arc<Vec<u8>>) -> LazyDecode {
    LazyDecode {
        bytes: bytes.clone(),
        at: 0,
        decoder: EventDecoder::new(Encoding::Sse),
        finished: false,
    }
}

/// A transport that answers every run with the recorded bytes.
struct Recorded(Arc<Vec<u8>>);

impl Transport for Recorded {
    fn run(&self, _input: &RunAgentInput, inbound: &InboundConfig) -> EventStream {
        // The recorded bytes in 64 KiB chunks, decoded and taken in as the HTTP body is.
        let bytes = self.0.clone();
        let chunks = (0..bytes.len().div_ceil(CHUNK)).map(move |i| {
            let end = ((i + 1) * CHUNK).min(bytes.len());
            Ok::<_, ClientError>(Bytes::copy_from_slice(&bytes[i * CHUNK..end]))
        });
        EventStream::from_body(
            futures_util::stream::iter(chunks),
            Encoding::Sse,
            DecoderLimits::default(),
            inbound.clone(),
        )
    }
}

fn bench(c: &mut Criterion) {
    let events = agui_sdk_testkit::events::chat_run(THREAD, RUN);
    let encoder = EventEncoder::new(Encoding::Sse);
    let mut sse = Vec::new();
    for e in &events {
        encoder.encode(e, &mut sse);
    }
    let sse = Arc::new(sse);
    let n = events.len() as u64;
    eprintln!(
        "recorded stream: {n} events, {} bytes of SSE ({:.1} bytes/event)",
        sse.len(),
        sse.len() as f64 / n as f64
    );

    // Sanity: the recorded stream goes through the whole pipeline.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let run_agent = || {
        let mut agent = Conversation::builder_with_transport(Arc::new(Recorded(sse.clone())))
            .thread_id(THREAD)
            .build();
        let r = rt
            .block_on(agent.run_agent(RunParams::new().run_id(RUN)))
            .expect("the recorded run succeeds");
        (agent, r)
    };
    let (agent, _) = run_agent();
    eprintln!(
        "after the run: {} messages, state {}",
        agent.messages().len(),
        agent.state()
    );

    let mut g = c.benchmark_group("client-pipeline");
    g.throughput(Throughput::Elements(n));
    g.sample_size(20);
    g.bench_function("decode", |b| {
        b.iter(|| {
            let mut count = 0u64;
            for e in lazy(&sse) {
                black_box(e.expect("decodes"));
                count += 1;
            }
            assert_eq!(count, n);
        })
    });
    g.bench_function("agent", |b| {
        b.iter(|| black_box(run_agent()));
    });
    g.bench_function("core-steps", |b| {
        // The inbound pipeline called directly, frame by frame (no async runtime).
        b.iter(|| {
            let reducer = Reducer::new(Vec::new(), Some(json!({})));
            let mut inbound = Inbound::with_reducer(InboundConfig::default(), reducer);
            let mut decoder = EventDecoder::new(Encoding::Sse);
            let (mut out, mut warnings) = (Vec::new(), Vec::new());
            for chunk in sse.chunks(CHUNK) {
                decoder.push(chunk);
                while let Some(raw) = decoder.next_raw() {
                    let RawBody::Json(data) = raw.expect("decodes").body else {
                        unreachable!("SSE frames are JSON")
                    };
                    inbound
                        .push_json(data, &mut out, &mut warnings)
                        .expect("takes in");
                    out.clear();
                }
            }
            assert!(warnings.is_empty());
            black_box(inbound.into_reducer())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
