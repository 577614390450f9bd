#!/usr/bin/env bash
# The deterministic cost gates (crates/agui-sdk-gates): allocations, bytes and instructions
# per operation on the hot paths, against crates/agui-sdk-gates/budgets.txt. Instructions
# are counted by valgrind's callgrind, installed here from Debian's packages when
# missing (as root); AGUI_GATES_ARGS passes flags (e.g. --only reducer-patch).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
  else
    echo "check-costs: valgrind is needed (Debian: apt-get install valgrind)" >&2
    exit 1
  fi
fi
cargo run --release --quiet -p agui-sdk-gates -- ${AGUI_GATES_ARGS:-}
