"""A hostile MCP server over stdio, for the model agent's tests: `hostile.py MODE [LABEL]`.

Modes: `hang` (a call is never answered), `die` (the process exits mid-call), `huge`
(a call's answer is one 100 MB line), `big` (a 5,000-byte text result), `many` (10,000
tools), `clash` (tools `add` and `unique`, whose results name LABEL), `changing` (a
call adds the tool `added` and says the list changed), `garbage` (a call is answered
with a line that is not JSON, then a result of the wrong shape), `fat` (the tool `work`,
and `fat` whose description is 100 KiB).
"""
import json
import sys

mode = sys.argv[1]
label = sys.argv[2] if len(sys.argv) > 2 else mode
changed = False


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def tool(name):
    return {"name": name, "description": f"The tool {name}.",
            "inputSchema": {"type": "object", "properties": {}}}


def tools():
    if mode == "many":
        return [tool(f"tool_{i}") for i in range(10_000)]
    if mode == "clash":
        return [tool("add"), tool("unique")]
    if changed:
        return [tool("work"), tool("added")]
    if mode == "fat":
        fat = tool("fat")
        fat["description"] = "f" * 100_000
        return [tool("work"), fat]
    return [tool("work")]


def call(req):
    global changed
    name = req["params"]["name"]
    if mode == "changing" and not changed:
        changed = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    if mode == "hang":
        return None
    if mode == "die":
        sys.exit(1)
    if mode == "garbage":
        sys.stdout.write("\x1b[2J this is not JSON\n")
        send({"jsonrpc": "2.0", "id": req["id"], "result": {"content": "not a list", "isError": "no"}})
        return None
    if mode == "huge":
        head = json.dumps({"jsonrpc": "2.0", "id": req["id"],
                           "result": {"content": [{"type": "text", "text": "@"}]}})
        before, after = head.split("@")
        try:
            sys.stdout.write(before)
            chunk = "x" * (1 << 20)
            for _ in range(100):
                sys.stdout.write(chunk)
            sys.stdout.write(after + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            sys.exit(0)
        return None
    if mode == "big":
        text = "y" * 5000
    elif mode == "many":
        text = name.replace("_", " ") + " done"
    elif mode == "clash":
        text = f"{name} from {label}"
    else:
        text = "done"
    return {"content": [{"type": "text", "text": text}]}


for line in sys.stdin:
    try:
        req = json.loads(line)
    except ValueError:
        continue
    method = req.get("method")
    if "id" not in req or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": req["id"], "result": {
            "protocolVersion": req["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": f"hostile-{mode}", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": req["id"], "result": {"tools": tools()}})
    elif method == "tools/call":
        result = call(req)
        if result is not None:
            send({"jsonrpc": "2.0", "id": req["id"], "result": result})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": req["id"], "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": req["id"],
              "error": {"code": -32601, "message": f"method not found: {method}"}})
