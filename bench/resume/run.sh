#!/usr/bin/env bash
# Builds and runs the resumable-run benchmark (all four phases, about three minutes)
# against the Redis at $REDIS_URL (default redis://127.0.0.1:6379), and writes the
# tables to last-run.md. Every key it writes is under a fresh agui-bench-resume-*
# prefix and deleted at the end of its phase. Extra arguments go to the benchmark, e.g.
#   bench/resume/run.sh --phases store,resume --rounds 1
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

nice -n 10 cargo build --release
"$CARGO_TARGET_DIR/release/resume-bench" \
  --redis "${REDIS_URL:-redis://127.0.0.1:6379}" \
  --out last-run.md "$@"
