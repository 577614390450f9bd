#!/usr/bin/env bash
# Builds and runs the CopilotKit connect benchmark end to end: installs the Node
# runtime (node/, from its lockfile, install scripts off), builds the Rust server and
# driver (release), then measures both servers one after the other and writes the
# tables to last-run.md. Extra arguments go to the driver, e.g.
#   bench/copilotkit/run.sh --connects 100 --memory 500x10
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export COPILOTKIT_TELEMETRY_DISABLED=true DO_NOT_TRACK=1

if [ ! -d node/node_modules/@copilotkitnext/runtime ] || [ node/package-lock.json -nt node/node_modules/.package-lock.json ]; then
  (cd node && npm ci --ignore-scripts --no-audit --no-fund)
fi
nice -n 10 cargo build --release --bins

"$CARGO_TARGET_DIR/release/ck-driver" \
  --server "rust=$CARGO_TARGET_DIR/release/ck-server" \
  --server "node=node --expose-gc node/server.mjs" \
  --out last-run.md "$@"
