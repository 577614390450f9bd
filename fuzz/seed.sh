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
PY
echo "seeded $(ls corpus/sse_decoder | wc -l) + $(ls corpus/proto_decoder | wc -l) inputs"
