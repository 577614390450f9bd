#!/usr/bin/env bash
# Reducer benchmark: ours (crates/agui-sdk-core/benches/apply.rs) next to the reference
# `defaultApplyEvents` (@ag-ui/client 1.0.0, interop/semantics-bench.mjs) on the same
# generated JSON Lines input, in the same run; then ours alone at the full sizes.
#
# The workload: 20-byte TEXT_MESSAGE_CONTENT deltas over 1,000 messages with one
# STATE_DELTA (a copy and a replace) per 100 deltas on a 1 MB state. Scale 1 =
# 1,000,000 deltas and 10,000 patches. The reference copies the message list and the state on every event, so it
# is compared at small scales only (COMPARE_SCALES); ours also runs at FULL_SCALES.
#
# Environment: COMPARE_SCALES (default "0.001 0.01"), FULL_SCALES (default "0.1,1,10"),
# NODE_TIMEOUT seconds per reference run (default 900).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup-interop.sh"
cargo bench -q -p agui-sdk-core --bench apply --no-run
bench="$(cargo bench -q -p agui-sdk-core --bench apply --no-run --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }

echo "== ours vs reference defaultApplyEvents, same input, same run"
printf '%7s %8s | %10s %10s %8s | %10s %10s %8s | %9s\n' \
  scale events "ours s" "ours cpu" "ours MB" "ref s" "ref cpu" "ref MB" "wall ratio"
for s in ${COMPARE_SCALES:-0.001 0.01}; do
  f="$tmp/events-$s.jsonl"
  "$bench" --write-jsonl "$s" "$f"
  ours="$("$bench" --apply-jsonl "$f")"
  ref="$(cd interop && timeout "${NODE_TIMEOUT:-900}" node semantics-bench.mjs "$f" || echo '{"seconds":0,"cpu_seconds":0,"peak_rss_kb":0}')"
  os="$(echo "$ours" | field seconds)"; oc="$(echo "$ours" | field cpu_seconds)"; om="$(echo "$ours" | field peak_rss_kb)"
  rs="$(echo "$ref" | field seconds)"; rc="$(echo "$ref" | field cpu_seconds)"; rm_="$(echo "$ref" | field peak_rss_kb)"
  n="$(echo "$ours" | field events)"
  awk -v s="$s" -v n="$n" -v os="$os" -v oc="$oc" -v om="$om" -v rs="$rs" -v rc="$rc" -v rm="$rm_" 'BEGIN {
    sp = (os > 0 && rs > 0) ? sprintf("%.0fx", rs / os) : "n/a";
    printf "%7s %8d | %10.4f %10.4f %8.1f | %10.3f %10.3f %8.1f | %9s\n", s, n, os, oc, om/1024, rs, rc, rm/1024, sp }'
done
echo
echo "== ours at full sizes (each size in a fresh process)"
"$bench" --scales "${FULL_SCALES:-0.1,1,10}"
