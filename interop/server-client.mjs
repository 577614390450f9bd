// Runs the reference client (@ag-ui/client 1.0.0 HttpAgent) against every demo agent of
// `agui serve`. The client's own pipeline (enforcement, chunk expansion, verification,
// reducer) must accept every stream: a rejected run, and any warning the client prints,
// is a failure. Prints one JSON line per agent:
//   {"agent", "ok", "error"?, "warnings", "contentTypes", "outcomes", "messages", "state"}
// Usage: node server-client.mjs BASE_URL [--proto]
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { HttpAgent } = require("@ag-ui/client");

const [base, ...flags] = process.argv.slice(2);
const proto = flags.includes("--proto");

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
  const fetchRecording = async (url, init) => {
    const res = await fetch(url, init);
    contentTypes.push(res.headers.get("content-type"));
    return res;
  };
  const Agent = proto ? ProtoAgent : HttpAgent;
  const agent = new Agent({
    url: `${base}/${name}`,
    threadId: fresh("thread"),
    initialState: plan.state ?? {},
    fetch: fetchRecording,
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
  return { contentTypes, outcomes, messages: agent.messages, state: agent.state };
}

for (const [name, plan] of Object.entries(plans)) {
  try {
    const r = await runPlan(name, plan);
    console.log(JSON.stringify({ agent: name, ok: true, warnings, ...r }));
  } catch (e) {
    console.log(JSON.stringify({ agent: name, ok: false, error: String(e?.stack ?? e), warnings }));
  }
}
