#!/usr/bin/env bash
# Seeds the fuzz corpora from the reference vectors: the whole golden streams and each
# golden frame on its own (prefixed with a 0 byte: no splitting).
set -euo pipefail
cd "$(dirname "$0")"
ref=../fixtures/reference
mkdir -p corpus/sse_decoder corpus/proto_decoder
python3 - "$ref" <<'PY'
import json, sys, os
ref = sys.argv[1]
sse = open(os.path.join(ref, "events.sse"), "rb").read()
pb = open(os.path.join(ref, "events.pb"), "rb").read()
open("corpus/sse_decoder/all", "wb").write(b"\0" + sse)
open("corpus/proto_decoder/all", "wb").write(b"\0" + pb)
for line in open(os.path.join(ref, "events.index.jsonl")):
    e = json.loads(line)
    i = e["index"]
    s = e["sse"]
    open(f"corpus/sse_decoder/ev{i:02}", "wb").write(b"\0" + sse[s["offset"]:s["offset"] + s["length"]])
    open(f"corpus/proto_decoder/ev{i:02}", "wb").write(b"\0" + bytes.fromhex(e["pb"]["hex"]))
# Shapes the hardening work met: repeated keys (tags included) and deep nesting.
shapes = [
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r","type":"RUN_FINISHED"}',
    b'{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"system","content":"x","role":"user"}]}',
    b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"x","messageId":"b","delta":"y"}',
    b'{"type":"STATE_DELTA","delta":[{"op":"add","path":"/a","value":1,"op":"remove"}]}',
    b'{"type":"STATE_SNAPSHOT","snapshot":' + b'[' * 127 + b']' * 127 + b'}',
    b'{"type":"STATE_SNAPSHOT","snapshot":' + b'{"a":' * 130 + b'1' + b'}' * 130 + b'}',
    b'{"type":"CUSTOM","name":"\\ud800","value":1}',
]
for n, shape in enumerate(shapes):
    open(f"corpus/sse_decoder/shape{n:02}", "wb").write(b"\0data: " + shape + b"\n\n")
PY
echo "seeded $(ls corpus/sse_decoder | wc -l) + $(ls corpus/proto_decoder | wc -l) inputs"
