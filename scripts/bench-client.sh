#!/usr/bin/env bash
# Client benchmark: our client (raw HttpAgent stream and the whole Agent pipeline), the
# reference Node HttpAgent (@ag-ui/client 1.0.0) and the ag-ui crate's client, against
# one loopback server in the same run, each client in a fresh process (throughput and
# peak RSS); then the in-process pipeline benchmark (criterion) on a recorded stream.
#
# Arguments go to the client-bench driver (bench/client/src/main.rs), e.g.
#   scripts/bench-client.sh --events 1000000 --encodings sse,proto --slow-divisor 10
# Environment: SKIP_CRITERION=1 skips the in-process benchmark.
# The table is printed and written to bench/client/last-run.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup-interop.sh"
# bench/client is a workspace of its own (the comparison crate never enters ours); it
# shares our target directory so the common dependencies are built once.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build -q --release --manifest-path bench/client/Cargo.toml
"$CARGO_TARGET_DIR/release/client-bench" "$@"
if [ "${SKIP_CRITERION:-0}" != 1 ]; then
  cargo bench -q -p agui-sdk-client --bench pipeline
fi
