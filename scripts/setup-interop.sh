#!/usr/bin/env bash
# Installs the reference packages the interoperability tests run (npm registry: the
# AG-UI 1.0.0 TypeScript packages) into interop/node_modules, which git ignores.
set -euo pipefail
cd "$(dirname "$0")/../interop"
if [ ! -d node_modules/@ag-ui/client ] || [ package.json -nt node_modules/.installed ]; then
  npm install --no-audit --no-fund --silent
  touch node_modules/.installed
fi
