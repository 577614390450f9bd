#!/usr/bin/env bash
# `agui decode` streams: decodes about 2 GB of SSE and 2 GB of protobuf (the golden
# stream repeated), piped through standard input, and fails if the peak resident memory
# exceeds 64 MiB. Prints time and peak memory for each.
#
#   scripts/check-decode-memory.sh [REPEATS]   (default 165: 2.1 GB of each)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-165}
cargo build --release -q -p agui-sdk-cli
agui=target/release/agui
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1000); do cat fixtures/reference/events.sse; done > "$tmp/sse"
for i in $(seq 1000); do cat fixtures/reference/events.pb; done > "$tmp/pb"
check() { # FORMAT FILE REPEATS
  local bytes=$(( $(wc -c < "$2") * $3 ))
  ( for _ in $(seq "$3"); do cat "$2"; done ) | /usr/bin/time -f '%e s %M KiB' -o "$tmp/time" "$agui" decode --from "$1" > /dev/null
  read -r secs _ kib _ < "$tmp/time"
  echo "decode --from $1: $bytes bytes in ${secs} s, peak resident memory ${kib} KiB"
  [ "$kib" -le 65536 ] || { echo "memory is not flat" >&2; exit 1; }
}
check sse "$tmp/sse" "$repeats"
check proto "$tmp/pb" $(( repeats * 13011 / 6051 ))
