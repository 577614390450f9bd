#!/usr/bin/env bash
# Runs every test: installs the reference packages the interop tests need, then the
# whole workspace's tests (unit, golden, property, interop and doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-interop.sh
cargo test --workspace --all-targets
cargo test --workspace --doc
