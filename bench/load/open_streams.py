"""Memory per open stream through `agui serve`'s demo agents: opens N runs of
`agentic_chat` at once (a server started with a long --delay-ms keeps each one open after
its first events), and reports the growth of the server's resident memory per stream.

    agui serve --addr 127.0.0.1:8000 --delay-ms 60000 &
    python3 bench/load/open_streams.py 2000 8000 $(pgrep -f 'agui serve')

Raise the open-file limit first (ulimit -n 20000) for thousands of streams. `agui serve`'s
default memory budget (1 GiB, 64 KiB per run at least) admits 16,384 runs at once."""
import asyncio, sys, json, os, re
N = int(sys.argv[1]); PORT = int(sys.argv[2]); PID = int(sys.argv[3])
def rss():
    s = open(f"/proc/{PID}/status").read()
    return int(re.search(r"VmRSS:\s+(\d+)", s).group(1))
async def one(i, conns, ready):
    r, w = await asyncio.open_connection("127.0.0.1", PORT)
    body = json.dumps({"threadId": f"t{i}", "runId": f"r{i}", "messages": [{"id": "u", "role": "user", "content": "hello there my agent friend"}]}).encode()
    w.write(b"POST /agentic_chat HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    await w.drain()
    got = b""
    while b"TEXT_MESSAGE_START" not in got:
        more = await r.read(65536)
        if not more:
            # Refused (a server at its limit answers 503 and closes): say so, not hang.
            sys.exit(f"stream {i} closed before TEXT_MESSAGE_START: {got[:200]!r}")
        got += more
    conns.append((r, w)); ready.append(i)
async def main():
    await asyncio.sleep(0.5)
    # warm: a few runs first
    conns, ready = [], []
    await asyncio.gather(*(one(i, conns, ready) for i in range(50)))
    for r, w in conns: w.close()
    await asyncio.sleep(1.0)
    base = rss()
    conns, ready = [], []
    sem = asyncio.Semaphore(200)
    async def lim(i):
        async with sem: await one(i, conns, ready)
    await asyncio.gather(*(lim(1000 + i) for i in range(N)))
    await asyncio.sleep(1.0)
    after = rss()
    print(f"{N} open streams: server RSS {base} -> {after} KiB, {(after - base) / N:.1f} KiB per stream")
    for r, w in conns: w.close()
asyncio.run(main())
