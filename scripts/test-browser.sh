#!/usr/bin/env bash
# Runs the real-browser tests: the CopilotKit example against `agui serve`, then the
# `agui inspect` page. Sets up Chromium and the pages (scripts/setup-browser.sh),
# builds the agui binary unless AGUI_BIN names one, then runs
# examples/copilotkit-chat/e2e/browser.test.mjs, its postgres.test.mjs (the page across a
# restart of `agui serve --store postgres://…`: skipped without PostgreSQL, except under
# AGUI_REQUIRE_POSTGRES=1 or CI) and crates/agui-sdk-inspect/e2e/*.test.mjs (one file after
# the other: each starts its own processes and browser).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-browser.sh
if [ -z "${AGUI_BIN:-}" ]; then
  cargo build --quiet --bin agui
  export AGUI_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/agui"
fi
(cd examples/copilotkit-chat && node --test --test-concurrency=1 --test-reporter=spec e2e/browser.test.mjs e2e/postgres.test.mjs)
node --test --test-concurrency=1 --test-reporter=spec crates/agui-sdk-inspect/e2e/*.test.mjs
