// CopilotKit's current Node runtime (@copilotkit/runtime 1.75.0, its v2 CopilotRuntime)
// with its in-memory runner, mounted with the runtime's Express endpoint at /copilotkit,
// for the thread-list benchmark. `node --expose-gc list-server.mjs [PORT]` (default 0:
// a free port); prints `listening <port>`.
//
// Two agents, `bench` and `other`, answer every run at once with the same short reply
// as ../src/bin/ck_server.rs gives in `--short` mode: RUN_STARTED, one assistant text
// message of 4 pieces, RUN_FINISHED. The in-memory runner's store is raised to hold
// every thread the benchmark makes (it keeps 1,000 by default); its threads are one
// global map, so the runtime has no notion of whose a thread is: the benchmark's
// "other users' threads" are here the `other` agent's, the only filter its list has.
//
// POST /debug/gc collects garbage (twice) and answers process.memoryUsage().
process.env.COPILOTKIT_TELEMETRY_DISABLED ??= "true";
process.env.DO_NOT_TRACK ??= "1";

import express from "express";
import { Observable } from "rxjs";
import { AbstractAgent, EventType } from "@ag-ui/client";
import {
  CopilotRuntime,
  InMemoryAgentRunner,
  createCopilotEndpointExpress,
} from "@copilotkit/runtime/v2";

const PIECES = ["the ledger ", "shows three ", "open items ", "this week"];

class ShortAgent extends AbstractAgent {
  run(input) {
    return new Observable((sub) => {
      const { threadId, runId } = input;
      const msg = `${runId}-m`;
      sub.next({ type: EventType.RUN_STARTED, threadId, runId });
      sub.next({ type: EventType.TEXT_MESSAGE_START, messageId: msg, role: "assistant" });
      for (const delta of PIECES) {
        sub.next({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: msg, delta });
      }
      sub.next({ type: EventType.TEXT_MESSAGE_END, messageId: msg });
      sub.next({ type: EventType.RUN_FINISHED, threadId, runId });
      sub.complete();
    });
  }
}

const maxThreads = Number(process.env.BENCH_MAX_THREADS ?? 200000);
const runner = new InMemoryAgentRunner({ maxThreads, maxBytes: 8 * 1024 ** 3 });
const runtime = new CopilotRuntime({
  agents: {
    bench: new ShortAgent({ agentId: "bench" }),
    other: new ShortAgent({ agentId: "other" }),
  },
  runner,
});

const app = express();
app.post("/debug/gc", (_req, res) => {
  if (typeof globalThis.gc === "function") {
    globalThis.gc();
    globalThis.gc();
  }
  res.json(process.memoryUsage());
});
app.use(createCopilotEndpointExpress({ runtime, basePath: "/copilotkit" }));

const port = Number(process.argv[2] ?? 0);
const server = app.listen(port, "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
