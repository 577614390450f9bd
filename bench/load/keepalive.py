#!/usr/bin/env python3
"""Events per second to keep-alive clients: `agui serve`'s `agentic_chat` (--delay-ms 0)
against the same agent on the reference Node encoder (interop/bench-chat-server.mjs),
same run, same bytes.

For each input (a short, the default and a long user message, so replies of 13, 18 and
73 events), the two servers' SSE bodies are first checked to be byte-identical; then
wrk (one thread, 64 keep-alive connections, zero delay) posts the input for the given
time to each server in turn. Reported: runs/s and events/s (wall), the server's own CPU
time (utime + stime from /proc, so the load client's share of the machine is not
counted), split into user and kernel time, and events per server CPU-second, and the
ratios ours / Node. Fitting each
server's CPU time per run as `a + b * events` over the short and long inputs separates
the per-run cost (request parse, routing, run start and end) from the per-event cost.

The floor: `srv_floor` (src/bin/srv_floor.rs), a bare hyper server answering each POST
with the very bytes `agui serve` sent for that input, as one chunk (`whole`) or one
chunk per SSE frame (`frames`). `agui serve`'s CPU per run and per event are reported
against it (aim: at most 1.5×), user and kernel time apart. `--before BIN` adds another
`agui` build (AGUI_LOG=warn), to compare two builds in one run.

    bench/load/keepalive.py [--seconds 10] [--connections 64] [--agui target/release/agui] [--before BIN]

Needs wrk, Node.js with interop/'s packages (npm ci in interop/), a release `agui`
(built if absent) and srv_floor (built here with cargo if absent). Writes bench/load/keepalive-last-run.md.
"""
import argparse, json, os, re, socket, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_times(pid):
    """(user, system) CPU seconds of the process so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def wait_port(port, proc, tries=200):
    for _ in range(tries):
        if proc.poll() is not None:
            sys.exit(f"server on {port} exited: {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"server on {port} did not start")


def body_of(port, payload):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/agentic_chat",
        data=payload,
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def wrk(port, body_file, seconds, connections):
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", os.path.join(HERE, "keepalive.lua"),
         f"http://127.0.0.1:{port}/agentic_chat"],
        env={**os.environ, "BODY_FILE": body_file}, capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    requests, secs = int(m.group(1)), float(m.group(2)) / (1000 if m.group(3) == "ms" else 1)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    if bad or errors:
        sys.exit(f"wrk saw failures:\n{out}")
    return requests, secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--agui", default=os.path.join(ROOT, "target", "release", "agui"))
    ap.add_argument("--before", help="another agui build to measure beside --agui")
    a = ap.parse_args()
    floor_bin = os.path.join(HERE, "target", "release", "srv_floor")
    if not os.path.exists(floor_bin):
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "srv_floor"], cwd=HERE, check=True)
    if not os.path.exists(a.agui):
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "agui"], cwd=ROOT, check=True)
    ours_port, quiet_port, node_port = free_port(), free_port(), free_port()
    serve = [a.agui, "serve", "--delay-ms", "0", "--store", "off", "--addr"]
    # `agui serve` as it starts by default (a log line as each run starts and ends, to
    # stderr), and with AGUI_LOG=warn (no line per run; Node's server logs nothing).
    ours = subprocess.Popen(serve + [f"127.0.0.1:{ours_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    quiet = subprocess.Popen(serve + [f"127.0.0.1:{quiet_port}"], env={**os.environ, "AGUI_LOG": "warn"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    node = subprocess.Popen(["node", "bench-chat-server.mjs", str(node_port)], cwd=os.path.join(ROOT, "interop"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers = [("agui serve", ours_port, ours), ("agui serve, AGUI_LOG=warn", quiet_port, quiet),
               ("Node + @ag-ui/encoder", node_port, node)]
    if a.before:
        before_port = free_port()
        before = subprocess.Popen([a.before, "serve", "--delay-ms", "0", "--store", "off", "--addr",
                                   f"127.0.0.1:{before_port}"], env={**os.environ, "AGUI_LOG": "warn"},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.insert(2, ("before, AGUI_LOG=warn", before_port, before))
    rows, fits = [], {}
    try:
        for _, port, proc in servers:
            wait_port(port, proc)
        inputs = [
            ("short", "Hi"),
            ("default", "Hello there, how are you today?"),
            ("long", " ".join(f"word{i}" for i in range(60))),
        ]
        for label, text in inputs:
            payload = json.dumps({
                "threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
                "messages": [{"id": "u1", "role": "user", "content": text}],
            }).encode()
            mine, theirs = body_of(ours_port, payload), body_of(node_port, payload)
            if mine != theirs or body_of(quiet_port, payload) != theirs:
                sys.exit(f"{label}: the two servers' bodies differ:\n{mine[:400]!r}\n{theirs[:400]!r}")
            events = mine.count(b"\ndata: ") + mine.startswith(b"data: ")
            with tempfile.NamedTemporaryFile(delete=False) as f:
                f.write(payload)
            with tempfile.NamedTemporaryFile(delete=False) as reply:
                reply.write(mine)
            floors = []
            for mode in ("whole", "frames"):
                port = free_port()
                proc = subprocess.Popen([floor_bin, str(port), reply.name, mode], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                wait_port(port, proc)
                if body_of(port, payload) != mine:
                    sys.exit(f"{label}: the floor's body differs from agui serve's")
                floors.append((f"floor ({mode})", port, proc))
            result = {}
            for name, port, proc in servers + floors:
                (u0, s0) = cpu_times(proc.pid)
                n, secs = wrk(port, f.name, a.seconds, a.connections)
                (u1, s1) = cpu_times(proc.pid)
                cpu = (u1 - u0) + (s1 - s0)
                result[name] = (n, secs, cpu, u1 - u0, s1 - s0)
                rows.append((label, events, name, n / secs, n * events / secs, cpu, n * events / cpu if cpu else 0,
                             cpu / n * 1e6, (u1 - u0) / n * 1e6, (s1 - s0) / n * 1e6))
                print(f"{label:8} {events:4} events  {name:26} {n / secs:9.0f} runs/s {n * events / secs:10.0f} events/s"
                      f"  server CPU {cpu:5.2f} s  {n * events / cpu:10.0f} events/CPU-s  {cpu / n * 1e6:7.1f} µs CPU/run",
                      flush=True)
            os.unlink(f.name)
            os.unlink(reply.name)
            for _, _, p in floors:
                p.terminate()
                p.wait()
            fits[label] = (events, {k: v[2] / v[0] for k, v in result.items()},
                           {k: (v[3] / v[0], v[4] / v[0]) for k, v in result.items()})
    finally:
        for _, _, p in servers:
            p.terminate()
            p.wait()
    lines = [
        "# Keep-alive load: last run", "",
        f"`bench/load/keepalive.py --seconds {a.seconds} --connections {a.connections}`: wrk, one thread, "
        f"{a.connections} keep-alive connections, zero delay, on the same machine as the server. "
        "Bodies checked byte-identical before measuring.", "",
        "| input | events/run | server | runs/s | events/s | server CPU s | events per server CPU-s | server CPU µs per run | of which user | of which kernel |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:,.0f} | {r[4]:,.0f} | {r[5]:.2f} | {r[6]:,.0f} | {r[7]:.1f} "
                     f"| {r[8]:.1f} | {r[9]:.1f} |")
    lines.append("")
    for label in ("short", "default", "long"):
        by = {r[2]: r for r in rows if r[0] == label}
        node_row = by.get("Node + @ag-ui/encoder")
        for name in ("agui serve", "agui serve, AGUI_LOG=warn"):
            if node_row and name in by:
                lines.append(f"- {label}, {name} ÷ Node: {by[name][4] / node_row[4]:.1f}× events/s (wall), "
                             f"{by[name][6] / node_row[6]:.1f}× events per server CPU-second")
    (e1, s, su), (e2, l, lu) = fits["short"], fits["long"]
    lines.append("")
    lines.append("Server CPU per run fitted as `a + b × events` over the short and long inputs "
                 "(user and kernel time fitted apart):")
    lines.append("")
    fitted = {}
    for name in s:
        b = (l[name] - s[name]) / (e2 - e1)
        a0 = s[name] - b * e1
        bu = (lu[name][0] - su[name][0]) / (e2 - e1)
        bk = (lu[name][1] - su[name][1]) / (e2 - e1)
        fitted[name] = (a0, b, su[name][0] - bu * e1, bu, su[name][1] - bk * e1, bk)
        lines.append(f"- {name}: a = {a0 * 1e6:.1f} µs per run (user {fitted[name][2] * 1e6:.1f}, kernel "
                     f"{fitted[name][4] * 1e6:.1f}), b = {b * 1e6:.2f} µs per event (user {bu * 1e6:.2f}, "
                     f"kernel {bk * 1e6:.2f})")
    lines.append("")
    lines.append("Against the floor (a bare hyper server sending the same bytes), aim 1.5× at most:")
    lines.append("")
    lines.append("| agui build | short run CPU ÷ floor (whole) | of which user | of which kernel "
                 "| per event `b` ÷ floor (frames) per chunk `b` |")
    lines.append("|---|---:|---:|---:|---:|")
    short_rows = {r[2]: r for r in rows if r[0] == "short"}
    fw, ff = short_rows.get("floor (whole)"), fitted.get("floor (frames)")
    for name in ("agui serve", "agui serve, AGUI_LOG=warn", "before, AGUI_LOG=warn"):
        me = short_rows.get(name)
        if me and fw and ff and name in fitted:
            per_event = fitted[name][1] / ff[1] if ff[1] > 0 else float("nan")
            lines.append(f"| {name} | {me[7] / fw[7]:.2f}× ({me[7]:.1f} ÷ {fw[7]:.1f} µs) "
                         f"| {me[8]:.1f} ÷ {fw[8]:.1f} µs | {me[9]:.1f} ÷ {fw[9]:.1f} µs "
                         f"| {per_event:.2f}× ({fitted[name][1] * 1e6:.2f} ÷ {ff[1] * 1e6:.2f} µs) |")
    lines.append("")
    lines.append("The kernel's share bounds the ratio per CPU-second: a server whose user time were zero would "
                 "still spend its kernel time per run (one read and one write of the socket per run).")
    for label in ("short", "default", "long"):
        by = {r[2]: r for r in rows if r[0] == label}
        node_row, quiet = by.get("Node + @ag-ui/encoder"), by.get("agui serve, AGUI_LOG=warn")
        if node_row and quiet and quiet[9]:
            lines.append(f"- {label}: Node's whole CPU per run ÷ agui serve's kernel CPU per run = "
                         f"{node_row[7] / quiet[9]:.1f}× (the most any user-space work could reach)")
    text = "\n".join(lines) + "\n"
    open(os.path.join(HERE, "keepalive-last-run.md"), "w").write(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
