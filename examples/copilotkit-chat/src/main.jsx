// A small CopilotKit chat page for the runtime that `agui serve` mounts at
// /copilotkit. Everything it needs comes from the query string, so one build
// can be pointed at any agent, thread or transport:
//
//   ?runtimeUrl=http://127.0.0.1:8000/copilotkit  the runtime's base URL
//   &agent=agentic_chat                           the agent id (default "default");
//                                                 `interrupt` asks for approval through
//                                                 an AG-UI interrupt (see ApprovalCard)
//   &thread=my-thread                             the thread id (default: one kept in localStorage)
//   &single=1                                     talk to the single-route endpoint
//   &threads=1                                    show this user's threads (useThreads): new,
//                                                 open, rename, delete
//   &token=…                                      sign in: sent as `Authorization: Bearer …`
//                                                 (agui serve keeps each token's threads apart)
//
// The chat also shows suggestions of what to say next, which CopilotKit asks the
// runtime for after every run.

import React, { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import {
  CopilotChat,
  CopilotKitProvider,
  UseAgentUpdate,
  useAgent,
  useConfigureSuggestions,
  useFrontendTool,
  useHumanInTheLoop,
  useInterrupt,
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

// Interrupts: a run that ends with RUN_FINISHED's `outcome: {type: "interrupt"}`
// leaves the thread paused until the next run answers every open interrupt in its
// `resume`. `useInterrupt` picks the interrupts up when such a run ends (or when a
// reconnect replays one), and CopilotChat shows what `render` returns under the
// messages. `resolve(payload)` and `cancel()` start that next run: CopilotKit
// sends `resume: [{interruptId, status, payload}]` under the runId of the run it
// saw pause (after a reload, that of the connect that replayed it).
// Each open interrupt gets a card: its message, and Approve or Reject, answered
// as resolved with `{approved: true|false}` (the shape the `interrupt` demo
// agent's responseSchema asks for), or Cancel, answered as cancelled (no
// payload). With several open, CopilotKit resumes once every one of them has an
// answer.
function ApprovalCard({ interrupt, resolve, cancel }) {
  const [answer, setAnswer] = useState(null);
  const [failure, setFailure] = useState(null);

  const answerWith = (name, send) => {
    setAnswer(name);
    setFailure(null);
    // A failed run is reported through the provider's onError too; the card
    // keeps its own note of a refused answer.
    send().catch((e) => setFailure(e?.message ?? String(e)));
  };

  return (
    <div
      className="approval"
      data-testid="interrupt-card"
      data-interrupt-id={interrupt.id}
      data-reason={interrupt.reason}
      data-answer={answer ?? ""}
    >
      <p data-testid="interrupt-message">{interrupt.message || `The agent is waiting (${interrupt.reason}).`}</p>
      {interrupt.expiresAt ? <p className="approval-note">Answer before {interrupt.expiresAt}.</p> : null}
      <div className="approval-actions">
        <button
          type="button"
          data-testid="interrupt-approve"
          disabled={answer !== null}
          onClick={() => answerWith("approved", () => resolve({ approved: true }, interrupt.id))}
        >
          Approve
        </button>
        <button
          type="button"
          data-testid="interrupt-reject"
          disabled={answer !== null}
          onClick={() => answerWith("rejected", () => resolve({ approved: false }, interrupt.id))}
        >
          Reject
        </button>
        <button
          type="button"
          data-testid="interrupt-cancel"
          disabled={answer !== null}
          onClick={() => answerWith("cancelled", () => cancel(interrupt.id))}
        >
          Cancel
        </button>
      </div>
      {failure ? <p data-testid="interrupt-error">{failure}</p> : null}
    </div>
  );
}

function InterruptCards({ agent }) {
  useInterrupt({
    agentId: agent,
    render: ({ interrupts, resolve, cancel }) => (
      <div className="approvals" data-testid="interrupts">
        {interrupts.map((interrupt) => (
          <ApprovalCard key={interrupt.id} interrupt={interrupt} resolve={resolve} cancel={cancel} />
        ))}
      </div>
    ),
  });
  return null;
}

// CopilotKit 1.74 keeps one agent object per agent id and reuses it for every
// thread: the open interrupts it remembers (the client's `pendingInterrupts`,
// which makes it refuse any run or connect that does not answer them) and
// useInterrupt's card would follow the user to another thread, where every run
// and the connect itself then fail. So when the chat moves to another thread,
// the page forgets both before the chat connects to it: the agent's list is
// emptied, and the cards are mounted afresh for the thread. The thread's own
// history brings its interrupt back when its replay ends paused.
function Interrupts({ agent, thread }) {
  const { agent: chatAgent } = useAgent({ agentId: agent, updates: [] });
  const shown = useRef(thread);
  // A layout effect, so that it runs before the chat's connect (a passive effect).
  useLayoutEffect(() => {
    if (shown.current === thread) return;
    shown.current = thread;
    chatAgent.pendingInterrupts = [];
  }, [chatAgent, thread]);
  return <InterruptCards key={thread} agent={agent} />;
}

// Suggestions: CopilotKit asks the runtime for a few follow-ups through
// `POST {runtimeUrl}/agent/{agent}/suggest` (a run that the runtime streams but
// never keeps, so it is no conversation of its own), and `CopilotChat` shows
// them as buttons under the messages; clicking one sends its message. CopilotKit
// asks again after every run; "always" also asks on an empty thread, not only
// once the first answer is in.
function Suggestions({ agent }) {
  useConfigureSuggestions({
    instructions: "Offer short follow-ups the user could send next.",
    providerAgentId: agent,
    consumerAgentId: agent,
    available: "always",
    maxSuggestions: 3,
  });
  return null;
}

// What a thread row shows: its name once it has one, else its id.
function threadLabel(t) {
  return t.name && t.name.trim() ? t.name : t.id;
}

// One row of the thread list: a button that opens the thread, and Rename and
// Delete. Rename swaps the label for a small form; Enter or Save sends it,
// Escape or Cancel leaves the name as it was (so does an empty name: the
// runtime's rename sets a name, it does not clear one).
function ThreadRow({ thread, current, onOpen, onRename, onDelete }) {
  const [draft, setDraft] = useState(null);
  const editing = draft !== null;

  const save = (event) => {
    event.preventDefault();
    const name = draft.trim();
    setDraft(null);
    if (name && name !== thread.name) onRename(thread.id, name);
  };

  return (
    <li
      data-testid="thread"
      data-thread-id={thread.id}
      data-current={current ? "1" : "0"}
      className={current ? "current" : undefined}
    >
      {editing ? (
        <form className="thread-rename" onSubmit={save}>
          <input
            data-testid="thread-rename-input"
            aria-label="Thread name"
            value={draft}
            autoFocus
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Escape") setDraft(null);
            }}
          />
          <button type="submit" data-testid="thread-rename-save">
            Save
          </button>
          <button type="button" onClick={() => setDraft(null)}>
            Cancel
          </button>
        </form>
      ) : (
        <>
          <button
            type="button"
            className="thread-open"
            data-testid="thread-open"
            aria-current={current ? "true" : undefined}
            title={thread.id}
            onClick={() => onOpen(thread.id)}
          >
            <span data-testid="thread-name">{threadLabel(thread)}</span>
          </button>
          <button type="button" data-testid="thread-rename" onClick={() => setDraft(thread.name ?? "")}>
            Rename
          </button>
          <button type="button" data-testid="thread-delete" onClick={() => onDelete(thread.id)}>
            Delete
          </button>
        </>
      )}
    </li>
  );
}

