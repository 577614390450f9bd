#!/usr/bin/env bash
# Whole processes, same corpus, same run: `agui decode` / `agui verify` against the
# reference packages (bench/cli/ref-cli.mjs over @ag-ui/client 1.0.0), timed by
# hyperfine (`agui decode --from sse` reads events on all cores by default; the
# `--threads 1` row is the one-thread figure). Needs a release `agui` (built here
# unless AGUI_BIN names one), Node.js with interop/'s packages installed (npm ci in
# interop/), python3 and hyperfine.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
if [ -z "${AGUI_BIN:-}" ]; then
  (cd "$root" && cargo build --release --quiet --bin agui)
  AGUI_BIN="$root/target/release/agui"
fi
export NODE_PATH="$root/interop/node_modules"
mkdir -p data
[ -f data/events.jsonl ] || python3 gen.py data/events.jsonl "${EVENTS:-200000}"
"$AGUI_BIN" encode --to sse data/events.jsonl > data/events.sse
"$AGUI_BIN" encode --to proto data/events.jsonl > data/events.pb
ls -l data/events.sse data/events.pb
ref="node --experimental-default-type=module ref-cli.mjs"
ln -sf "$root/interop/node_modules" node_modules
hyperfine --warmup 1 --runs "${RUNS:-5}" --export-markdown data/last-run.md \
  -n "agui decode --from sse" "$AGUI_BIN decode --from sse data/events.sse > /dev/null" \
  -n "agui decode --from sse --threads 1" "$AGUI_BIN decode --from sse --threads 1 data/events.sse > /dev/null" \
  -n "reference decode sse" "node ref-cli.mjs decode sse data/events.sse > /dev/null" \
  -n "agui verify --from sse" "$AGUI_BIN verify --from sse data/events.sse > /dev/null" \
  -n "reference verify sse" "node ref-cli.mjs verify sse data/events.sse > /dev/null 2>&1" \
  -n "agui decode --from proto" "$AGUI_BIN decode --from proto data/events.pb > /dev/null" \
  -n "reference decode proto" "node ref-cli.mjs decode proto data/events.pb > /dev/null"
cat data/last-run.md
