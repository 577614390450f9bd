// The next run: the conversation the message box continues (its thread), the request
// headers, the RunAgentInput built from them or edited by hand, and the buttons that
// start, stop, re-send and continue runs.

import { $, toast, showTab } from "./dom.js";
import { shortId, uuid } from "./format.js";
import { api } from "./api.js";
import { schedule } from "./schedule.js";
import { runsById, runOrder, knownRunIds, cur, currentSummary, mergeSummary, pollRuns, selectRun } from "./runs.js";
import { conversationAfter } from "./messages.js";

/** The conversation the message box continues. */
export const thread = {
  id: uuid(),
  messages: [],
  state: {},
  lastRunId: null,
  lastInput: null,
  synced: true,
  nextRunId: uuid(),
  nextMessageId: uuid(),
};
let inputDirty = false;
let starting = false;

export function absorbView(runId, view) {
  if (thread.lastRunId !== runId) return;
  thread.messages = conversationAfter(thread.lastInput, view.messages);
  thread.state = view.state ?? thread.lastInput?.state ?? {};
  if (view.summary && view.summary.status !== "running") thread.synced = true;
  refreshPreview();
}

/** Brings the thread up to date with its last run when the page did not see the run's end. */
async function syncThread() {
  if (!thread.lastRunId || thread.synced) return;
  const id = thread.lastRunId;
  try {
    const s = await (await api(`/api/runs/${encodeURIComponent(id)}`)).json();
    mergeSummary(s);
    if (s.events > 0) {
      const d = await (await api(`/api/runs/${encodeURIComponent(id)}/events/${s.events - 1}`)).json();
      thread.messages = conversationAfter(thread.lastInput, d.messages);
      thread.state = d.state ?? thread.lastInput?.state ?? {};
    }
    if (s.status !== "running") thread.synced = true;
  } catch (e) {
    console.warn("could not bring the thread up to date", e);
  }
}

function parseHeaders() {
  const text = $("headers-input").value.trim();
  if (!text) return {};
  if (text.startsWith("{")) {
    let obj;
    try {
      obj = JSON.parse(text);
    } catch (e) {
      throw new Error(`headers: not a JSON object (${e.message})`);
    }
    if (!obj || typeof obj !== "object" || Array.isArray(obj)) throw new Error("headers: expected a JSON object");
    const out = {};
    for (const [k, v] of Object.entries(obj)) {
      if (v !== null && typeof v === "object") throw new Error(`headers: the value of ${k} must be a string`);
      out[k] = String(v);
    }
    return out;
  }
  const out = {};
  text.split(/\r?\n/).forEach((line, i) => {
    const l = line.trim();
    if (!l || l.startsWith("#")) return;
    const c = l.indexOf(":");
    if (c <= 0) throw new Error(`headers, line ${i + 1}: expected "Name: value"`);
    out[l.slice(0, c).trim()] = l.slice(c + 1).trim();
  });
  return out;
}

export function checkHeaders() {
  let n = 0;
  let err = "";
  try {
    n = Object.keys(parseHeaders()).length;
  } catch (e) {
    err = e.message;
  }
  $("headers-error").textContent = err;
  const c = $("headers-count");
  c.textContent = err ? "!" : n ? String(n) : "";
  c.className = err ? "count err" : "count";
}

function buildInput() {
  const text = $("message-input").value;
  const messages = [...thread.messages];
  if (text.trim()) messages.push({ id: thread.nextMessageId, role: "user", content: text });
  return {
    threadId: thread.id,
    runId: thread.nextRunId,
    state: thread.state ?? {},
    messages,
    tools: [],
    context: [],
    forwardedProps: {},
  };
}

export function refreshPreview() {
  if (!inputDirty) {
    const text = JSON.stringify(buildInput(), null, 2);
    if ($("input-json").value !== text) $("input-json").value = text;
  }
  $("input-edited").hidden = !inputDirty;
  $("input-reset").disabled = !inputDirty;
  $("input-note").textContent = inputDirty ? "edited: sent as it is" : "built from the message box";
  schedule("thread");
}

export function renderThread() {
  $("thread-id").textContent = shortId(thread.id);
  $("thread-id").title = `threadId ${thread.id}`;
  const n = thread.messages.length;
  $("thread-count").textContent = n ? `· ${n} message${n === 1 ? "" : "s"}` : "· new";
}