// The user's conversations, as the runtime's `GET /threads` lists them (most
// recent run first), with New, open, Rename (`PATCH /threads/{id}`) and Delete
// (`DELETE /threads/{id}`), all through `useThreads`. The hook applies rename and
// delete to the list at once and sends them in the background; a failure shows
// below the buttons. SSE mode has no live updates, so the list is fetched again
// whenever the chat's agent stops running (after a run, since a new thread only
// exists once it has run, and after a connect's replay) and on Refresh.
function ThreadList({ agent, current, onSelect, onNew }) {
  const {
    threads,
    isLoading,
    isMutating,
    error,
    refetchThreads,
    startNewThread,
    renameThread,
    deleteThread,
  } = useThreads({ agentId: agent });
  const [mutationError, setMutationError] = useState(null);

  const { agent: chatAgent } = useAgent({ agentId: agent, updates: [UseAgentUpdate.OnRunStatusChanged] });
  const running = chatAgent.isRunning;
  const wasRunning = useRef(running);
  useEffect(() => {
    if (wasRunning.current && !running) refetchThreads();
    wasRunning.current = running;
  }, [running, refetchThreads]);

  // The hook's promises reject when the runtime refuses a change; keep the
  // message (the hook's `error` has it too, until the next successful fetch).
  const report = (what) => (e) => setMutationError(`${what}: ${e?.message ?? String(e)}`);

  const newThread = () => {
    setMutationError(null);
    startNewThread();
    onNew();
  };
  const rename = (id, name) => {
    setMutationError(null);
    renameThread(id, name).catch(report("rename"));
  };
  const remove = (id) => {
    setMutationError(null);
    // Deleting the open conversation leaves nothing to show: start a new one.
    if (id === current) onNew();
    deleteThread(id).catch(report("delete"));
  };

  const shownError = mutationError ?? error?.message ?? null;
  return (
    <nav
      className="threads"
      data-testid="threads"
      data-loading={isLoading ? "1" : "0"}
      data-mutating={isMutating ? "1" : "0"}
    >
      <div className="threads-actions">
        <button type="button" data-testid="thread-new" onClick={newThread}>
          New thread
        </button>
        <button type="button" data-testid="threads-refresh" onClick={() => refetchThreads()}>
          Refresh threads
        </button>
      </div>
      {shownError ? <p data-testid="threads-error">{shownError}</p> : null}
      <ul>
        {threads.map((t) => (
          <ThreadRow
            key={t.id}
            thread={t}
            current={t.id === current}
            onOpen={onSelect}
            onRename={rename}
            onDelete={remove}
          />
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

// Remembers the thread shown, so that a reload comes back to it: in
// localStorage, and in the address when the address names one.
function rememberThread(thread) {
  window.localStorage.setItem(THREAD_KEY, thread);
  const url = new URL(window.location.href);
  if (url.searchParams.has("thread")) {
    url.searchParams.set("thread", thread);
    window.history.replaceState(null, "", url);
  }
}

function App() {
  const [settings] = useState(readSettings);
  const [thread, setThread] = useState(settings.thread);
  const [errors, setErrors] = useState([]);

  const onError = useCallback(({ error, code }) => {
    const text = `${code ?? "error"}: ${error?.message ?? String(error)}`;
    setErrors((prev) => [...prev, text]);
  }, []);

  // The same object on every render: a new one would count as a header change.
  const headers = useMemo(
    () => (settings.token ? { Authorization: `Bearer ${settings.token}` } : undefined),
    [settings.token],
  );

  // Opening a thread hands its id to `CopilotChat`, which connects to it and
  // shows its history; a new thread is a fresh id the runtime has not seen.
  const openThread = useCallback((id) => {
    setThread(id);
    rememberThread(id);
  }, []);
  const newThread = useCallback(() => openThread(newId()), [openThread]);

  return (
    <CopilotKitProvider
      runtimeUrl={settings.runtimeUrl}
      headers={headers}
      useSingleEndpoint={settings.single}
      onError={onError}
      enableInspector={false}
    >
      <Tools />
      <Suggestions agent={settings.agent} />
      <Interrupts agent={settings.agent} thread={thread} />
      <main className="page">
        <header className="bar">
          <strong>AG-UI × CopilotKit</strong>
          <span data-testid="settings">
            agent <code>{settings.agent}</code> · thread <code data-testid="thread-id">{thread}</code> ·{" "}
            {settings.single ? "single route" : "multi route"}
            {settings.token ? " · signed in" : ""}
          </span>
        </header>
        <ErrorList errors={errors} />
        <div className="workspace">
          {settings.threads ? (
            <ThreadList agent={settings.agent} current={thread} onSelect={openThread} onNew={newThread} />
          ) : null}
          <section className="chat">
            <CopilotChat agentId={settings.agent} threadId={thread} />
          </section>
        </div>
      </main>
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
