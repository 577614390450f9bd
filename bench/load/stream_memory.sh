#!/usr/bin/env bash
# Memory per open stream, same run, same client (open_streams.py): N runs of
# `agentic_chat` held open at once against
#   - agui serve --delay-ms 60000 (the real agent machinery: agent_fn, lifecycle guard,
#     response stream, router, hyper),
#   - the reference encoder on Node (interop/bench-chat-server.mjs with a 60 s delay),
#   - srv_held hyper: hyper's HTTP/1 connection alone, answering with the same first
#     two frames and holding the stream (the floor for any hyper server),
#   - srv_held axum: the same under axum::serve.
#   bench/load/stream_memory.sh [N=4000] (agui serve admits 4,096 runs under its default memory budget)
# Needs Node.js with interop/'s packages (npm ci in interop/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-4000}
ulimit -n "$(ulimit -Hn)"  # each stream is a socket at both ends of loopback
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release --quiet --bin agui)
(cd "$here" && cargo build --release --quiet --bin srv_held)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
measure() {
  local name=$1 p=$2; shift 2
  "$@" > /dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$p") 2>/dev/null && break; sleep 0.1; done
  printf '%-48s ' "$name"
  python3 "$here/open_streams.py" "$n" "$p" "$pid"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
p=$(port); measure "agui serve (agentic_chat, 60 s between deltas)" "$p" \
  env AGUI_LOG=warn "$CARGO_TARGET_DIR/release/agui" serve --addr "127.0.0.1:$p" --delay-ms 60000 --store off
p=$(port); measure "Node http + @ag-ui/encoder (same agent)" "$p" \
  node "$root/interop/bench-chat-server.mjs" "$p" 60000
p=$(port); measure "hyper HTTP/1 alone (srv_held hyper)" "$p" "$CARGO_TARGET_DIR/release/srv_held" hyper "$p"
p=$(port); measure "axum::serve (srv_held axum)" "$p" "$CARGO_TARGET_DIR/release/srv_held" axum "$p"
