#!/usr/bin/env bash
# Runs the real-browser test of the CopilotKit example against `agui serve`:
# sets up Chromium and the page (scripts/setup-browser.sh), builds the agui binary
# unless AGUI_BIN names one, then runs examples/copilotkit-chat/e2e/browser.test.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-browser.sh
if [ -z "${AGUI_BIN:-}" ]; then
  cargo build --quiet --bin agui
  export AGUI_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/agui"
fi
cd examples/copilotkit-chat
node --test --test-reporter=spec e2e/browser.test.mjs
