// A run stopped from the page, as each client CopilotKit pages use sees it, through the
// CopilotKit runtime routes of `agui serve` (BASE_URL/copilotkit, whose demo agents must
// be slow enough to be stopped mid-reply): @ag-ui/client 0.0.48 (CopilotKit 1.54),
// 0.0.59 (CopilotKit 1.74; both send no protocolVersion) and 1.0.0. For each client:
//   * the client's HttpAgent runs `agentic_chat`; at its first text delta the thread is
//     stopped (POST /agent/agentic_chat/stop/{threadId}); the run must resolve with a
//     RUN_FINISHED (a 0.0.59 client that meets an event its schemas refuse ends its
//     stream silently, with no terminal event) and print no warning;
//   * the raw SSE of a run stopped the same way, and of /connect after it (the replay a
//     reloaded page gets), is checked event by event against that version's own zod
//     schemas and, whole, against that version's verifier.
// Prints one JSON line per client:
//   {"client","ok","error"?,"warnings","terminal","finished","run","replay","schemaErrors","verifyErrors"}
// then the control: the same raw stopped run declared 1.1 (nothing downgraded), with
// the 0.0.59 schema errors it gets (it must get some: the downgrade is what passes).
// Usage: node copilotkit-stop.mjs BASE_URL
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { from, lastValueFrom, toArray } = require("rxjs");
import { clients, schemaErrors } from "./copilotkit-common.mjs";

const base = process.argv[2].replace(/\/$/, "") + "/copilotkit";
const agentName = "agentic_chat";
let warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));
console.error = (...a) => warnings.push("error: " + a.map(String).join(" "));
console.debug = () => {};

const stop = async (threadId) => {
  const res = await fetch(`${base}/agent/${agentName}/stop/${encodeURIComponent(threadId)}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: "{}",
  });
  if (!res.ok) throw new Error(`stop: HTTP ${res.status} ${await res.text()}`);
};

/** POSTs `body` to `path`; reads the SSE answer as it arrives, calling `onEvent` with
 * each parsed `data:` event; returns them all. */
async function sse(path, body, onEvent = () => {}) {
  const res = await fetch(base + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  const events = [];
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const line = block.split("\n").find((l) => l.startsWith("data: "));
      if (line === undefined) continue;
      const event = JSON.parse(line.slice(6));
      events.push(event);
      await onEvent(event);
    }
  }
  return events;
}

async function verifyError(client, events) {
  try {
    await lastValueFrom(from(events).pipe(client.verifyEvents(false), toArray()));
    return null;
  } catch (e) {
    return String(e?.message ?? e);
  }
}

const body = (threadId, runId, messages, declares) => ({
  threadId, runId, tools: [], context: [], forwardedProps: {}, state: {}, messages,
  ...(declares ? { protocolVersion: declares } : {}),
});

/** A raw run stopped at its first text delta, then the thread's replay. */
async function stoppedRaw(threadId, declares) {
  let stopped = null;
  const run = await sse(`/agent/${agentName}/run`, body(threadId, `${threadId}-r1`, [{ id: `${threadId}-u`, role: "user", content: "hello there" }], declares), async (e) => {
    if (e.type === "TEXT_MESSAGE_CONTENT" && !stopped) stopped = stop(threadId);
  });
  if (!stopped) throw new Error("the run ended before it could be stopped");
  await stopped;
  const replay = await sse(`/agent/${agentName}/connect`, body(threadId, `${threadId}-connect`, [], declares));
  return { run, replay };
}

async function one(version) {
  const { client, core, declares } = clients[version];
  warnings = [];
  const result = { client: version, ok: false, warnings: [], schemaErrors: [], verifyErrors: [] };
  const threadId = `stop-${version}-${process.pid}`;
  try {
    // The client itself, stopped from outside as the page's stop button does.
    const agent = new client.HttpAgent({ url: `${base}/agent/${agentName}/run`, threadId, initialState: {} });
    agent.messages = [{ id: `${threadId}-u1`, role: "user", content: "hello there" }];
    let terminal = null;
    let finished = null;
    let stopped = null;
    await agent.runAgent(
      { runId: `${threadId}-r1`, tools: [], context: [], forwardedProps: {} },
      {
        onEvent: ({ event }) => {
          if (event.type === "TEXT_MESSAGE_CONTENT" && !stopped) stopped = stop(threadId);
          if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") {
            terminal = event.type;
            finished = event;
          }
        },
      },
    );
    if (!stopped) throw new Error("the client's run ended before it could be stopped");
    await stopped;
    result.terminal = terminal;
    result.finished = finished;

    const raw = await stoppedRaw(`${threadId}-raw`, declares);
    result.run = raw.run.map((e) => e.type);
    result.replay = raw.replay.map((e) => e.type);
    result.schemaErrors.push(...schemaErrors(core, raw.run, "run"), ...schemaErrors(core, raw.replay, "replay"));
    for (const [where, events] of [["run", raw.run], ["replay", raw.replay]]) {
      const err = await verifyError(client, events);
      if (err) result.verifyErrors.push(`${where}: ${err}`);
    }
    result.ok = terminal === "RUN_FINISHED" && result.schemaErrors.length === 0 && result.verifyErrors.length === 0 && warnings.length === 0;
  } catch (e) {
    result.error = String(e?.stack ?? e);
  }
  result.warnings = warnings;
  return result;
}

for (const version of Object.keys(clients)) {
  process.stdout.write(JSON.stringify(await one(version)) + "\n");
}
const control = await stoppedRaw(`stop-control-${process.pid}`, "1.1");
const finished = control.run.find((e) => e.type === "RUN_FINISHED");
process.stdout.write(JSON.stringify({
  control: true,
  finished,
  schemaErrors: schemaErrors(clients["0.0.59"].core, control.run, "control"),
}) + "\n");
