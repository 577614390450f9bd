#!/usr/bin/env bash
# Prepares the browser tests (examples/copilotkit-chat and the `agui inspect` page):
# installs Debian's Chromium when /usr/bin/chromium is missing, installs the pinned npm
# packages of the example and of crates/agui-sdk-inspect/e2e (each skipped while its
# node_modules is newer than its package-lock.json) and builds the example's page.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "setup-browser: installing chromium"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi

export SCARF_ANALYTICS=false
# npm ci in folder $1, unless its node_modules is newer than its package-lock.json.
npm_ci() {
  if [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]; then
    echo "setup-browser: npm ci in $1"
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

npm_ci examples/copilotkit-chat
(cd examples/copilotkit-chat && npm run --silent build)
npm_ci crates/agui-sdk-inspect/e2e
