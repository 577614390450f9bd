// Runs the reference client (@ag-ui/client 1.0.0 HttpAgent) against an AG-UI endpoint
// and prints what it holds afterwards, as one JSON line per run:
//   {"messages":[...],"state":...,"outcome":...,"result":...,"pendingInterrupts":[...]}
// Usage: node ref-client.mjs URL [--proto] < plan.json
// plan.json: {"threadId", "messages": [...], "state": ..., "runs": [{"runId", "resume"?, "forwardedProps"?}]}
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { HttpAgent } = require("@ag-ui/client");

class ProtoAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    init.headers = { ...init.headers, Accept: "application/vnd.ag-ui.event+proto" };
    return init;
  }
}

const [url, ...flags] = process.argv.slice(2);
let planText = "";
for await (const chunk of process.stdin) planText += chunk;
const plan = JSON.parse(planText);
const Agent = flags.includes("--proto") ? ProtoAgent : HttpAgent;
const agent = new Agent({ url, threadId: plan.threadId, initialMessages: plan.messages ?? [], initialState: plan.state ?? {} });
for (const run of plan.runs) {
  let outcome = null;
  const result = await agent.runAgent(
    { runId: run.runId, resume: run.resume, forwardedProps: run.forwardedProps },
    { onRunFinishedEvent: ({ outcome: o }) => { outcome = o ?? null; } },
  );
  console.log(JSON.stringify({
    messages: agent.messages,
    state: agent.state,
    outcome,
    result: result.result ?? null,
    pendingInterrupts: agent.pendingInterrupts ?? [],
  }));
}
