"""A minimal AG-UI server built on the reference Python SDK (ag-ui-protocol 1.0.0) and
uvicorn. It plays the scripts in scenarios.json at POST /<scenario> over SSE (the Python
SDK has no protobuf encoding).

    python ref_server.py [PORT]     (0 or absent: a free port; prints "listening <port>")
"""
import json
import pathlib
import socket
import sys

import uvicorn
from pydantic import TypeAdapter

from ag_ui.core import Event
from ag_ui.encoder import EventEncoder

SCENARIOS = json.loads((pathlib.Path(__file__).parent / "scenarios.json").read_text())
EVENT = TypeAdapter(Event)


def script(name, body):
    s = SCENARIOS.get(name)
    if s is None or name.startswith("_"):
        return None
    resume = body.get("resume") or []
    events = s["resumed"] if resume and "resumed" in s else s["events"]
    text = (
        json.dumps(events)
        .replace("$THREAD", body["threadId"])
        .replace("$RUN", body["runId"])
        .replace("$RESUME", json.dumps(json.dumps(resume, separators=(",", ":")))[1:-1])
    )
    return [EVENT.validate_python(e) for e in json.loads(text)]


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    name = scope["path"].lstrip("/")
    try:
        events = script(name, json.loads(body))
    except (ValueError, KeyError) as e:
        await respond(send, 400, {"error": str(e)})
        return
    if events is None:
        await respond(send, 404, {"error": f"no scenario {name}"})
        return
    headers = dict(scope["headers"])
    encoder = EventEncoder(accept=headers.get(b"accept", b"").decode())
    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", encoder.get_content_type().encode()), (b"cache-control", b"no-cache")],
    })
    for ev in events:
        await send({"type": "http.response.body", "body": encoder.encode(ev).encode(), "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def respond(send, status, payload):
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


if __name__ == "__main__":
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    print(f"listening {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
