// Runs the reference client (@ag-ui/client 1.0.0 HttpAgent) against model-backed agents
// (agui-sdk-model over a fake chat-completions endpoint), one per scenario, each mounted at
// BASE_URL/{scenario}. The client's own pipeline (enforcement, chunk expansion,
// verification, reducer) must accept every stream. Prints one JSON line per scenario:
//   {"scenario","ok","error"?,"runError"?,"warnings","messages"}
// Usage: node openai-clients.mjs BASE_URL SCENARIO...
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { HttpAgent } = require("@ag-ui/client");

const [base, ...scenarios] = process.argv.slice(2);
let warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));
console.error = (...a) => warnings.push("error: " + a.map(String).join(" "));

const showCard = {
  name: "show_card",
  description: "Shows a card for a city.",
  parameters: { type: "object", properties: { city: { type: "string" } } },
};

for (const scenario of scenarios) {
  warnings = [];
  const agent = new HttpAgent({ url: `${base}/${scenario}`, threadId: `t-${scenario}` });
  agent.addMessage({ id: `u-${scenario}`, role: "user", content: "hello" });
  let runError = null;
  try {
    await agent.runAgent(
      { runId: `r-${scenario}`, tools: [showCard] },
      { onRunErrorEvent: ({ event }) => { runError = { message: event.message, code: event.code ?? null }; } },
    );
    console.log(JSON.stringify({ scenario, ok: true, runError, warnings, messages: agent.messages }));
  } catch (e) {
    console.log(JSON.stringify({ scenario, ok: false, runError, error: String(e?.stack ?? e), warnings, messages: agent.messages }));
  }
}
