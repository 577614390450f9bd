#!/usr/bin/env bash
# Runs every test: installs the reference packages the interop tests need, then the
# whole workspace's tests (unit, golden, property, interop and doc tests), and the
# browser test of the CopilotKit example page.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-interop.sh
export AGUI_REQUIRE_INTEROP=1  # here, a missing reference package fails the interop tests
export AGUI_REQUIRE_REDIS=1    # and a missing Redis (AGUI_TEST_REDIS_URL, default 127.0.0.1:6379) fails the store tests
export AGUI_REQUIRE_POSTGRES=1 # likewise a missing PostgreSQL (AGUI_TEST_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test)
cargo test --workspace --all-targets
# The AG-UI 1.1 conformance lane again, printing its per-fixture table.
cargo test -p agui-sdk-client --test it -- --nocapture --exact conformance::conformance_corpus_1_1
cargo test --workspace --doc
# The deterministic cost gates: allocations and instructions per operation on the hot
# paths against their committed budgets (release build; valgrind).
./scripts/check-costs.sh
# A real CopilotKit page against `agui serve`, in headless Chromium (installs Debian's
# chromium and the example's npm packages when missing).
./scripts/test-browser.sh
