#!/usr/bin/env bash
# The reasoning round trip of docs/reasoning.md, for real: `agui serve` with its model
# agent on the Anthropic Messages API (thinking on), against this crate's fake
# upstream; two runs with curl. The first run's answer streams a redacted thinking
# block, a signed thinking block and a call of the frontend tool `show_card`; the
# second run sends the conversation back with the tool's result (and, to show what
# happens to it, a reasoning message carrying another provider's value). Prints the
# SSE events of both runs, the request the upstream received for the second one, and
# the server's warning. Needs `agui` (or AGUI=path), curl and jq.
#   bench/model/reasoning-demo.sh [anthropic|responses]
set -euo pipefail
cd "$(dirname "$0")"
api="${1:-anthropic}"
agui="${AGUI:-agui}"
nice -n 10 cargo build --release -q
tmp="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

BENCH_LOG_REQUESTS=1 target/release/model-bench upstream >"$tmp/up.out" 2>"$tmp/up.err" &
until grep -q listening "$tmp/up.out" 2>/dev/null; do sleep 0.1; done
upstream="http://127.0.0.1:$(awk '{print $2}' "$tmp/up.out")/v1"

if [ "$api" = anthropic ]; then
  extra=(--thinking-budget 1024)
  foreign='{"id":"rs-old","role":"reasoning","content":"an earlier thought","encryptedValue":"gAAAAABo-other","encryptedValueType":"openai.encrypted_content"}'
  prompt="benchask reasoning=7 tokens=4 words=1 tool=1 redacted=1"
else
  extra=(--reasoning-effort medium)
  foreign='{"id":"rs-old","role":"reasoning","content":"an earlier thought","encryptedValue":"EqQB-other","encryptedValueType":"anthropic.thinking_signature"}'
  prompt="benchask reasoning=7 tokens=4 words=1 tool=1"
fi
"$agui" serve --addr 127.0.0.1:0 --delay-ms 0 --store off --model bench-model \
  --model-url "$upstream" --model-api "$api" "${extra[@]}" 2>"$tmp/serve.err" &
until grep -q "listening on" "$tmp/serve.err" 2>/dev/null; do sleep 0.1; done
server="$(grep -o 'http://[0-9.:]*' "$tmp/serve.err" | head -1)"

tool='{"name":"show_card","description":"Shows a city card","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}'
user="{\"id\":\"u1\",\"role\":\"user\",\"content\":\"$prompt\"}"
run() { # $1: run id, $2: messages
  curl -sN "$server/chat" -H 'content-type: application/json' -H 'accept: text/event-stream' \
    -d "{\"threadId\":\"t1\",\"runId\":\"$1\",\"state\":{},\"messages\":$2,\"tools\":[$tool],\"context\":[],\"forwardedProps\":{}}"
}

echo "=== run 1: events"
run r1 "[$user]" | tee "$tmp/r1.sse"

# What a client keeps of run 1: each reasoning message with its value and type, the
# assistant message with its tool call; then the tool's result.
jq -cs '
  [ .[] | select(.type == "REASONING_MESSAGE_START") | {id: .messageId, role: "reasoning", content: ""} ] as $rs
  | (reduce (.[] | select(.type == "REASONING_MESSAGE_CONTENT")) as $e ({}; .[$e.messageId] += $e.delta)) as $text
  | (reduce (.[] | select(.type == "REASONING_ENCRYPTED_VALUE")) as $e ({}; .[$e.entityId] = $e)) as $enc
  | ([ .[] | select(.type == "TOOL_CALL_START") ][0]) as $call
  | ([ .[] | select(.type == "TOOL_CALL_ARGS") | .delta ] | join("")) as $args
  | [ $rs[] | .content = ($text[.id] // "") | .encryptedValue = $enc[.id].encryptedValue
            | .encryptedValueType = $enc[.id].encryptedValueType ]
    + [ {id: ($call.parentMessageId // "a1"), role: "assistant",
         toolCalls: [ {id: $call.toolCallId, type: "function",
                       function: {name: $call.toolCallName, arguments: $args}} ]},
        {id: "tr1", role: "tool", toolCallId: $call.toolCallId, content: "shown"} ]
' <(sed -n 's/^data: //p' "$tmp/r1.sse") >"$tmp/kept.json"

echo
echo "=== run 2: the messages sent back (after the user's)"
jq . "$tmp/kept.json"
echo "=== run 2: events"
run r2 "[$foreign,$user,$(jq -c '.[]' "$tmp/kept.json" | paste -sd,)]"
echo
echo "=== run 2: the request the upstream received (messages / input)"
grep '^request' "$tmp/up.err" | tail -1 | sed 's/^request [^ ]* //' \
  | jq '.messages // .input'
echo "=== the server's warnings"
grep -i warn "$tmp/serve.err" || true
