// Interrupts: the panel of open interrupts with an answer box each, and the resume
// run that answers (or cancels) them.

import { $, h, setJson } from "./dom.js";
import { uuid } from "./format.js";
import { cur, currentSummary } from "./runs.js";
import { conversationAfter } from "./messages.js";
import { thread, startRelay } from "./input.js";

let interruptKey = "";

/** Forgets which interrupts the panel shows, so that the next render builds it anew. */
export function resetInterruptPanel() {
  interruptKey = "";
}

function openInterrupts() {
  const s = currentSummary();
  const v = cur?.view;
  if (!s || s.status !== "interrupted" || !v || !Array.isArray(v.interrupts) || v.interrupts.length === 0) return null;
  return v.interrupts;
}

function prefill(interrupt) {
  const props = interrupt?.responseSchema?.properties;
  const out = {};
  if (props && typeof props === "object") {
    for (const [k, p] of Object.entries(props)) if (p && p.type === "boolean") out[k] = true;
  }
  return out;
}

export function renderInterrupt() {
  const list = openInterrupts();
  const panel = $("interrupt");
  if (!list) {
    panel.hidden = true;
    interruptKey = "";
    return;
  }
  const key = JSON.stringify([cur.id, list.map((i) => i.id)]);
  panel.hidden = false;
  if (key === interruptKey) return;
  interruptKey = key;
  $("interrupt-error").textContent = "";
  $("interrupt-list").replaceChildren(
    ...list.map((it) => {
      let schema = null;
      if (it.responseSchema) {
        const pre = h("pre", { class: "json" });
        setJson(pre, it.responseSchema);
        schema = h("details", null, h("summary", { class: "meta", text: "response schema" }), pre);
      }
      return h(
        "div",
        { class: "interrupt-item", "data-interrupt-id": it.id },
        h(
          "div",
          { class: "info" },
          h("div", { class: "msg", text: it.message || it.reason || "(no message)" }),
          h(
            "div",
            { class: "meta" },
            `reason ${it.reason ?? "?"} · id ${it.id}`,
            it.toolCallId ? ` · tool call ${it.toolCallId}` : "",
            it.expiresAt ? ` · expires ${it.expiresAt}` : "",
            it.subagentRunId ? ` · subagent ${it.subagentRunId}` : "",
          ),
          schema,
        ),
        h("textarea", {
          class: "mono",
          "data-testid": "interrupt-response",
          "data-interrupt-id": it.id,
          rows: "3",
          spellcheck: "false",
          "aria-label": `Answer to ${it.id}`,
          text: JSON.stringify(prefill(it), null, 2),
        }),
      );
    }),
  );
}

export async function resumeInterrupts(status) {
  const list = openInterrupts();
  if (!list || !cur) return;
  const errBox = $("interrupt-error");
  errBox.textContent = "";
  const resume = [];
  for (const it of list) {
    const ta = [...document.querySelectorAll("[data-testid=interrupt-response]")].find((t) => t.dataset.interruptId === it.id);
    if (status === "cancelled") {
      resume.push({ interruptId: it.id, status: "cancelled" });
      continue;
    }
    let payload;
    try {
      payload = JSON.parse(ta?.value.trim() || "{}");
    } catch (e) {
      errBox.textContent = `The answer to ${it.id} is not JSON: ${e.message}`;
      ta?.focus();
      return;
    }
    resume.push({ interruptId: it.id, status: "resolved", payload });
  }
  const s = currentSummary();
  const input = s?.input || {};
  const view = cur.view;
  const next = {
    threadId: s?.threadId || input.threadId || thread.id,
    runId: uuid(),
    state: view?.state ?? input.state ?? {},
    messages: conversationAfter(input, view?.messages),
    tools: Array.isArray(input.tools) ? input.tools : [],
    context: Array.isArray(input.context) ? input.context : [],
    forwardedProps: input.forwardedProps ?? {},
    resume,
  };
  const url = s?.url || $("agent-url").value.trim();
  const btns = [$("interrupt-submit"), $("interrupt-cancel")];
  btns.forEach((b) => (b.disabled = true));
  try {
    await startRelay(url, next, { adopt: true });
  } catch (e) {
    errBox.textContent = e.message;
  } finally {
    btns.forEach((b) => (b.disabled = false));
  }
}
