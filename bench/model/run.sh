#!/usr/bin/env bash
# Builds and runs the model agent benchmark (loopback only, about twenty minutes on a
# 2-core machine): memory per open model run, then CPU per streamed token with
# reasoning, for agui-sdk-model's chat-completions, Responses and Anthropic adapters
# and for CopilotKit's Node runtime (@copilotkit/runtime 1.75.0, its BuiltInAgent) over
# the same fake upstream; writes the tables to last-run.md. Extra arguments go to the
# driver, e.g.
#   bench/model/run.sh --reps 1 --open 20
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export COPILOTKIT_TELEMETRY_DISABLED=true DO_NOT_TRACK=1

(cd node && npm ci --ignore-scripts --no-audit --no-fund)
nice -n 10 cargo build --release
"$CARGO_TARGET_DIR/release/model-bench" \
  --node "node --expose-gc node/server.mjs" \
  --out last-run.md "$@"
