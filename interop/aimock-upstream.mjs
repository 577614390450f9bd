// CopilotKit's aimock as an Anthropic Messages upstream, in strict mode: with thinking
// enabled it refuses (400) a tool-loop continuation whose assistant turn does not begin
// with a thinking block carrying a non-empty signature (or a redacted_thinking block
// with its data). Scripted for one frontend-tool loop: a first turn that thinks (a
// signed thinking block) and calls show_card, and a continuation answering in text.
// Prints {"url": BASE} once it listens (BASE/v1/messages is the API), then, when its
// standard input closes, one line {"requests": [{path, status}...]} and exits.
// Usage: node aimock-upstream.mjs SIGNATURE
import { LLMock } from "@copilotkit/aimock";

const [signature] = process.argv.slice(2);
const mock = new LLMock({ port: 0, host: "127.0.0.1", strict: true });
mock.on(
  { userMessage: "show Oslo", hasToolResult: false },
  {
    reasoning: "The user wants a card for Oslo.",
    reasoningSignature: signature,
    toolCalls: [{ id: "toolu_aimock", name: "show_card", arguments: '{"city":"Oslo"}' }],
  },
);
mock.on({ hasToolResult: true }, { content: "Card shown." });
await mock.start();
console.log(JSON.stringify({ url: mock.url }));

process.stdin.resume();
process.stdin.on("end", async () => {
  const requests = mock.getRequests().map((r) => ({ path: r.path, status: r.response.status }));
  // Exit at once: stopping would wait for the connections the server keeps alive.
  process.stdout.write(JSON.stringify({ requests }) + "\n", () => process.exit(0));
});
