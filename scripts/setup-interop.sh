#!/usr/bin/env bash
# Installs the reference implementations the interoperability tests run, into folders
# git ignores: the AG-UI 1.0.0 TypeScript packages (npm registry) into
# interop/node_modules, and the Python reference SDK with uvicorn, the conformance
# validator and the providers' official SDKs (anthropic, openai; PyPI) into interop/.venv.
set -euo pipefail
cd "$(dirname "$0")/../interop"
if [ ! -d node_modules/@ag-ui/client ] || [ package.json -nt node_modules/.installed ]; then
  npm install --no-audit --no-fund --silent
  touch node_modules/.installed
fi
if [ ! -x .venv/bin/python ] || [ requirements.txt -nt .venv/.installed ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
  touch .venv/.installed
fi
