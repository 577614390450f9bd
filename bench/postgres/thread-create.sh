#!/usr/bin/env bash
# The thread count's lock, alone: pgbench runs a new thread's transaction (the thread
# inserted, the count read, its row locked and joined, COMMIT: the statements of
# `join_thread` for a new thread) from many clients at once, against the store's
# tables as migrations 1-4 made them (the count in one row) and as migrations 1-5 make
# them (the count in shards). Each layout in a fresh schema, dropped at the end.
# Usage: bench/postgres/thread-create.sh [CLIENTS (32)] [SECONDS (20)] [ROUNDS (2)]
set -euo pipefail
cd "$(dirname "$0")"
url="${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
clients="${1:-32}" seconds="${2:-20}" rounds="${3:-2}"
migrations=../../crates/agui-sdk-postgres/migrations
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"; for s in $schemas; do psql -q "$url" -c "DROP SCHEMA IF EXISTS $s CASCADE" 2>/dev/null || true; done' EXIT
schemas=""
for layout in one_row:4 shards:5; do
  name="${layout%%:*}" last="${layout##*:}" s="agui_bench_tc_${name}_$$"
  schemas="$schemas $s"
  { echo "CREATE SCHEMA $s;"
    for f in "$migrations"/000*.sql; do
      v="$(basename "$f" | cut -c1-4)"
      if [ "$((10#$v))" -le "$last" ]; then cat "$f"; fi
    done; } | sed "s/{schema}/$s/g" | psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null
  cat >"$tmp/$name.sql" <<SQL
\set k random(1, 1000000000000)
BEGIN;
INSERT INTO $s.threads (key, owner, thread_id, agent, touched_at_ms) VALUES ('o.' || :k, 'o', 't', 'a', 0) ON CONFLICT (key) DO NOTHING RETURNING key;
SELECT sum(n)::bigint, count(*) FROM $s.thread_count;
SELECT live FROM $s.threads WHERE key = 'o.' || :k FOR UPDATE;
UPDATE $s.threads SET live = 'r', live_run = 'r', last_run = 'r' WHERE key = 'o.' || :k;
COMMIT;
SQL
done
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
  for name in one_row shards; do
    tps="$(pgbench -n -c "$clients" -j 2 -T "$seconds" -f "$tmp/$name.sql" "$url" 2>&1 \
      | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
    echo "round $round, count in $name: $tps new threads/s ($clients clients, ${seconds}s)"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
