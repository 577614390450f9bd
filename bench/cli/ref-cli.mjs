// The reference packages doing what `agui decode` and `agui verify` do, as whole
// processes: read a file, decode it through the reference client's own inbound path
// (`transformHttpEventStream`: SSE or protobuf framing, then its event schemas), and
// write each event as a JSON line (decode) or check it with `verifyEvents` (verify).
//
// Usage: node ref-cli.mjs decode|verify sse|proto FILE > OUT

import { readFileSync, writeSync } from "node:fs";
import { transformHttpEventStream, verifyEvents } from "@ag-ui/client";
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
      if (mode === "decode") {
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
flush();
if (mode === "verify") process.stderr.write(`reference: ${count} events verified\n`);
