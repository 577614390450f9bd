// Runs the reference client (@ag-ui/client 1.0.0 HttpAgent) against every demo agent of
// `agui serve`. The client's own pipeline (enforcement, chunk expansion, verification,
// reducer) must accept every stream: a rejected run, and any warning the client prints,
// is a failure. Prints one JSON line per agent:
//   {"agent", "ok", "error"?, "warnings", "contentTypes", "outcomes", "messages", "state"}
// Usage: node server-client.mjs BASE_URL [--proto] [--resumable]
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { HttpAgent } = require("@ag-ui/client");

const [base, ...flags] = process.argv.slice(2);
const proto = flags.includes("--proto");
// --resumable: every run asks for a resumable stream (ids on every SSE frame, which
// this client must ignore), with an owner token.
const resumable = flags.includes("--resumable");
const resumeHeaders = resumable
  ? { "AGUI-Resumable": "1", "AGUI-Resume-Token": `interop-owner-${process.pid}-0123456789abcdef` }
  : {};

class ProtoAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    init.headers = { ...init.headers, Accept: "application/vnd.ag-ui.event+proto" };
    return init;
  }
}

let warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));
console.error = (...a) => warnings.push("error: " + a.map(String).join(" "));

let counter = 0;
const fresh = (p) => `${p}-${process.pid}-${++counter}`;

// What to do before each run of an agent.
const user = (text) => ({ kind: "user", text });
const answerTool = (answer) => ({ kind: "answerTool", answer });
const fakeToolRound = (result) => ({ kind: "fakeToolRound", result });
const resume = (payload) => ({ kind: "resume", payload });

const plans = {
  agentic_chat: { steps: [user("hello there"), fakeToolRound("background is blue")] },
  backend_tool_rendering: { steps: [user("Berlin")] },
  human_in_the_loop: {
    steps: [
      user("plan a cake"),
      answerTool((args) => {
        const v = JSON.parse(args);
        v.steps[1].status = "disabled";
        return JSON.stringify(v);
      }),
    ],
  },
  agentic_generative_ui: { steps: [user("write an article")] },
  tool_based_generative_ui: { steps: [user("a haiku please"), answerTool(() => "the user liked it")] },
  shared_state: {
    state: { title: "Soup", ingredients: [{ name: "Water" }], instructions: ["Boil"] },
    steps: [user("improve my recipe")],
  },
  predictive_state_updates: { state: { document: "" }, steps: [user("write a story")] },
  reasoning: { steps: [user("why is the sky blue?")] },
  subagents: { steps: [user("owls")] },
  interrupt: { steps: [user("send the email"), resume({ approved: true })] },
};

async function runPlan(name, plan) {
  warnings = [];
  const contentTypes = [];
  const firstSeqs = [];
  const fetchRecording = async (url, init) => {
    const res = await fetch(url, init);
    contentTypes.push(res.headers.get("content-type"));
    firstSeqs.push(res.headers.get("agui-first-seq"));
    return res;
  };
  const Agent = proto ? ProtoAgent : HttpAgent;
  const agent = new Agent({
    url: `${base}/${name}`,
    threadId: fresh("thread"),
    initialState: plan.state ?? {},
    fetch: fetchRecording,
    headers: resumeHeaders,
  });
  const outcomes = [];
  for (const step of plan.steps) {
    const params = { runId: fresh("run") };
    if (step.kind === "user") {
      agent.addMessage({ id: fresh("user"), role: "user", content: step.text });
    } else if (step.kind === "answerTool") {
      const answered = new Set(agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
      const call = agent.messages
        .filter((m) => m.role === "assistant")
        .flatMap((m) => m.toolCalls ?? [])
        .find((c) => !answered.has(c.id));
      if (!call) throw new Error("no unanswered tool call to answer");
      agent.addMessage({ id: fresh("tool"), role: "tool", toolCallId: call.id, content: step.answer(call.function.arguments) });
    } else if (step.kind === "fakeToolRound") {
      const callId = fresh("call");
      agent.addMessage({
        id: fresh("assistant"),
        role: "assistant",
        toolCalls: [{ id: callId, type: "function", function: { name: "change_background", arguments: "{}" } }],
      });
      agent.addMessage({ id: fresh("tool"), role: "tool", toolCallId: callId, content: step.result });
    } else if (step.kind === "resume") {
      params.resume = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: step.payload }));
      if (params.resume.length === 0) throw new Error("no pending interrupt to resume");
    }
    let outcome = "success";
    await agent.runAgent(params, {
      onRunFinishedEvent: ({ outcome: o }) => {
        outcome = o ?? "success";
      },
      onRunErrorEvent: ({ event }) => {
        throw new Error(`RUN_ERROR: ${event.message}`);
      },
    });
    outcomes.push(outcome);
  }
  return { contentTypes, firstSeqs, outcomes, messages: agent.messages, state: agent.state };
}

for (const [name, plan] of Object.entries(plans)) {
  try {
    const r = await runPlan(name, plan);
    console.log(JSON.stringify({ agent: name, ok: true, warnings, ...r }));
  } catch (e) {
    console.log(JSON.stringify({ agent: name, ok: false, error: String(e?.stack ?? e), warnings }));
  }
}
