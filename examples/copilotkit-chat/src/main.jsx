// A small CopilotKit chat page for the runtime that `agui serve` mounts at
// /copilotkit. Everything it needs comes from the query string, so one build
// can be pointed at any agent, thread or transport:
//
//   ?runtimeUrl=http://127.0.0.1:8000/copilotkit  the runtime's base URL
//   &agent=agentic_chat                           the agent id (default "default")
//   &thread=my-thread                             the thread id (default: one kept in localStorage)
//   &single=1                                     talk to the single-route endpoint
//   &threads=1                                    show this user's threads (useThreads)
//   &token=…                                      sign in: sent as `Authorization: Bearer …`
//                                                 (agui serve keeps each token's threads apart)

import React, { useCallback, useState } from "react";
import { createRoot } from "react-dom/client";
import {
  CopilotChat,
  CopilotKitProvider,
  useFrontendTool,
  useHumanInTheLoop,
  useThreads,
} from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { z } from "zod";
import "./page.css";

const THREAD_KEY = "agui-copilotkit-chat.thread";

function newId() {
  if (globalThis.crypto && typeof crypto.randomUUID === "function") {
    return crypto.randomUUID();
  }
  return `thread-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

function readSettings() {
  const query = new URLSearchParams(window.location.search);
  let thread = query.get("thread");
  if (!thread) {
    thread = window.localStorage.getItem(THREAD_KEY);
    if (!thread) {
      thread = newId();
      window.localStorage.setItem(THREAD_KEY, thread);
    }
  }
  return {
    runtimeUrl: query.get("runtimeUrl") || "http://127.0.0.1:8000/copilotkit",
    agent: query.get("agent") || "default",
    thread,
    single: query.get("single") === "1",
    threads: query.get("threads") === "1",
    token: query.get("token") || "",
  };
}

// The haiku tool: the agent sends the poem, the page shows it and answers
// with a short acknowledgement, after which the agent runs again.
const haikuParameters = z.object({
  japanese: z.array(z.string()).describe("three lines in Japanese"),
  english: z.array(z.string()).describe("the same three lines in English"),
});

function Haiku({ args, status }) {
  const english = Array.isArray(args?.english) ? args.english : [];
  const japanese = Array.isArray(args?.japanese) ? args.japanese : [];
  return (
    <figure className="haiku" data-testid="haiku" data-status={status}>
      <div lang="ja">
        {japanese.map((line, i) => (
          <div key={i}>{line}</div>
        ))}
      </div>
      <figcaption>
        {english.map((line, i) => (
          <div key={i} data-testid="haiku-line">
            {line}
          </div>
        ))}
      </figcaption>
    </figure>
  );
}

// The task-steps tool is answered by a person: the steps are listed with
// check boxes and nothing goes back to the agent until Confirm is clicked.
const stepsParameters = z.object({
  steps: z
    .array(
      z.object({
        description: z.string(),
        status: z.enum(["enabled", "disabled", "executing"]),
      }),
    )
    .describe("the steps of the plan, each enabled unless the user unticks it"),
});

function TaskSteps({ args, status, respond, result }) {
  const proposed = Array.isArray(args?.steps) ? args.steps : [];
  const [disabled, setDisabled] = useState(() => new Set());
  const answered = status === "complete" || typeof result === "string";

  const toggle = (index) => {
    setDisabled((prev) => {
      const next = new Set(prev);
      if (next.has(index)) next.delete(index);
      else next.add(index);
      return next;
    });
  };

  const confirm = () => {
    if (!respond) return;
    const steps = proposed.map((step, i) => ({
      description: step?.description ?? "",
      status: disabled.has(i) ? "disabled" : "enabled",
    }));
    respond({ steps });
  };

  return (
    <div className="task-steps" data-testid="hitl-steps" data-status={status}>
      <ol>
        {proposed.map((step, i) => (
          <li key={i}>
            <label>
              <input
                type="checkbox"
                data-testid="hitl-step"
                checked={!disabled.has(i) && step?.status !== "disabled"}
                disabled={!respond || answered}
                onChange={() => toggle(i)}
              />
              {step?.description ?? ""}
            </label>
          </li>
        ))}
      </ol>
      {answered ? (
        <p data-testid="hitl-done">Answered.</p>
      ) : (
        <button
          type="button"
          data-testid="hitl-confirm"
          disabled={!respond}
          onClick={confirm}
        >
          Confirm
        </button>
      )}
    </div>
  );
}

function Tools() {
  useFrontendTool({
    name: "generate_haiku",
    description: "Show a haiku to the user, in Japanese and in English.",
    parameters: haikuParameters,
    handler: async ({ english }) =>
      `The haiku is on screen (${Array.isArray(english) ? english.length : 0} lines).`,
    render: Haiku,
  });

  useHumanInTheLoop({
    name: "generate_task_steps",
    description: "Ask the user to review the steps of a plan before it is carried out.",
    parameters: stepsParameters,
    render: TaskSteps,
  });

  return null;
}

// The user's conversations, as the runtime's `GET /threads` lists them. SSE mode has
// no live updates: the list is fetched again on Refresh.
function ThreadList({ agent, current }) {
  const { threads, isLoading, error, refetchThreads } = useThreads({ agentId: agent });
  return (
    <nav className="threads" data-testid="threads" data-loading={isLoading ? "1" : "0"}>
      <button type="button" data-testid="threads-refresh" onClick={() => refetchThreads()}>
        Refresh threads
      </button>
      {error ? <p data-testid="threads-error">{error.message}</p> : null}
      <ul>
        {threads.map((t) => (
          <li key={t.id} data-testid="thread" data-current={t.id === current ? "1" : "0"}>
            {t.id}
          </li>
        ))}
      </ul>
    </nav>
  );
}

function ErrorList({ errors }) {
  return (
    <ul className="errors" data-testid="errors" data-count={errors.length}>
      {errors.map((e, i) => (
        <li key={i} data-testid="error">
          {e}
        </li>
      ))}
    </ul>
  );
}

function App() {
  const [settings] = useState(readSettings);
  const [errors, setErrors] = useState([]);

  const onError = useCallback(({ error, code }) => {
    const text = `${code ?? "error"}: ${error?.message ?? String(error)}`;
    setErrors((prev) => [...prev, text]);
  }, []);

  return (
    <CopilotKitProvider
      runtimeUrl={settings.runtimeUrl}
      headers={settings.token ? { Authorization: `Bearer ${settings.token}` } : undefined}
      useSingleEndpoint={settings.single}
      onError={onError}
      enableInspector={false}
    >
      <Tools />
      <main className="page">
        <header className="bar">
          <strong>AG-UI × CopilotKit</strong>
          <span data-testid="settings">
            agent <code>{settings.agent}</code> · thread{" "}
            <code data-testid="thread-id">{settings.thread}</code> ·{" "}
            {settings.single ? "single route" : "multi route"}
          </span>
        </header>
        <ErrorList errors={errors} />
        {settings.threads ? <ThreadList agent={settings.agent} current={settings.thread} /> : null}
        <section className="chat">
          <CopilotChat agentId={settings.agent} threadId={settings.thread} />
        </section>
      </main>
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
