#!/usr/bin/env bash
# Regenerates crates/agui-sdk-core/src/encoding/proto/generated.rs (the messages the
# codec reads) and generated_events.rs (the event messages, for tests), checked in, from
# crates/agui-sdk-core/proto/agui-1.1.proto (the schema reconstructed from @ag-ui/proto 1.0.0,
# fixtures/reference/agui-1.0.proto, plus the 1.1 `encrypted_value_type` fields).
# Needs only cargo: the .proto is compiled by protox, a protobuf compiler written in
# Rust, so no `protoc` is required.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cargo run --quiet --release --manifest-path "$root/scripts/protogen/Cargo.toml" -- "$root"
rustfmt --edition 2021 "$root/crates/agui-sdk-core/src/encoding/proto/generated.rs" \
  "$root/crates/agui-sdk-core/src/encoding/proto/generated_events.rs"
