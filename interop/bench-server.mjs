// The load benchmark's agent on the reference TypeScript encoder (@ag-ui/encoder 1.0.0)
// and Node's http module. POST /bench with forwardedProps {events: N, intervalMs: I}:
// a text message whose N deltas carry their emit time (microseconds since the Unix
// epoch), I ms apart. Waits for 'drain' when the socket is full.
//   node bench-server.mjs [PORT]   (prints "listening <port>")
import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { EventEncoder } = require("@ag-ui/encoder");
const nowUs = () => String(Math.round((performance.timeOrigin + performance.now()) * 1000));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", async () => {
    let input;
    try {
      input = JSON.parse(body);
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      return res.end("{}");
    }
    const n = input.forwardedProps?.events ?? 10;
    const interval = input.forwardedProps?.intervalMs ?? 0;
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { "content-type": encoder.getContentType(), "cache-control": "no-cache" });
    let closed = false;
    res.on("close", () => (closed = true));
    const write = async (ev) => {
      if (!res.write(encoder.encodeBinary(ev))) await new Promise((r) => res.once("drain", r));
    };
    const id = `${input.runId}-m`;
    await write({ type: "RUN_STARTED", threadId: input.threadId, runId: input.runId });
    await write({ type: "TEXT_MESSAGE_START", messageId: id, role: "assistant" });
    for (let i = 0; i < n && !closed; i++) {
      if (i > 0 && interval > 0) await sleep(interval);
      await write({ type: "TEXT_MESSAGE_CONTENT", messageId: id, delta: nowUs() });
    }
    if (closed) return;
    await write({ type: "TEXT_MESSAGE_END", messageId: id });
    await write({ type: "RUN_FINISHED", threadId: input.threadId, runId: input.runId });
    res.end();
  });
});
server.listen(Number(process.argv[2] || 0), "127.0.0.1", 4096, () => {
  console.log(`listening ${server.address().port}`);
});
