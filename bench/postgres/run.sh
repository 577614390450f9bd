#!/usr/bin/env bash
# Builds and runs the PostgreSQL run store benchmark against the PostgreSQL at
# $POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test) and the Redis at
# $REDIS_URL (default redis://127.0.0.1:6379), and writes the tables to last-run.md.
# Everything it writes is in a fresh schema agui_bench_* (and agui_bench_*_floor) and
# under a fresh Redis prefix agui-bench-postgres_*, dropped and deleted at the end.
# Extra arguments go to the benchmark, e.g.
#   bench/postgres/run.sh --phases append,replay --rounds 1
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

nice -n 10 cargo build --release
"$CARGO_TARGET_DIR/release/postgres-bench" \
  --postgres "${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}" \
  --redis "${REDIS_URL:-redis://127.0.0.1:6379}" \
  --out last-run.md "$@"
