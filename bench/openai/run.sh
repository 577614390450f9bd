#!/usr/bin/env bash
# Builds and runs the chat-completions adapter benchmark (loopback only, about four
# minutes on a 2-core machine): instruction counts under callgrind when valgrind is
# installed, then time to the first token, delay per token (a burst, and 50 tokens/s),
# throughput and CPU per token; writes the tables to last-run.md. Extra arguments go to
# the driver, e.g.
#   bench/openai/run.sh --phases paced --paced-streams 1,10,100
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

nice -n 10 cargo build --release
phases=ttft,burst,paced,throughput
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
  phases=callgrind,$phases
fi
"$CARGO_TARGET_DIR/release/openai-bench" \
  --phases "$phases" \
  --callgrind-dir "$CARGO_TARGET_DIR/callgrind" \
  --out last-run.md "$@"
