// Runs the reference clients CopilotKit pages use against every demo agent through the
// CopilotKit runtime routes of `agui serve` (BASE_URL/copilotkit): @ag-ui/client 0.0.48
// (what CopilotKit 1.54 bundles), 0.0.59 (CopilotKit 1.74; both send no protocolVersion)
// and 1.0.0. For each client
// and agent:
//   * the client's HttpAgent runs the agent at /copilotkit/agent/{id}/run (and a
//     follow-up run answering a frontend tool, where the agent calls one); it must
//     resolve, see a terminal event, and print no warning;
//   * the raw SSE of the same runs and of /connect (the thread's replay) is checked
//     event by event against that version's own zod schemas (@ag-ui/core EventSchemas),
//     and the replay against that version's verifier.
// Prints one JSON line per (client, agent):
//   {"client","agent","ok","error"?,"warnings","runs","events","schemaErrors","replay"}
// Usage: node copilotkit-clients.mjs BASE_URL
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { from, lastValueFrom, toArray } = require("rxjs");
import { clients, schemaErrors } from "./copilotkit-common.mjs";

const base = process.argv[2].replace(/\/$/, "") + "/copilotkit";
let warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));
console.error = (...a) => warnings.push("error: " + a.map(String).join(" "));
console.debug = () => {};

const frontendToolAnswers = {
  human_in_the_loop: (args) => {
    const v = JSON.parse(args);
    v.steps[1].status = "disabled";
    return JSON.stringify(v);
  },
  tool_based_generative_ui: () => "the user liked it",
};
const states = {
  shared_state: { title: "Soup", ingredients: [{ name: "Water" }], instructions: ["Boil"] },
  predictive_state_updates: { document: "" },
};

/** POSTs `body` to `path` and returns the parsed `data:` events of the SSE answer. */
async function sse(path, body) {
  const res = await fetch(base + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  const text = await res.text();
  if (text.includes("\r")) throw new Error(`${path}: CR in the SSE body`);
  // A block may carry `id:` (and other) lines before its data.
  return text
    .split("\n\n")
    .map((b) => b.split("\n").find((l) => l.startsWith("data: ")))
    .filter((l) => l !== undefined)
    .map((l) => JSON.parse(l.slice(6)));
}

async function one(version, name) {
  const { client, core, declares } = clients[version];
  warnings = [];
  const result = { client: version, agent: name, ok: false, warnings: [], runs: 0, events: 0, schemaErrors: [] };
  const threadId = `${name}-${version}-${process.pid}`;
  try {
    const agent = new client.HttpAgent({
      url: `${base}/agent/${encodeURIComponent(name)}/run`,
      threadId,
      initialState: states[name] ?? {},
    });
    agent.messages = [{ id: `${threadId}-u1`, role: "user", content: "hello" }];
    const runOnce = async (runId) => {
      let terminal = null;
      let count = 0;
      await agent.runAgent(
        { runId, tools: [], context: [], forwardedProps: {} },
        {
          onEvent: ({ event }) => {
            count += 1;
            if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") terminal = event.type;
          },
        },
      );
      if (terminal !== "RUN_FINISHED") throw new Error(`run ${runId} ended with ${terminal ?? "no terminal event"}`);
      result.runs += 1;
      result.events += count;
    };
    await runOnce(`${threadId}-r1`);
    const answer = frontendToolAnswers[name];
    if (answer) {
      const last = [...agent.messages].reverse().find((m) => m.role === "assistant" && m.toolCalls?.length);
      if (!last) throw new Error("no frontend tool call to answer");
      const call = last.toolCalls[last.toolCalls.length - 1];
      agent.messages = [
        ...agent.messages,
        { id: `${threadId}-t1`, role: "tool", toolCallId: call.id, content: answer(call.function.arguments) },
      ];
      await runOnce(`${threadId}-r2`);
    }

    // The raw streams, against this version's own schemas: a run on a thread of its
    // own, then the replay of the client's thread.
    const body = (thread, runId, messages) => ({
      threadId: thread, runId, tools: [], context: [], forwardedProps: {},
      state: states[name] ?? {}, messages,
      ...(declares ? { protocolVersion: declares } : {}),
    });
    const raw = await sse(`/agent/${name}/run`, body(`${threadId}-raw`, `${threadId}-raw-r1`, [{ id: `${threadId}-raw-u`, role: "user", content: "hello" }]));
    if (raw.length === 0) throw new Error("the raw run stream had no events");
    result.schemaErrors.push(...schemaErrors(core, raw, "run"));
    const replay = await sse(`/agent/${name}/connect`, body(threadId, `${threadId}-connect`, []));
    if (replay.length === 0) throw new Error("the replay had no events");
    result.schemaErrors.push(...schemaErrors(core, replay, "replay"));
    let verifyError = null;
    try {
      await lastValueFrom(from(replay).pipe(client.verifyEvents(false), toArray()));
    } catch (e) {
      verifyError = String(e?.message ?? e);
    }
    result.replay = { events: replay.length, runs: replay.filter((e) => e.type === "RUN_STARTED").length, verifyError };
    result.ok = result.schemaErrors.length === 0 && verifyError === null && warnings.length === 0;
  } catch (e) {
    result.error = String(e?.stack ?? e);
  }
  result.warnings = warnings;
  return result;
}

const info = await (await fetch(`${base}/info`)).json();
for (const version of Object.keys(clients)) {
  for (const name of Object.keys(info.agents)) {
    if (name === "default") continue;
    process.stdout.write(JSON.stringify(await one(version, name)) + "\n");
  }
}

// The control: the same subagents run, declared 1.1 so that nothing is downgraded,
// fails the 0.0.48 schemas (so the checks above can fail, and the downgrade is what
// makes them pass).
const undowngraded = await sse(`/agent/subagents/run`, {
  threadId: `control-${process.pid}`, runId: "control", tools: [], context: [], forwardedProps: {},
  state: {}, messages: [{ id: "control-u", role: "user", content: "hello" }], protocolVersion: "1.1",
});
process.stdout.write(JSON.stringify({ control: true, schemaErrors: schemaErrors(clients["0.0.48"].core, undowngraded, "control") }) + "\n");