function agentUrl() {
  const v = $("agent-url").value.trim();
  let u;
  try {
    u = new URL(v);
  } catch {
    throw new Error("The agent URL is not a URL (e.g. http://127.0.0.1:8000/agentic_chat).");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("The agent URL must be http:// or https://.");
  return v;
}

/** Starts a relay run and selects it; with `adopt` the message box continues its thread. */
export async function startRelay(url, input, { adopt }) {
  const headers = parseHeaders();
  const format = $("format-select").value;
  const res = await api("/api/runs", { method: "POST", json: { url, headers, input, format } });
  const { id } = await res.json();
  const rid = String(id);
  if (adopt) {
    if (typeof input.threadId === "string" && input.threadId) thread.id = input.threadId;
    thread.lastRunId = rid;
    thread.lastInput = input;
    thread.messages = Array.isArray(input.messages) ? input.messages : [];
    thread.state = input.state ?? {};
    thread.synced = false;
  }
  thread.nextRunId = uuid();
  thread.nextMessageId = uuid();
  knownRunIds?.add(rid);
  runsById.set(rid, {
    id: rid, source: "relay", label: `POST ${safePath(url)}`, url, format, status: "running", stopped: false, error: null,
    events: 0, bytes: 0, startedAt: Date.now(), firstEventMs: null, durationMs: 0, eventsPerSec: 0, findings: 0,
    threadId: input.threadId ?? null, input,
  });
  if (!runOrder.includes(rid)) runOrder.push(rid);
  selectRun(rid);
  pollRuns();
  return rid;
}

function safePath(url) {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

export async function onRun() {
  if (starting) return;
  let url;
  let input;
  try {
    url = agentUrl();
    parseHeaders();
  } catch (e) {
    toast(e.message);
    return;
  }
  starting = true;
  $("run-button").disabled = true;
  try {
    if (inputDirty) {
      try {
        input = JSON.parse($("input-json").value);
      } catch (e) {
        $("input-error").textContent = `Not JSON: ${e.message}`;
        showTab("input");
        throw new Error(`The edited input is not JSON: ${e.message}`);
      }
      if (!input || typeof input !== "object" || Array.isArray(input)) throw new Error("The edited input must be a JSON object (a RunAgentInput).");
    } else {
      await syncThread();
      input = buildInput();
    }
    await startRelay(url, input, { adopt: true });
    $("message-input").value = "";
    autoGrow();
    inputDirty = false;
    $("input-error").textContent = "";
    refreshPreview();
  } catch (e) {
    toast(e.message);
  } finally {
    starting = false;
    $("run-button").disabled = false;
  }
}

export async function onStop() {
  if (!cur) return;
  try {
    await api(`/api/runs/${encodeURIComponent(cur.id)}/stop`, { method: "POST" });
  } catch (e) {
    toast(`Stop: ${e.message}`);
  }
}

export async function onResend() {
  const s = currentSummary();
  if (!s?.input) return;
  try {
    await startRelay(agentUrl(), s.input, { adopt: false });
  } catch (e) {
    toast(`Re-send: ${e.message}`);
  }
}

export async function onContinue() {
  const s = currentSummary();
  if (!s || !cur) return;
  const input = s.input || {};
  let messages = cur.view?.messages;
  let state = cur.view?.state;
  if (!cur.view && s.events > 0) {
    try {
      const d = await (await api(`/api/runs/${encodeURIComponent(cur.id)}/events/${s.events - 1}`)).json();
      messages = d.messages;
      state = d.state;
    } catch (e) {
      toast(`Continue: ${e.message}`);
      return;
    }
  }
  thread.id = s.threadId || input.threadId || uuid();
  thread.messages = conversationAfter(input, messages);
  thread.state = state ?? input.state ?? {};
  thread.lastRunId = cur.id;
  thread.lastInput = input;
  thread.synced = s.status !== "running";
  if (s.url && s.source !== "recording") $("agent-url").value = s.url;
  inputDirty = false;
  refreshPreview();
  $("message-input").focus();
  toast(`The message box now continues thread ${shortId(thread.id)} (${thread.messages.length} messages).`, "info", 3000);
}

export function onNewThread() {
  thread.id = uuid();
  thread.messages = [];
  thread.state = {};
  thread.lastRunId = null;
  thread.lastInput = null;
  thread.synced = true;
  thread.nextRunId = uuid();
  thread.nextMessageId = uuid();
  inputDirty = false;
  $("input-error").textContent = "";
  refreshPreview();
  $("message-input").focus();
}

function autoGrow() {
  const ta = $("message-input");
  ta.style.height = "auto";
  ta.style.height = `${Math.min(160, ta.scrollHeight + 2)}px`;
}

/** The message box, the Input tab's editor and the headers popover. */
export function wireInput() {
  const msg = $("message-input");
  let previewTimer = 0;
  msg.addEventListener("input", () => {
    autoGrow();
    clearTimeout(previewTimer);
    previewTimer = setTimeout(refreshPreview, 120);
  });
  msg.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      refreshPreview();
      onRun();
    }
  });

  $("input-json").addEventListener("input", () => {
    if (!inputDirty) {
      inputDirty = true;
      refreshPreview();
    }
    $("input-error").textContent = "";
  });
  $("input-reset").addEventListener("click", () => {
    inputDirty = false;
    $("input-error").textContent = "";
    refreshPreview();
  });

  const pop = $("headers-panel");
  const toggle = $("headers-toggle");
  const setPop = (open) => {
    pop.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) $("headers-input").focus();
  };
  toggle.addEventListener("click", () => setPop(pop.hidden));
  document.addEventListener("mousedown", (e) => {
    if (!pop.hidden && !pop.contains(e.target) && !toggle.contains(e.target)) setPop(false);
  });
  $("headers-input").addEventListener("input", checkHeaders);
  $("headers-input").addEventListener("keydown", (e) => {
    if (e.key === "Escape") setPop(false);
  });
}
