// The benchmark agent behind CopilotKit's own Node runtime (@copilotkitnext/runtime,
// CopilotRuntime with its default in-memory runner), mounted with the runtime's
// Express endpoint at /copilotkit. `node --expose-gc server.mjs [PORT]` (default 0: a
// free port); prints `listening <port>`.
//
// The agent answers every run at once with exactly the events of ../src/bin/ck_server.rs:
// RUN_STARTED; an assistant text message of 40 word pieces; a call of the frontend
// tool `show_card` under that message, its JSON arguments in 10 pieces; a
// STATE_SNAPSHOT; RUN_FINISHED. Ids derive from the run id; text, arguments and state
// from the turn number (how many user messages the request holds).
//
// POST /debug/gc collects garbage (twice) and answers process.memoryUsage().
process.env.COPILOTKIT_TELEMETRY_DISABLED ??= "true";
process.env.DO_NOT_TRACK ??= "1";

import express from "express";
import { Observable } from "rxjs";
import { AbstractAgent, EventType } from "@ag-ui/client";
import { CopilotRuntime } from "@copilotkitnext/runtime";
import { createCopilotEndpointExpress } from "@copilotkitnext/runtime/express";

const WORDS = [
  "the", "ledger", "shows", "three", "open", "items", "for", "this", "week", "and",
  "two", "of", "them", "need", "review", "today",
];
const TEXT_PIECES = 40;
const ARG_PIECES = 10;

/** Splits ASCII `s` into `n` pieces at floor(k * len / n). */
function pieces(s, n) {
  const out = [];
  for (let k = 0; k < n; k++) {
    out.push(s.slice(Math.floor((k * s.length) / n), Math.floor(((k + 1) * s.length) / n)));
  }
  return out;
}

class ScriptedAgent extends AbstractAgent {
  run(input) {
    return new Observable((sub) => {
      const turn = input.messages.filter((m) => m.role === "user").length;
      const { threadId, runId } = input;
      const msg = `${runId}-m`;
      const call = `${runId}-t`;
      sub.next({ type: EventType.RUN_STARTED, threadId, runId });
      sub.next({ type: EventType.TEXT_MESSAGE_START, messageId: msg, role: "assistant" });
      for (let i = 0; i < TEXT_PIECES; i++) {
        const delta = `${WORDS[(turn + i) % WORDS.length]} `;
        sub.next({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: msg, delta });
      }
      sub.next({ type: EventType.TEXT_MESSAGE_END, messageId: msg });
      sub.next({
        type: EventType.TOOL_CALL_START,
        toolCallId: call,
        toolCallName: "show_card",
        parentMessageId: msg,
      });
      const args =
        `{"title":"Turn ${turn}","items":["alpha","beta","gamma","delta"],` +
        `"priority":"normal","note":"review the open items before the end of the day"}`;
      for (const delta of pieces(args, ARG_PIECES)) {
        sub.next({ type: EventType.TOOL_CALL_ARGS, toolCallId: call, delta });
      }
      sub.next({ type: EventType.TOOL_CALL_END, toolCallId: call });
      sub.next({
        type: EventType.STATE_SNAPSHOT,
        snapshot: { turn, topic: "weekly review", lastMessageId: msg, cards: turn },
      });
      sub.next({ type: EventType.RUN_FINISHED, threadId, runId });
      sub.complete();
    });
  }
}

const agent = new ScriptedAgent({ agentId: "bench" });
const runtime = new CopilotRuntime({ agents: { bench: agent, default: agent } });

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
