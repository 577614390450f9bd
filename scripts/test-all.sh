#!/usr/bin/env bash
# Runs every test: installs the reference packages the interop tests need, then the
# whole workspace's tests (unit, golden, property, interop and doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-interop.sh
cargo test --workspace --all-targets
# The AG-UI 1.1 conformance lane again, printing its per-fixture table.
cargo test -p agui-client --test conformance -- --nocapture conformance_corpus_1_1
cargo test --workspace --doc
