//! Codec throughput on a realistic stream (`stream.rs`): SSE and protobuf, encode and
//! decode, each next to its ceiling —
//! - decoding: a plain `serde_json::from_slice::<serde_json::Value>` of the same JSON
//!   payloads (no framing, no types);
//! - encoding: `serde_json::to_writer` of the same events into one buffer (no framing).
//!
//! Throughput is reported in events/s; `scripts/bench-codec.sh` runs this and prints
//! events/s, MB/s and the ratios to the ceilings. The `ag-ui` crate is measured on the
//! same stream by `bench/peers` (a separate workspace).

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use agui_sdk_core::encoding::{proto, sse, ProtoDecoder, SseDecoder};
use agui_sdk_core::Event;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

#[path = "support/stream.rs"]
mod stream;

/// Network-sized reads.
const CHUNK: usize = 16 * 1024;

fn codec(c: &mut Criterion) {
    let events = stream::realistic(20_000);
    let payloads: Vec<Vec<u8>> = events
        .iter()
        .map(|e| e.to_json_string().into_bytes())
        .collect();
    let mut sse_bytes = Vec::new();
    let mut pb_bytes = Vec::new();
    for e in &events {
        sse::encode_event(e, &mut sse_bytes);
        proto::encode_event(e, &mut pb_bytes);
    }
    let json_len: usize = payloads.iter().map(Vec::len).sum();
    // For scripts/bench-codec.sh, which turns events/s into MB/s.
    let sizes = format!(
        r#"{{"events":{},"json":{},"sse":{},"proto":{}}}"#,
        events.len(),
        json_len,
        sse_bytes.len(),
        pb_bytes.len()
    );
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("codec-stream.json"),
        sizes,
    );
    eprintln!(
        "stream: {} events; JSON {} bytes, SSE {} bytes, protobuf {} bytes; {:?}",
        events.len(),
        json_len,
        sse_bytes.len(),
        pb_bytes.len(),
        &stream::census(&events)[..4]
    );

    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Elements(events.len() as u64));
    g.measurement_time(Duration::from_secs(4));

    g.bench_function("decode/ceiling_serde_value", |b| {
        b.iter(|| {
            for p in &payloads {
                black_box(serde_json::from_slice::<serde_json::Value>(p).unwrap());
            }
        })
    });
    g.bench_function("decode/json_typed", |b| {
        b.iter(|| {
            for p in &payloads {
                black_box(Event::from_json_slice(p).unwrap());
            }
        })
    });
    g.bench_function("decode/sse", |b| {
        b.iter(|| {
            let mut dec = SseDecoder::new();
            let mut n = 0;
            for chunk in sse_bytes.chunks(CHUNK) {
                dec.push(chunk);
                while let Some(ev) = dec.next() {
                    black_box(ev.unwrap());
                    n += 1;
                }
            }
            assert_eq!(n, events.len());
        })
    });
    g.bench_function("decode/proto", |b| {
        b.iter(|| {
            let mut dec = ProtoDecoder::new();
            let mut n = 0;
            for chunk in pb_bytes.chunks(CHUNK) {
                dec.push(chunk);
                while let Some(ev) = dec.next() {
                    black_box(ev.unwrap());
                    n += 1;
                }
            }
            assert_eq!(n, events.len());
        })
    });

    let mut buf = Vec::with_capacity(sse_bytes.len() * 2);
    g.bench_function("encode/ceiling_serde_to_writer", |b| {
        b.iter(|| {
            buf.clear();
            for e in &events {
                serde_json::to_writer(&mut buf, e).unwrap();
            }
            black_box(buf.len());
        })
    });
    g.bench_function("encode/sse", |b| {
        b.iter(|| {
            buf.clear();
            for e in &events {
                sse::encode_event(e, &mut buf);
            }
            black_box(buf.len());
        })
    });
    g.bench_function("encode/proto", |b| {
        b.iter(|| {
            buf.clear();
            for e in &events {
                proto::encode_event(e, &mut buf);
            }
            black_box(buf.len());
        })
    });
    g.finish();
}

/// Free-form JSON (a request's `state`): read into a `serde_json::Value` tree, or kept as
/// canonical text (`JsonText`), which is what a request's free-form JSON now is.
fn free_form(c: &mut Criterion) {
    // About 1 MB: records of strings, numbers, flags and small arrays, as application
    // state tends to be.
    let mut items = Vec::new();
    for i in 0..6_000 {
        items.push(serde_json::json!({
            "id": format!("item-{i}"),
            "title": "A line of text with some words in it",
            "price": i as f64 * 1.25,
            "count": i,
            "tags": ["a", "bb", "ccc"],
            "done": i % 3 == 0,
            "owner": { "name": "someone", "since": 1_700_000_000_000u64 + i },
        }));
    }
    let text = serde_json::to_string(&serde_json::json!({ "items": items })).unwrap();
    let mut g = c.benchmark_group("free_form");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("read/serde_value", |b| {
        b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(&text).unwrap()))
    });
    g.bench_function("read/json_text", |b| {
        b.iter(|| black_box(serde_json::from_str::<agui_sdk_core::JsonText>(&text).unwrap()))
    });
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let kept: agui_sdk_core::JsonText = serde_json::from_str(&text).unwrap();
    g.bench_function("write/serde_value", |b| {
        b.iter(|| black_box(agui_sdk_core::wire::to_canonical_string(&value)))
    });
    g.bench_function("write/json_text", |b| {
        b.iter(|| black_box(agui_sdk_core::wire::to_canonical_string(&kept)))
    });
    g.finish();
}

criterion_group!(benches, codec, free_form);
criterion_main!(benches);
