#!/usr/bin/env bash
# The protocol core must stay free of I/O and async runtimes (it serves wasm, embedded
# hosts and any runtime). Fails when its normal dependency tree holds such a crate.
set -euo pipefail
cd "$(dirname "$0")/.."
forbidden='^(tokio|tokio-util|hyper|hyper-util|reqwest|mio|async-std|smol|async-io|socket2|h2|axum|tower|tower-http|rustls|native-tls|openssl|ureq|isahc|surf)$'
deps=$(cargo tree -p agui-sdk-core -e normal --prefix none --format '{p}' | awk '{print $1}' | sort -u)
bad=$(printf '%s\n' "$deps" | grep -E "$forbidden" || true)
if [ -n "$bad" ]; then
  echo "agui-sdk-core depends on I/O crates it must not use:" >&2
  printf '  %s\n' $bad >&2
  exit 1
fi
echo "agui-sdk-core: $(printf '%s\n' "$deps" | wc -l) crates in its normal dependency tree, none of them I/O or async runtimes"

# The agent layer, a model adapter and a store compile no HTTP server: no axum, no h2,
# no server feature of hyper or hyper-util (agui-sdk-model's HTTP client, reqwest, with
# hyper's client side, is allowed).
for crate in agui-sdk-agent agui-sdk-model agui-sdk-redis agui-sdk-postgres; do
  tree=$(cargo tree -p "$crate" -e normal,features --prefix none)
  bad=$(printf '%s\n' "$tree" | grep -E '^(axum|axum-core|h2) v|^hyper(-util)? feature "server' | sort -u || true)
  if [ -n "$bad" ]; then
    echo "$crate compiles an HTTP server:" >&2
    printf '  %s\n' "$bad" >&2
    exit 1
  fi
  n=$(cargo tree -p "$crate" -e normal --prefix none --format '{p}' | awk '{print $1}' | sort -u | wc -l)
  echo "$crate: $n crates in its normal dependency tree, no HTTP server"
done
