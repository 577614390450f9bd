#!/usr/bin/env bash
# Prepares the browser test of examples/copilotkit-chat: installs Debian's Chromium
# when /usr/bin/chromium is missing, installs the example's pinned npm packages
# (skipped while node_modules is newer than package-lock.json) and builds the page.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "setup-browser: installing chromium"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi

cd examples/copilotkit-chat
export SCARF_ANALYTICS=false
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup-browser: npm ci in examples/copilotkit-chat"
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build
