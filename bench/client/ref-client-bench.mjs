// The reference client (@ag-ui/client 1.0.0 HttpAgent.runAgent) on one long run, for
// bench/client: prints one JSON line {events, seconds, peak_rss_kb, maxrss_kb,
// conversation_bytes}. peak_rss_kb is VmHWM from /proc/self/status, as the Rust clients
// report it; maxrss_kb (process.resourceUsage().maxRSS) is printed for reference only:
// Linux carries the peak of the process image before exec into it, so for a child of
// the driver it reports the driver's resident size.
// Usage: node ref-client-bench.mjs URL EXPECTED_EVENTS [--proto]
// The packages come from interop/node_modules (scripts/setup-interop.sh).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(new URL("../../interop/package.json", import.meta.url));
const { HttpAgent } = require("@ag-ui/client");

class ProtoAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    init.headers = { ...init.headers, Accept: "application/vnd.ag-ui.event+proto" };
    return init;
  }
}

const [url, expected, ...flags] = process.argv.slice(2);
const Agent = flags.includes("--proto") ? ProtoAgent : HttpAgent;
const agent = new Agent({ url, threadId: "thread-bench" });
let events = 0;
const start = performance.now();
await agent.runAgent({ runId: "run-bench" }, { onEvent: () => { events += 1; } });
const seconds = (performance.now() - start) / 1000;
// Before serializing the conversation to measure it.
const peakRssKb = Number(/VmHWM:\s*(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
const maxRssKb = process.resourceUsage().maxRSS;
if (events !== Number(expected)) {
  console.error(`expected ${expected} events, got ${events}`);
  process.exit(1);
}
console.log(JSON.stringify({
  events,
  seconds,
  peak_rss_kb: peakRssKb,
  maxrss_kb: maxRssKb,
  conversation_bytes: JSON.stringify(agent.messages).length,
}));
