//! The `ag-ui` crate (0.5.0-alpha.3, the strongest Rust peer) and agui-sdk-core on the same
//! realistic stream (`crates/agui-sdk-core/benches/support/stream.rs`), in the same run, each
//! next to the same ceilings:
//! - decoding SSE into typed events (`ag_ui::client::transport::sse::SseDecoder` +
//!   `SseFrame::into_event`, against `agui_sdk_core::encoding::SseDecoder`), ceiling
//!   `serde_json::from_slice::<Value>` of the JSON payloads;
//! - encoding SSE (`ag_ui::SseFormatter::encode`, against
//!   `agui_sdk_core::encoding::sse::encode_event`), ceiling `serde_json::to_writer` of the
//!   events into one buffer.
//!
//! `ag-ui` has no protobuf codec. `scripts/bench-codec.sh` prints the ratios.

use std::hint::black_box;
use std::time::Duration;

use ag_ui::encode::EventStreamFormatter;
use agui_sdk_core::encoding::{sse, SseDecoder};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

#[path = "../../../crates/agui-sdk-core/benches/support/stream.rs"]
mod stream;

const CHUNK: usize = 16 * 1024;

fn peers(c: &mut Criterion) {
    let ours = stream::realistic(20_000);
    let payloads: Vec<Vec<u8>> = ours
        .iter()
        .map(|e| e.to_json_string().into_bytes())
        .collect();
    let theirs: Vec<ag_ui::Event> = payloads
        .iter()
        .map(|p| serde_json::from_slice(p).expect("ag-ui reads the stream's events"))
        .collect();
    let mut sse_bytes = Vec::new();
    for e in &ours {
        sse::encode_event(e, &mut sse_bytes);
    }
    let n = ours.len();

    let mut g = c.benchmark_group("peers");
    g.throughput(Throughput::Elements(n as u64));
    g.measurement_time(Duration::from_secs(4));

    g.bench_function("decode/ceiling_serde_value", |b| {
        b.iter(|| {
            for p in &payloads {
                black_box(serde_json::from_slice::<serde_json::Value>(p).unwrap());
            }
        })
    });
    g.bench_function("decode/agui_sdk_core", |b| {
        b.iter(|| {
            let mut dec = SseDecoder::new();
            let mut count = 0;
            for chunk in sse_bytes.chunks(CHUNK) {
                dec.push(chunk);
                while let Some(ev) = dec.next() {
                    black_box(ev.unwrap());
                    count += 1;
                }
            }
            assert_eq!(count, n);
        })
    });
    g.bench_function("decode/ag_ui", |b| {
        b.iter(|| {
            let mut dec = ag_ui::client::transport::sse::SseDecoder::new();
            let mut count = 0;
            for chunk in sse_bytes.chunks(CHUNK) {
                dec.push(chunk).unwrap();
                while let Some(frame) = dec.next_frame().unwrap() {
                    black_box(frame.into_event().unwrap());
                    count += 1;
                }
            }
            assert_eq!(count, n);
        })
    });

    let mut buf = Vec::with_capacity(sse_bytes.len() * 2);
    g.bench_function("encode/ceiling_serde_to_writer", |b| {
        b.iter(|| {
            buf.clear();
            for e in &ours {
                serde_json::to_writer(&mut buf, e).unwrap();
            }
            black_box(buf.len());
        })
    });
    g.bench_function("encode/agui_sdk_core", |b| {
        b.iter(|| {
            buf.clear();
            for e in &ours {
                sse::encode_event(e, &mut buf);
            }
            black_box(buf.len());
        })
    });
    let formatter = ag_ui::SseFormatter::new();
    g.bench_function("encode/ag_ui", |b| {
        b.iter(|| {
            buf.clear();
            for e in &theirs {
                buf.extend_from_slice(&formatter.encode(e).unwrap());
            }
            black_box(buf.len());
        })
    });
    g.finish();
}

criterion_group!(benches, peers);
criterion_main!(benches);
