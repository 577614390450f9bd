// CopilotKit's Node runtime (@copilotkit/runtime 1.75.0, its v2 CopilotRuntime with its
// default in-memory runner, on its Express endpoint at /copilotkit) serving the
// runtime's own BuiltInAgent three times, each over the benchmark's fake upstream
// (BENCH_UPSTREAM, e.g. http://127.0.0.1:P/v1) through the AI SDK providers the runtime
// itself uses:
//   chat       @ai-sdk/openai  .chat()       (chat completions)
//   responses  @ai-sdk/openai  .responses()  (OpenAI Responses)
//   anthropic  @ai-sdk/anthropic             (Anthropic Messages, thinking on)
// `node --expose-gc server.mjs [PORT]` prints `listening <port>`.
// POST /debug/gc collects garbage (twice) and answers process.memoryUsage().
process.env.COPILOTKIT_TELEMETRY_DISABLED ??= "true";
process.env.DO_NOT_TRACK ??= "1";

import express from "express";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import {
  BuiltInAgent,
  CopilotRuntime,
  createCopilotEndpointExpress,
} from "@copilotkit/runtime/v2";

const baseURL = process.env.BENCH_UPSTREAM;
if (!baseURL) throw new Error("BENCH_UPSTREAM (the fake provider's base URL) is not set");

const openai = createOpenAI({ baseURL, apiKey: "bench" });
const anthropic = createAnthropic({ baseURL, apiKey: "bench" });

const runtime = new CopilotRuntime({
  agents: {
    chat: new BuiltInAgent({ model: openai.chat("gpt-5-mini") }),
    responses: new BuiltInAgent({
      model: openai.responses("gpt-5-mini"),
      providerOptions: {
        openai: {
          reasoningEffort: "medium",
          reasoningSummary: "auto",
          store: false,
          include: ["reasoning.encrypted_content"],
        },
      },
    }),
    anthropic: new BuiltInAgent({
      model: anthropic("claude-sonnet-4-5"),
      maxOutputTokens: 4096,
      providerOptions: {
        anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } },
      },
    }),
  },
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
