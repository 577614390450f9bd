// The reference packages doing what `agui decode`, `agui verify` and `agui apply` do, as
// whole processes: read a file, decode it through the reference client's own inbound
// path (`transformHttpEventStream`: SSE or protobuf framing, then its event schemas),
// and write each event as a JSON line (decode), check it with `verifyEvents` (verify),
// or apply it with `defaultApplyEvents` and write the resulting messages and state
// (apply).
//
// Usage: node ref-cli.mjs decode|verify|apply sse|proto FILE > OUT

import { readFileSync, writeSync } from "node:fs";
import { defaultApplyEvents, transformHttpEventStream, verifyEvents } from "@ag-ui/client";
import { asapScheduler, scheduled } from "rxjs";

console.warn = () => {};
const [mode, format, path] = process.argv.slice(2);
const bytes = readFileSync(path);
const type = format === "proto" ? "application/vnd.ag-ui.event+proto" : "text/event-stream";
const chunks = [{ type: "headers", status: 200, headers: new Headers({ "content-type": type }) }];
for (let i = 0; i < bytes.length; i += 65536) {
  chunks.push({ type: "data", data: bytes.subarray(i, i + 65536) });
}
// Delivered asynchronously, as a fetch body is (the transform subscribes to its source
// before it hands out its own stream).
let events$ = transformHttpEventStream(scheduled(chunks, asapScheduler));
if (mode === "verify") events$ = events$.pipe(verifyEvents(false));
// `agui apply` starts from an empty conversation with state {}.
const agent = { messages: [], state: {}, pendingInterrupts: [] };
let conversation = { messages: [], state: {} };
if (mode === "apply") {
  const input = { threadId: "thread", runId: "run", messages: [], tools: [], context: [] };
  events$ = defaultApplyEvents(input, events$, agent, []);
}
let out = [];
let size = 0;
let count = 0;
const flush = () => {
  if (out.length) writeSync(1, out.join(""));
  out = [];
  size = 0;
};
await new Promise((resolve) => {
  events$.subscribe({
    next: (e) => {
      count++;
      if (mode === "apply") {
        if (e.messages) conversation.messages = e.messages;
        if (e.state !== undefined) conversation.state = e.state;
      } else if (mode === "decode") {
        const line = JSON.stringify(e) + "\n";
        out.push(line);
        size += line.length;
        if (size > 1 << 20) flush();
      }
    },
    error: (e) => {
      process.stderr.write(`reference: ${e.message}\n`);
      process.exit(1);
    },
    complete: resolve,
  });
});
if (mode === "apply") out.push(JSON.stringify(conversation) + "\n");
flush();
if (mode === "verify") process.stderr.write(`reference: ${count} events verified\n`);
