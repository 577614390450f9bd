// A minimal AG-UI server built on the reference TypeScript encoder (@ag-ui/encoder 1.0.0)
// and Node's http module. It plays the scripts in scenarios.json at POST /<scenario>,
// over SSE or protobuf as the request's Accept header asks (the encoder decides).
//   node ref-server.mjs [PORT]     (0 or absent: a free port; prints "listening <port>")
import http from "node:http";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { EventEncoder } = require("@ag-ui/encoder");
const scenarios = JSON.parse(readFileSync(new URL("./scenarios.json", import.meta.url), "utf8"));

export function script(name, input) {
  const s = scenarios[name];
  if (!s || name.startsWith("_")) return null;
  const resumed = Array.isArray(input.resume) && input.resume.length > 0 && s.resumed;
  const resume = JSON.stringify(input.resume ?? []);
  const text = JSON.stringify(resumed ? s.resumed : s.events)
    .replaceAll("$THREAD", input.threadId)
    .replaceAll("$RUN", input.runId)
    .replaceAll("$RESUME", resume.replaceAll("\\", "\\\\").replaceAll('"', '\\"'));
  return JSON.parse(text);
}

const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const name = (req.url || "/").slice(1);
    let input;
    try {
      input = JSON.parse(body);
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      return res.end(JSON.stringify({ error: "invalid JSON body" }));
    }
    const events = script(name, input);
    if (!events) {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end(JSON.stringify({ error: `no scenario ${name}` }));
    }
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { "content-type": encoder.getContentType(), "cache-control": "no-cache" });
    for (const ev of events) res.write(encoder.encodeBinary(ev));
    res.end();
  });
});

server.listen(Number(process.argv[2] || 0), "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
