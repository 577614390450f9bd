"""The load benchmark's agent on the reference Python SDK (ag-ui-protocol 1.0.0) and
uvicorn. POST /bench with forwardedProps {events: N, intervalMs: I}: a text message whose
N deltas carry their emit time (microseconds since the Unix epoch), I ms apart.

    python bench_server.py [PORT]     (prints "listening <port>")
"""
import asyncio
import json
import socket
import sys
import time

import uvicorn

from ag_ui.core import (
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from ag_ui.encoder import EventEncoder


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    data = json.loads(body)
    props = data.get("forwardedProps") or {}
    n = props.get("events", 10)
    interval = props.get("intervalMs", 0) / 1000.0
    encoder = EventEncoder(accept=dict(scope["headers"]).get(b"accept", b"").decode())
    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", encoder.get_content_type().encode()), (b"cache-control", b"no-cache")],
    })

    async def emit(ev):
        await send({"type": "http.response.body", "body": encoder.encode(ev).encode(), "more_body": True})

    mid = data["runId"] + "-m"
    await emit(RunStartedEvent(thread_id=data["threadId"], run_id=data["runId"]))
    await emit(TextMessageStartEvent(message_id=mid, role="assistant"))
    for i in range(n):
        if i > 0 and interval > 0:
            await asyncio.sleep(interval)
        await emit(TextMessageContentEvent(message_id=mid, delta=str(time.time_ns() // 1000)))
    await emit(TextMessageEndEvent(message_id=mid))
    await emit(RunFinishedEvent(thread_id=data["threadId"], run_id=data["runId"]))
    await send({"type": "http.response.body", "body": b""})


if __name__ == "__main__":
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    print(f"listening {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", backlog=4096)).run(sockets=[sock])
