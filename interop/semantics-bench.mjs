// Times the reference reducer (`defaultApplyEvents` of @ag-ui/client 1.0.0) on a JSON
// Lines event file: the events are parsed first, then applied; prints one JSON line
// with the apply time and the process's peak resident memory.
//
// Usage: node semantics-bench.mjs EVENTS.jsonl

import { readFileSync } from "node:fs";
import { defaultApplyEvents } from "@ag-ui/client";
import { from, lastValueFrom } from "rxjs";

console.warn = () => {};
const path = process.argv[2];
const events = readFileSync(path, "utf8")
  .split("\n")
  .filter((l) => l.length > 0)
  .map((l) => JSON.parse(l));
const agent = { messages: [], state: undefined, pendingInterrupts: [] };
const input = { threadId: "thread", runId: "run", messages: [], tools: [], context: [] };
const t0 = process.hrtime.bigint();
const c0 = process.cpuUsage();
let last;
await lastValueFrom(defaultApplyEvents(input, from(events), agent, []), { defaultValue: {} }).then(
  (m) => (last = m),
);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(c0);
process.stdout.write(
  JSON.stringify({
    impl: "reference",
    events: events.length,
    seconds,
    cpu_seconds: (cpu.user + cpu.system) / 1e6,
    peak_rss_kb: process.resourceUsage().maxRSS,
  }) + "\n",
);
