// `agui serve`'s `agentic_chat` demo agent (with --delay-ms 0) on the reference
// TypeScript encoder (@ag-ui/encoder 1.0.0) and Node's http module, for the keep-alive
// load benchmark (bench/load/keepalive.py): for the same input it sends byte-identical
// events (the benchmark checks this before measuring). POST /agentic_chat with a
// RunAgentInput: RUN_STARTED, the reply as a text message of one delta per word
// (`You said: "<last user message>". This is a deterministic demo reply.`), RUN_FINISHED.
// With DELAY_MS, the deltas are that far apart (as `agui serve --delay-ms`), which holds
// streams open for the memory-per-stream measurement (bench/load/stream_memory.sh).
//   node bench-chat-server.mjs [PORT] [DELAY_MS]   (prints "listening <port>")
import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { EventEncoder } = require("@ag-ui/encoder");

function reply(input) {
  const last = [...(input.messages ?? [])].reverse().find((m) => m.role === "user");
  const text = typeof last?.content === "string" ? last.content.trim() : "";
  return text
    ? `You said: "${text}". This is a deterministic demo reply.`
    : "Hello! I am a deterministic demo agent. Say something.";
}

// Words with their trailing space, as the Rust demo's `split_inclusive(' ')`.
const delay = Number(process.argv[3] || 0);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const words = (s) => s.match(/[^ ]* ?/g).filter((w) => w.length > 0);

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/agentic_chat") {
    res.writeHead(404);
    return res.end();
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    let input;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      return res.end("{}");
    }
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { "content-type": encoder.getContentType(), "cache-control": "no-cache" });
    const write = async (ev) => {
      if (!res.write(encoder.encodeBinary(ev))) await new Promise((r) => res.once("drain", r));
    };
    const { threadId, runId } = input;
    const id = `${runId}-reply`;
    await write({ type: "RUN_STARTED", threadId, runId, protocolVersion: "1.1" });
    await write({ type: "TEXT_MESSAGE_START", messageId: id, role: "assistant" });
    let first = true;
    for (const delta of words(reply(input))) {
      if (!first && delay > 0) await sleep(delay);
      first = false;
      await write({ type: "TEXT_MESSAGE_CONTENT", messageId: id, delta });
    }
    await write({ type: "TEXT_MESSAGE_END", messageId: id });
    await write({ type: "RUN_FINISHED", threadId, runId });
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] || 0), "127.0.0.1", 4096, () => {
  console.log(`listening ${server.address().port}`);
});
