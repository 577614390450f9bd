#!/usr/bin/env python3
"""User-space instructions per short run, `agui serve` against the floor.

Each server runs under `valgrind --tool=callgrind` and is sent short `agentic_chat`
runs one after another on one keep-alive connection; its instructions for 200 runs are
subtracted from those for 1,200, so start-up and shutdown cancel out and what is left,
divided by 1,000, is one run's (request, routing, run, response; no kernel time, no
contention). The floor is `srv_floor` answering with the very bytes `agui serve` sent.
Servers: the floor, `agui serve` with its default log lines (two per run), and with
AGUI_LOG=warn; `--before BIN` adds another build (both log settings).

    bench/load/instructions.py [--agui target/release/agui] [--before BIN]

The machine's load does not move the count; what depends on timing does (idle
wake-ups, timers, the trim thread): counts of one build spread over about 1 % for
`agui serve` and 4 % for the floor, so a difference between two builds needs to be
larger than that. CPU time also depends on the kernel's share and on cache misses and
lock contention under load: keepalive.py measures that.
"""
import argparse, http.client, json, os, re, subprocess, sys, tempfile

from keepalive import free_port, wait_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BODY = json.dumps({
    "threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
    "messages": [{"id": "u1", "role": "user", "content": "Hi"}],
}).encode()
HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


def post_runs(port, runs):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    last = b""
    for _ in range(runs):
        conn.request("POST", "/agentic_chat", BODY, HEADERS)
        r = conn.getresponse()
        last = r.read()
        if r.status != 200 or b"RUN_FINISHED" not in last:
            sys.exit(f"port {port}: a run failed: {r.status} {last[:300]!r}")
    conn.close()
    return last


def instructions(cmd, runs, env=None):
    """The server's instructions from start to exit, serving `runs` runs."""
    port = free_port()
    with tempfile.NamedTemporaryFile(suffix=".callgrind", delete=False) as f:
        out = f.name
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + [a.replace("PORT", str(port)) for a in cmd],
        env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc, tries=1200)  # under callgrind, start-up takes seconds
        post_runs(port, runs)
    finally:
        proc.send_signal(2)
        proc.wait(timeout=120)
    text = open(out).read()
    os.unlink(out)
    m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    return int(m.group(1))


def per_run(cmd, env=None):
    return (instructions(cmd, 1200, env) - instructions(cmd, 200, env)) / 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agui", default=os.path.join(ROOT, "target", "release", "agui"))
    ap.add_argument("--before", help="another agui build to count beside --agui")
    a = ap.parse_args()
    floor_bin = os.path.join(HERE, "target", "release", "srv_floor")
    if not os.path.exists(floor_bin):
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "srv_floor"], cwd=HERE, check=True)
    if not os.path.exists(a.agui):
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "agui"], cwd=ROOT, check=True)

    # The floor answers with what `agui serve` sends for this input.
    port = free_port()
    proc = subprocess.Popen([a.agui, "serve", "--delay-ms", "0", "--store", "off", "--addr", f"127.0.0.1:{port}"],
                            env={**os.environ, "AGUI_LOG": "warn"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        reply = post_runs(port, 1)
    finally:
        proc.kill()
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(reply)

    rows = [("floor (whole)", per_run([floor_bin, "PORT", f.name, "whole"]))]
    builds = [("agui serve", a.agui)] + ([("before", a.before)] if a.before else [])
    for name, binary in builds:
        serve = [binary, "serve", "--delay-ms", "0", "--store", "off", "--addr", "127.0.0.1:PORT"]
        rows.append((f"{name}, default logging", per_run(serve)))
        rows.append((f"{name}, AGUI_LOG=warn", per_run(serve, {"AGUI_LOG": "warn"})))
    os.unlink(f.name)

    floor = rows[0][1]
    print("| server | instructions per short run | ÷ floor |")
    print("|---|---:|---:|")
    for name, n in rows:
        print(f"| {name} | {n:,.0f} | {n / floor:.2f}× |")


if __name__ == "__main__":
    main()
