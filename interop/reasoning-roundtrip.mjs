// A reasoning tool loop over two runs, driven by one of the TypeScript clients: the
// first run ends with a frontend tool call pending, the client answers it and runs
// again on the same thread with the messages it kept. What the client kept of each
// reasoning message (its encryptedValue, its encryptedValueType) is what went back.
// Prints one JSON line per run:
//   {"run","messages":[...],"reasoning":[{id,content,encryptedValue?,encryptedValueType?}],
//    "encryptedEvents":[the REASONING_ENCRYPTED_VALUE events as the client handed them on],
//    "terminal"}
// Usage: node reasoning-roundtrip.mjs CLIENT URL < plan.json
//   CLIENT: "1.0.0" (@ag-ui/client) or "0.0.59" (the client CopilotKit 1.74 bundles)
//   plan.json: {"threadId", "tools": [...], "messages": [...], "answer": "tool result"}
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);

const packages = { "1.0.0": "@ag-ui/client", "0.0.59": "ag-ui-client-0059" };
const [version, url] = process.argv.slice(2);
const { HttpAgent } = require(packages[version]);

let planText = "";
for await (const chunk of process.stdin) planText += chunk;
const plan = JSON.parse(planText);

const warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));
console.debug = () => {};

const agent = new HttpAgent({ url, threadId: plan.threadId });
agent.messages = plan.messages;

/** The tool calls of the assistant messages that no tool message answers yet. */
function pendingCalls(messages) {
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  return messages
    .filter((m) => m.role === "assistant")
    .flatMap((m) => m.toolCalls ?? [])
    .filter((c) => !answered.has(c.id));
}

for (const runId of ["r1", "r2"]) {
  if (runId === "r2") {
    const pending = pendingCalls(agent.messages);
    if (pending.length === 0) throw new Error("the first run left no tool call to answer");
    agent.messages = [
      ...agent.messages,
      ...pending.map((c, i) => ({ id: `tool-result-${i}`, role: "tool", toolCallId: c.id, content: plan.answer })),
    ];
  }
  const encryptedEvents = [];
  let terminal = null;
  await agent.runAgent(
    { runId: `${plan.threadId}-${runId}`, tools: plan.tools, context: [], forwardedProps: {} },
    {
      onEvent: ({ event }) => {
        if (event.type === "REASONING_ENCRYPTED_VALUE") encryptedEvents.push(event);
        if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") terminal = event;
      },
    },
  );
  const reasoning = agent.messages
    .filter((m) => m.role === "reasoning")
    .map(({ id, content, encryptedValue, encryptedValueType }) => ({ id, content, encryptedValue, encryptedValueType }));
  console.log(JSON.stringify({ run: runId, messages: agent.messages, reasoning, encryptedEvents, terminal, warnings }));
}
