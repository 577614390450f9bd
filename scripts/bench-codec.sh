#!/usr/bin/env bash
# Codec benchmarks: agui-sdk-core's SSE and protobuf codecs on a realistic stream
# (crates/agui-sdk-core/benches/codec.rs), then agui-sdk-core against the `ag-ui` crate on the
# same stream in the same run (bench/peers, a separate workspace). Prints events/s, MB/s
# and the ratio of each to its ceiling (decode: serde_json::from_slice::<Value> of the
# same JSON payloads; encode: serde_json::to_writer of the same events).
#
#   scripts/bench-codec.sh            both
#   scripts/bench-codec.sh --no-peers only agui-sdk-core's
set -euo pipefail
cd "$(dirname "$0")/.."
# One codegen unit and fat LTO, as an optimised application build would use: with the
# default 16 units, where the compiler happens to place and inline the serializer moves
# every figure here, ceilings included, by up to 15 % from one build to the next.
export CARGO_PROFILE_BENCH_CODEGEN_UNITS=1 CARGO_PROFILE_BENCH_LTO=fat
cargo bench -p agui-sdk-core --bench codec
[ "${1:-}" = "--no-peers" ] || cargo bench --manifest-path bench/peers/Cargo.toml --bench peers
python3 - <<'PY'
import json, os
def mean_ns(group, name, root="target"):
    path = f"{root}/criterion/{group}/{name}/new/estimates.json"
    if not os.path.exists(path):
        return None
    return json.load(open(path))["mean"]["point_estimate"]
sizes = json.load(open("target/tmp/codec-stream.json"))
n = sizes["events"]
def row(label, ns, nbytes, ceiling_ns=None):
    if ns is None:
        return
    ev_s = n / (ns / 1e9)
    mb_s = nbytes / (ns / 1e9) / 1e6
    ratio = f"{ceiling_ns / ns * 100:6.1f} %" if ceiling_ns else "        "
    print(f"  {label:<44} {ev_s / 1e6:6.2f} M events/s {mb_s:8.1f} MB/s  {ratio}")
print(f"\nstream: {n} events; JSON {sizes['json']} B, SSE {sizes['sse']} B, protobuf {sizes['proto']} B")
print("\nagui-core (crates/agui-sdk-core/benches/codec.rs); % = speed relative to the ceiling")
dc = mean_ns("codec", "decode_ceiling_serde_value")
ec = mean_ns("codec", "encode_ceiling_serde_to_writer")
row("decode ceiling: from_slice::<Value> (JSON)", dc, sizes["json"], dc)
row("decode JSON payloads to typed events", mean_ns("codec", "decode_json_typed"), sizes["json"], dc)
row("decode SSE (framing + typed events)", mean_ns("codec", "decode_sse"), sizes["sse"], dc)
row("decode protobuf (framing + typed events)", mean_ns("codec", "decode_proto"), sizes["proto"], dc)
row("encode ceiling: to_writer (JSON)", ec, sizes["json"], ec)
row("encode SSE", mean_ns("codec", "encode_sse"), sizes["sse"], ec)
row("encode protobuf", mean_ns("codec", "encode_proto"), sizes["proto"], ec)
ep, eps = mean_ns("codec", "encode_proto"), mean_ns("codec", "encode_proto-via-structs")
row("encode protobuf via the prost structs", eps, sizes["proto"], ec)
if ep and eps:
    print(f"\n  protobuf encode straight from our types: {eps / ep:.2f}x as fast as via the prost structs")
fr, ft = mean_ns("free_form", "read_serde_value"), mean_ns("free_form", "read_json_text")
fw, fx = mean_ns("free_form", "write_serde_value"), mean_ns("free_form", "write_json_text")
if fr and ft and fw and fx:
    print(f"\n  free-form JSON (1 MB of state): kept as text read {fr / ft:.2f}x as fast as into a Value "
          f"({ft / 1e6:.2f} vs {fr / 1e6:.2f} ms), written {fw / fx:.0f}x as fast")
root = "bench/peers/target"
pdc = mean_ns("peers", "decode_ceiling_serde_value", root)
if pdc:
    pec = mean_ns("peers", "encode_ceiling_serde_to_writer", root)
    print("\nsame run, against the ag-ui crate 0.5.0-alpha.3 (bench/peers); % = relative to the ceiling")
    row("decode ceiling: from_slice::<Value> (JSON)", pdc, sizes["json"], pdc)
    row("decode SSE: agui-sdk-core", mean_ns("peers", "decode_agui_core", root), sizes["sse"], pdc)
    row("decode SSE: ag-ui", mean_ns("peers", "decode_ag_ui", root), sizes["sse"], pdc)
    row("encode ceiling: to_writer (JSON)", pec, sizes["json"], pec)
    row("encode SSE: agui-sdk-core", mean_ns("peers", "encode_agui_core", root), sizes["sse"], pec)
    row("encode SSE: ag-ui", mean_ns("peers", "encode_ag_ui", root), sizes["sse"], pec)
    a, b = mean_ns("peers", "decode_agui_core", root), mean_ns("peers", "decode_ag_ui", root)
    c, d = mean_ns("peers", "encode_agui_core", root), mean_ns("peers", "encode_ag_ui", root)
    print(f"\n  agui-sdk-core vs ag-ui: SSE decode {b / a:.2f}x as fast, SSE encode {d / c:.2f}x as fast")
PY
