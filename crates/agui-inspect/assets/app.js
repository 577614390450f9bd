// agui inspect — the page. Plain JavaScript, no dependencies; talks only to the
// inspector's own origin (see API.md next to this folder for the contract).

"use strict";

// ---------------------------------------------------------------- small helpers

const $ = (id) => document.getElementById(id);

/** Creates an element: h("div", {class: "x", dataset: {a: 1}, onclick}, child, "text"). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

const nf0 = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const nf1 = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 });
const nf2 = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 });

function fmtMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 10) return nf2.format(ms);
  if (ms < 1000) return nf1.format(ms);
  return nf0.format(ms);
}
function fmtDuration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1000) return `${fmtMs(ms)} ms`;
  if (ms < 60_000) return `${nf2.format(ms / 1000)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}
function fmtBytes(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${nf1.format(n / 1e3)} kB`;
  if (n < 1e9) return `${nf1.format(n / 1e6)} MB`;
  return `${nf2.format(n / 1e9)} GB`;
}
function fmtClock(ms) {
  if (!ms) return "";
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false });
}
const shortId = (s) => (s && s.length > 12 ? `${s.slice(0, 8)}…` : s || "");

function uuid() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  // Pages served on a non-loopback address are not a secure context: build a v4 uuid.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** Pretty JSON as highlighted HTML (escaped), or plain text when it is huge. */
const JSON_TOKEN = /("(?:[^"\\\n]|\\.)*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
function setJson(el, value) {
  let text;
  try {
    text = value === undefined ? "undefined" : JSON.stringify(value, null, 2);
  } catch (e) {
    text = String(value);
  }
  el.dataset.raw = "";
  el._raw = text;
  if (text.length > 300_000) {
    el.textContent = text;
    return;
  }
  let out = "";
  let last = 0;
  JSON_TOKEN.lastIndex = 0;
  let m;
  while ((m = JSON_TOKEN.exec(text))) {
    out += esc(text.slice(last, m.index));
    if (m[1] !== undefined) {
      out += m[2] !== undefined
        ? `<span class="j-key">${esc(m[1])}</span>${esc(m[2])}`
        : `<span class="j-str">${esc(m[1])}</span>`;
    } else if (m[3] !== undefined) {
      out += `<span class="j-lit">${m[3]}</span>`;
    } else {
      out += `<span class="j-num">${m[4]}</span>`;
    }
    last = JSON_TOKEN.lastIndex;
  }
  out += esc(text.slice(last));
  el.innerHTML = out;
}

function toast(message, kind = "error", ms = 7000) {
  const el = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status", text: message });
  el.addEventListener("click", () => el.remove());
  $("toasts").append(el);
  while ($("toasts").children.length > 4) $("toasts").firstChild.remove();
  setTimeout(() => el.remove(), ms);
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    toast("Copied.", "info", 1500);
  } catch {
    toast("The clipboard is not available here.");
  }
}

// ---------------------------------------------------------------- the API

const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
const TOKEN = hash.get("token") || "";
const HASH_URL = hash.get("url") || "";
const FALLBACK_URL = "http://127.0.0.1:8000/agentic_chat";

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls the inspector's API with the token header; throws ApiError on a 4xx/5xx. */
async function api(path, { method = "GET", json, body, headers = {}, signal } = {}) {
  const h2 = { "X-Agui-Token": TOKEN, ...headers };
  if (json !== undefined) {
    h2["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  const res = await fetch(path, { method, headers: h2, body, signal, cache: "no-store", credentials: "omit" });
  if (!res.ok) {
    let err = null;
    try {
      err = await res.json();
    } catch {
      /* not JSON */
    }
    const code = err?.error || `http_${res.status}`;
    let msg = err?.message || res.statusText || `HTTP ${res.status}`;
    if (res.status === 401) msg = `${msg} — open the exact address agui inspect printed (it carries #token=…)`;
    throw new ApiError(res.status, code, `${code}: ${msg}`);
  }
  return res;
}

// ---------------------------------------------------------------- page state

const ROW_H = 22;
const OVERSCAN = 12;

/** Event types are interned: one small integer per distinct type. */
const typeNames = [];
const typeIds = new Map();
const typeClasses = [];
function internType(name) {
  let id = typeIds.get(name);
  if (id === undefined) {
    id = typeNames.length;
    typeNames.push(name);
    typeIds.set(name, id);
    typeClasses.push(typeClass(name));
    $("event-types").append(h("option", { value: name }));
    filter.matchByType.push(matchesFilter(name));
  }
  return id;
}
function typeClass(name) {
  if (name === "RUN_ERROR" || name === "SUBAGENT_ERROR") return "ty-err";
  if (name.startsWith("RUN_")) return "ty-life";
  if (name.startsWith("TEXT_")) return "ty-text";
  if (name.startsWith("TOOL_")) return "ty-tool";
  if (name.startsWith("STATE_") || name === "MESSAGES_SNAPSHOT") return "ty-state";
  if (name.startsWith("REASONING_") || name.startsWith("THINKING_")) return "ty-reason";
  if (name.startsWith("ACTIVITY_")) return "ty-activity";
  if (name.startsWith("SUBAGENT_")) return "ty-sub";
  if (name.startsWith("STEP_")) return "ty-step";
  return "ty-other";
}

const filter = { inc: [], exc: [], onlyFindings: false, matchByType: [] };
function matchesFilter(name) {
  return (filter.inc.length === 0 || filter.inc.some((t) => name.includes(t))) && !filter.exc.some((t) => name.includes(t));
}

const runsById = new Map(); // id -> RunSummary, from the poll and the feeds
let runOrder = []; // ids, oldest first
let knownRunIds = null; // ids seen by the poll (null before the first poll)
let info = null;

/** The selected run and everything its feed has delivered. */
let cur = null;
function newRunData(id) {
  return {
    id,
    idx: [],
    type: [],
    t: [],
    size: [],
    filtered: null, // positions after filtering, or null when nothing is filtered
    findings: [],
    findingSev: new Map(), // raw index -> "error" | "warning"
    view: null,
    ended: false,
    selected: null, // raw index of the selected event
    detail: null, // GET /api/runs/{id}/events/{index} of the selected event
    detailAbort: null,
    follow: true,
    abort: new AbortController(),
  };
}

/** The conversation the message box continues. */
const thread = {
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

// ---------------------------------------------------------------- render scheduling

const dirty = new Set();
let frame = 0;
function schedule(...what) {
  for (const w of what) dirty.add(w);
  if (!frame) frame = requestAnimationFrame(renderDirty);
}
function renderDirty() {
  frame = 0;
  const d = new Set(dirty);
  dirty.clear();
  try {
    if (d.has("summary")) renderSummary();
    if (d.has("timeline")) renderTimeline();
    if (d.has("messages")) renderMessages();
    if (d.has("state")) renderState();
    if (d.has("findings")) renderFindings();
    if (d.has("interrupt")) renderInterrupt();
    if (d.has("event")) renderEvent();
    if (d.has("runs")) renderRunList();
    if (d.has("thread")) renderThread();
  } catch (e) {
    console.error(e);
  }
}

// ---------------------------------------------------------------- runs: poll, list, select

function mergeSummary(s) {
  if (!s || s.id === undefined || s.id === null) return null;
  s.id = String(s.id);
  const old = runsById.get(s.id);
  const terminal = (st) => st && st !== "running";
  if (old) {
    if (terminal(old.status) && !terminal(s.status)) return old;
    if (!terminal(s.status) && (s.durationMs ?? 0) < (old.durationMs ?? 0)) return old;
  }
  runsById.set(s.id, s);
  if (!runOrder.includes(s.id)) runOrder.push(s.id);
  if (cur && cur.id === s.id) schedule("summary");
  schedule("runs");
  return s;
}

let polling = false;
async function pollRuns() {
  if (polling) return;
  polling = true;
  try {
    const res = await api("/api/runs");
    const { runs = [] } = await res.json();
    const ids = runs.map((r) => String(r.id));
    const first = knownRunIds === null;
    const fresh = first ? [] : runs.filter((r) => !knownRunIds.has(String(r.id)));
    knownRunIds = new Set([...(knownRunIds || []), ...ids]);
    for (const r of runs) mergeSummary(r);
    // Runs the inspector forgot leave the list (the selected one stays until replaced).
    runOrder = runOrder.filter((id) => ids.includes(id) || id === cur?.id);
    for (const id of [...runsById.keys()]) if (!runOrder.includes(id)) runsById.delete(id);
    schedule("runs");
    if (first) {
      if (!cur && runs.length) selectRun(String(runs[runs.length - 1].id));
    } else {
      const proxied = fresh.filter((r) => r.source === "proxy");
      if (proxied.length) selectRun(String(proxied[proxied.length - 1].id));
    }
    pollFailures = 0;
  } catch (e) {
    pollFailures++;
    if (pollFailures === 1 || pollFailures % 30 === 0) toast(`Cannot list runs: ${e.message}`);
  } finally {
    polling = false;
  }
}
let pollFailures = 0;

let runListKey = "";
function renderRunList() {
  const list = $("run-list");
  const runs = runOrder.map((id) => runsById.get(id)).filter(Boolean).reverse();
  const key = JSON.stringify([cur?.id, runs.map((r) => [r.id, r.status, r.events, r.findings, Math.round(r.durationMs ?? 0), r.label, r.stopped])]);
  if (key === runListKey) return;
  runListKey = key;
  list.replaceChildren(
    ...runs.map((r) =>
      h(
        "li",
        {
          class: "run-item",
          "data-testid": "run-item",
          "data-run-id": r.id,
          "data-source": r.source,
          "data-status": r.status,
          role: "option",
          "aria-selected": String(cur?.id === r.id),
          title: [r.label, r.url, r.threadId && `thread ${r.threadId}`, r.error].filter(Boolean).join("\n"),
        },
        h("span", { class: "dot" }),
        h("span", { class: "label", text: r.label || `run ${r.id}` }),
        h("span", { class: `tag src-${r.source}`, text: r.source === "recording" ? "rec" : r.source }),
        h(
          "span",
          { class: "sub" },
          h("span", { text: `#${r.id}` }),
          h("span", { text: fmtClock(r.startedAt) }),
          h("span", { text: `${nf0.format(r.events ?? 0)} ev` }),
          r.source === "recording" ? null : h("span", { text: fmtDuration(r.durationMs) }),
          r.findings ? h("span", { class: "count err", title: `${r.findings} finding${r.findings === 1 ? "" : "s"}`, text: String(r.findings) }) : null,
          r.stopped ? h("span", { text: "stopped" }) : null,
        ),
      ),
    ),
  );
}

function selectRun(id, { force = false, attempt = 0 } = {}) {
  id = String(id);
  if (cur && cur.id === id && !force) return;
  if (cur) {
    cur.abort.abort();
    cur.detailAbort?.abort();
  }
  const summary = runsById.get(id);
  cur = newRunData(id);
  cur.follow = !summary || summary.status === "running";
  setScrollTop(0);
  recomputeFilter();
  msgCache.clear();
  $("messages").replaceChildren();
  interruptKey = "";
  schedule("summary", "timeline", "messages", "state", "findings", "interrupt", "event", "runs");
  readFeed(cur, attempt);
}

async function readFeed(run, attempt = 0) {
  const signal = run.abort.signal;
  try {
    const res = await api(`/api/runs/${encodeURIComponent(run.id)}/feed`, { signal });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let pending = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (cur !== run) return;
      const text = decoder.decode(value, { stream: true });
      let start = 0;
      let nl;
      while ((nl = text.indexOf("\n", start)) !== -1) {
        let line = text.slice(start, nl);
        start = nl + 1;
        if (pending.length) {
          pending.push(line);
          line = pending.join("");
          pending = [];
        }
        if (line.trim()) handleFeedLine(run, line);
      }
      if (start < text.length) pending.push(text.slice(start));
    }
    const tail = pending.join("") + decoder.decode();
    if (tail.trim()) handleFeedLine(run, tail);
  } catch (e) {
    if (signal.aborted || cur !== run) return;
    if (e instanceof ApiError && (e.status === 404 || e.status === 401 || e.status === 403)) {
      toast(`Cannot follow run ${run.id}: ${e.message}`);
      return;
    }
  }
  if (signal.aborted || cur !== run || run.ended) return;
  // The feed broke off before its end: start over (it replays from the run's start).
  setTimeout(() => {
    if (cur === run && !run.abort.signal.aborted) selectRun(run.id, { force: true, attempt: attempt + 1 });
  }, Math.min(5000, 500 * 2 ** attempt));
}

function handleFeedLine(run, line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    console.warn("feed: a line that is not JSON", line.slice(0, 200));
    return;
  }
  switch (msg.kind) {
    case "events":
      appendEvents(run, msg.items || []);
      break;
    case "findings":
      appendFindings(run, msg.items || []);
      break;
    case "view":
      run.view = msg;
      if (msg.summary) mergeSummary(msg.summary);
      absorbView(run.id, msg);
      schedule("messages", "state", "interrupt", "summary");
      break;
    case "end":
      run.ended = true;
      if (msg.summary) mergeSummary(msg.summary);
      if (thread.lastRunId === run.id) thread.synced = true;
      schedule("summary", "timeline", "interrupt", "messages");
      break;
    default:
      break;
  }
}

function appendEvents(run, items) {
  const filtered = run.filtered;
  for (const e of items) {
    const pos = run.idx.length;
    const ty = internType(String(e.type));
    run.idx.push(e.index);
    run.type.push(ty);
    run.t.push(e.t);
    run.size.push(e.size);
    if (filtered && rowMatches(run, pos)) filtered.push(pos);
  }
  schedule("timeline");
}

function appendFindings(run, items) {
  for (const f of items) {
    run.findings.push(f);
    const prev = run.findingSev.get(f.index);
    if (prev !== "error") run.findingSev.set(f.index, f.severity === "error" ? "error" : "warning");
  }
  if (filter.onlyFindings) recomputeFilter();
  schedule("timeline", "findings");
  if (run.selected !== null && items.some((f) => f.index === run.selected)) schedule("event");
}

// ---------------------------------------------------------------- summary, figures, run header

function currentSummary() {
  return cur ? runsById.get(cur.id) || cur.view?.summary || null : null;
}

function renderSummary() {
  const s = currentSummary();
  const status = $("status");
  const st = s?.status || "";
  status.textContent = st;
  status.dataset.status = st || "idle";
  status.title = s?.error || "";
  $("stopped-tag").hidden = !s?.stopped;
  $("stop-button").disabled = !s || s.status !== "running";

  const fig = $("figures");
  if (!s) {
    fig.replaceChildren();
  } else {
    Object.assign(fig.dataset, {
      events: String(s.events ?? 0),
      bytes: String(s.bytes ?? 0),
      firstEventMs: String(s.firstEventMs ?? ""),
      eventsPerSec: String(s.eventsPerSec ?? ""),
      durationMs: String(s.durationMs ?? ""),
    });
    const f = (label, value, opt) => h("span", { class: opt ? "fig-opt" : "" }, `${label} `, h("b", { text: value }));
    fig.replaceChildren(
      f("events", nf0.format(s.events ?? 0)),
      f("bytes", fmtBytes(s.bytes)),
      f("first", s.firstEventMs === null || s.firstEventMs === undefined ? "–" : `${fmtMs(s.firstEventMs)} ms`, true),
      f("rate", s.eventsPerSec ? `${nf0.format(s.eventsPerSec)}/s` : "–"),
      f("time", fmtDuration(s.durationMs), true),
    );
  }

  $("run-label").textContent = s ? s.label || `run ${s.id}` : cur ? `run ${cur.id}` : "No run selected";
  const src = $("run-source");
  src.textContent = s?.source || "";
  src.className = `tag src-${s?.source || ""}`;
  $("run-url").textContent = s ? [s.url, s.format, s.threadId && `thread ${s.threadId}`].filter(Boolean).join(" · ") : "";
  $("run-url").title = $("run-url").textContent;
  const err = $("run-error");
  err.hidden = !s?.error;
  err.textContent = s?.error ? `error: ${s.error}` : "";
  const hasRun = !!cur;
  $("download-jsonl").disabled = !hasRun;
  $("download-sse").disabled = !hasRun;
  $("resend-button").disabled = !s?.input;
  $("continue-button").disabled = !s || s.status === "running";
  const n = cur?.findings.length || 0;
  const fc = $("findings-count");
  fc.textContent = n ? String(n) : "";
  fc.className = `count ${cur?.findings.some((f) => f.severity === "error") ? "err" : n ? "warn" : ""}`;
}

// ---------------------------------------------------------------- timeline (virtualised)

function rowMatches(run, pos) {
  if (!filter.matchByType[run.type[pos]]) return false;
  if (filter.onlyFindings && !run.findingSev.has(run.idx[pos])) return false;
  return true;
}

function recomputeFilter() {
  const text = $("timeline-filter").value.trim().toUpperCase();
  const toks = text.split(/[\s,|]+/).filter(Boolean);
  filter.inc = toks.filter((t) => !t.startsWith("-"));
  filter.exc = toks.filter((t) => t.startsWith("-")).map((t) => t.slice(1)).filter(Boolean);
  filter.onlyFindings = $("only-findings").checked;
  filter.matchByType = typeNames.map(matchesFilter);
  if (!cur) return;
  if (filter.inc.length === 0 && filter.exc.length === 0 && !filter.onlyFindings) {
    cur.filtered = null;
  } else {
    const out = [];
    const n = cur.idx.length;
    for (let p = 0; p < n; p++) if (rowMatches(cur, p)) out.push(p);
    cur.filtered = out;
  }
}

/** Applies the filter again, keeping the selected event (or the one at the top) in view. */
function refilterKeepingPlace() {
  if (!cur) {
    recomputeFilter();
    return;
  }
  const tl = $("timeline");
  const selPos = cur.selected !== null ? posOfIndex(cur.selected) : -1;
  const topRow = Math.floor(tl.scrollTop / ROW_H);
  const anchor = selPos >= 0 ? selPos : rowCount() > 0 ? posAt(Math.min(topRow, rowCount() - 1)) : 0;
  recomputeFilter();
  if (!cur.follow) {
    const row = firstRowAtOrAfter(anchor);
    if (selPos >= 0 && rowOfPos(selPos) >= 0) scrollRowIntoView(rowOfPos(selPos));
    else setScrollTop(row * ROW_H);
  }
  schedule("timeline");
}

/** The first row (after filtering) whose position is at least `pos`. */
function firstRowAtOrAfter(pos) {
  if (!cur.filtered) return Math.min(pos, Math.max(0, cur.idx.length - 1));
  const a = cur.filtered;
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] < pos) lo = mid + 1;
    else hi = mid;
  }
  return Math.min(lo, Math.max(0, a.length - 1));
}

const rowCount = () => (cur ? (cur.filtered ? cur.filtered.length : cur.idx.length) : 0);
const posAt = (row) => (cur.filtered ? cur.filtered[row] : row);

/** Position (into the run's arrays) of the event with this raw index, or -1. */
function posOfIndex(index) {
  const a = cur.idx;
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] === index) return mid;
    if (a[mid] < index) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
/** Row (after filtering) showing position `pos`, or -1. */
function rowOfPos(pos) {
  if (pos < 0) return -1;
  if (!cur.filtered) return pos;
  const a = cur.filtered;
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] === pos) return mid;
    if (a[mid] < pos) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

let expectedScrollTop = -1;
function setScrollTop(v) {
  const tl = $("timeline");
  expectedScrollTop = Math.max(0, Math.min(v, tl.scrollHeight - tl.clientHeight));
  tl.scrollTop = v;
}

const rowPool = [];
function makeRow() {
  const row = h(
    "div",
    { class: "tl-row", "data-testid": "timeline-event", role: "option" },
    h("span", { class: "c-idx" }),
    h("span", { class: "c-type" }),
    h("span", { class: "c-t" }),
    h("span", { class: "c-dt" }),
    h("span", { class: "c-size" }),
    h("span", { class: "c-mark" }),
  );
  return row;
}

function renderTimeline() {
  const tl = $("timeline");
  const count = rowCount();
  const total = cur ? cur.idx.length : 0;
  $("timeline-spacer").style.height = `${count * ROW_H}px`;
  tl.dataset.count = String(count);
  tl.dataset.total = String(total);
  $("timeline-empty").hidden = count > 0;
  $("timeline-empty").textContent = total > 0 ? "No event matches the filter." : cur ? "Waiting for events…" : "Events appear here as they arrive.";
  $("timeline-counts").textContent = cur ? (count === total ? `${nf0.format(total)}` : `${nf0.format(count)} / ${nf0.format(total)}`) : "";
  const followBtn = $("follow-button");
  followBtn.setAttribute("aria-pressed", String(!!cur?.follow));

  if (cur?.follow && count > 0) {
    const bottom = count * ROW_H - tl.clientHeight;
    if (bottom > 0 && Math.abs(tl.scrollTop - bottom) > 1) setScrollTop(bottom);
  }

  const top = tl.scrollTop;
  const height = tl.clientHeight || 400;
  const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
  const last = Math.min(count, Math.ceil((top + height) / ROW_H) + OVERSCAN);
  const layer = $("timeline-rows");
  layer.style.transform = `translateY(${first * ROW_H}px)`;
  const need = Math.max(0, last - first);
  while (rowPool.length < need) rowPool.push(makeRow());
  if (layer.childElementCount !== need) layer.replaceChildren(...rowPool.slice(0, need));
  for (let i = 0; i < need; i++) {
    const row = rowPool[i];
    const pos = posAt(first + i);
    const index = cur.idx[pos];
    const ty = cur.type[pos];
    const name = typeNames[ty];
    const t = cur.t[pos];
    const dt = pos > 0 ? t - cur.t[pos - 1] : t;
    const sev = cur.findingSev.get(index);
    const c = row.children;
    row.dataset.index = String(index);
    row.dataset.eventType = name;
    if (sev) row.dataset.finding = sev;
    else delete row.dataset.finding;
    row.setAttribute("aria-selected", String(cur.selected === index));
    row.classList.toggle("odd", (first + i) % 2 === 1);
    c[0].textContent = String(index);
    c[1].textContent = name;
    c[1].className = `c-type ${typeClasses[ty]}`;
    c[2].textContent = fmtMs(t);
    c[3].textContent = fmtMs(dt);
    c[3].className = dt >= 1000 ? "c-dt slow" : "c-dt";
    c[4].textContent = fmtBytes(cur.size[pos]);
    c[5].textContent = sev ? "●" : "";
    c[5].title = sev ? findingsAt(index).map((f) => `${f.severity} (${f.stage}): ${f.message}`).join("\n") : "";
  }
}

function findingsAt(index) {
  return cur ? cur.findings.filter((f) => f.index === index) : [];
}

function scrollRowIntoView(row) {
  const tl = $("timeline");
  const top = row * ROW_H;
  if (top < tl.scrollTop) setScrollTop(top);
  else if (top + ROW_H > tl.scrollTop + tl.clientHeight) setScrollTop(top + ROW_H - tl.clientHeight);
}

function onTimelineScroll() {
  if (!cur) return;
  const tl = $("timeline");
  if (expectedScrollTop >= 0 && Math.abs(tl.scrollTop - expectedScrollTop) <= 1) {
    expectedScrollTop = -1;
  } else {
    expectedScrollTop = -1;
    const atBottom = tl.scrollTop + tl.clientHeight >= tl.scrollHeight - ROW_H;
    cur.follow = atBottom && currentSummary()?.status === "running";
  }
  schedule("timeline");
}

function moveSelection(delta) {
  if (!cur) return;
  const count = rowCount();
  if (!count) return;
  let row = cur.selected === null ? -1 : rowOfPos(posOfIndex(cur.selected));
  if (row < 0) row = delta > 0 ? -1 : count;
  const next = Math.max(0, Math.min(count - 1, row + delta));
  selectEvent(cur.idx[posAt(next)], { scroll: true, delay: 80 });
}

// ---------------------------------------------------------------- event selection and detail

let detailTimer = 0;
function selectEvent(index, { scroll = false, delay = 0 } = {}) {
  if (!cur) return;
  if (index === null) {
    cur.selected = null;
    cur.detail = null;
    cur.detailAbort?.abort();
    schedule("timeline", "event", "messages", "state");
    return;
  }
  cur.selected = index;
  cur.follow = false;
  if (scroll) {
    let row = rowOfPos(posOfIndex(index));
    if (row < 0 && (cur.filtered && posOfIndex(index) >= 0)) {
      // Filtered out: clear the filter so that the event shows.
      $("timeline-filter").value = "";
      $("only-findings").checked = false;
      recomputeFilter();
      row = rowOfPos(posOfIndex(index));
    }
    if (row >= 0) scrollRowIntoView(row);
  }
  schedule("timeline", "event", "findings");
  // Each detail replays the run up to the event on the server: while the keyboard
  // walks the timeline, only the event it rests on is asked for.
  clearTimeout(detailTimer);
  cur.detailAbort?.abort();
  const run = cur;
  if (delay > 0) detailTimer = setTimeout(() => run === cur && run.selected === index && loadDetail(run, index), delay);
  else loadDetail(run, index);
}

async function loadDetail(run, index) {
  run.detailAbort?.abort();
  const ac = new AbortController();
  run.detailAbort = ac;
  try {
    const res = await api(`/api/runs/${encodeURIComponent(run.id)}/events/${index}`, { signal: ac.signal });
    const detail = await res.json();
    if (run !== cur || run.selected !== index) return;
    run.detail = detail;
    schedule("event", "messages", "state");
  } catch (e) {
    if (ac.signal.aborted || run !== cur) return;
    run.detail = { index, error: e.message };
    schedule("event", "messages", "state");
  }
}

function findingRow(f, onclick) {
  return h(
    "div",
    {
      class: "finding",
      "data-testid": "finding",
      "data-index": String(f.index),
      "data-severity": f.severity,
      "data-stage": f.stage,
      title: onclick ? `Select event #${f.index}` : undefined,
      onclick,
    },
    h("span", { class: "sev", text: f.severity === "error" ? "×" : "!" }),
    h("span", { class: "fidx", text: `#${f.index}` }),
    h("span", { class: "stage", text: f.stage }),
    h("span", { class: "fmsg", text: f.message }),
  );
}

function renderEvent() {
  const pre = $("event-json");
  const title = $("event-title");
  const box = $("event-findings");
  const d = cur?.selected !== null && cur?.detail?.index === cur?.selected ? cur.detail : null;
  $("event-copy").disabled = !d || !!d.error;
  if (!cur || cur.selected === null) {
    pre.textContent = "";
    title.textContent = "";
    box.replaceChildren();
    $("event-empty").hidden = false;
    $("event-empty").textContent = "Select an event: click a row, or use ↑ ↓ in the timeline.";
    return;
  }
  const pos = posOfIndex(cur.selected);
  const name = pos >= 0 ? typeNames[cur.type[pos]] : d?.type || "";
  const t = pos >= 0 ? cur.t[pos] : d?.t;
  const size = pos >= 0 ? cur.size[pos] : d?.size;
  title.textContent = `#${cur.selected} ${name} · t ${fmtMs(t)} ms · ${fmtBytes(size)}`;
  // Findings at this index are known from the feed even before the detail arrives.
  box.replaceChildren(...findingsAt(cur.selected).map((f) => findingRow(f)));
  if (!d) {
    pre.textContent = "";
    $("event-empty").hidden = false;
    $("event-empty").textContent = "Loading…";
    return;
  }
  if (d.error) {
    pre.textContent = "";
    $("event-empty").hidden = false;
    $("event-empty").textContent = pos < 0 ? `No decoded event at #${cur.selected} (see its finding).` : d.error;
    return;
  }
  $("event-empty").hidden = true;
  setJson(pre, d.event);
}

// ---------------------------------------------------------------- conversation helpers

/** The conversation after a run: what it was sent that the reducer did not repeat, then the reducer's messages. */
function conversationAfter(input, messages) {
  const vm = Array.isArray(messages) ? messages : [];
  const ids = new Set(vm.map((m) => m?.id));
  const prior = (Array.isArray(input?.messages) ? input.messages : []).filter((m) => !ids.has(m?.id));
  return [...prior, ...vm];
}

function absorbView(runId, view) {
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

// ---------------------------------------------------------------- messages

const msgCache = new Map(); // key -> {el, sig}
const MAX_TEXT = 100_000;

function textBlock(text, streaming) {
  const s = String(text ?? "");
  const body = h("div", { class: `msg-body${streaming ? " streaming" : ""}` });
  if (s.length > MAX_TEXT) {
    body.textContent = `${s.slice(0, MAX_TEXT)}…`;
    const more = h("button", { class: "btn small show-all", type: "button", text: `Show all ${nf0.format(s.length)} characters` });
    more.addEventListener("click", () => {
      body.textContent = s;
      more.remove();
    });
    return h("div", null, body, more);
  }
  body.textContent = s;
  return body;
}

function contentNode(content, streaming) {
  if (typeof content === "string") return textBlock(content, streaming);
  if (Array.isArray(content)) {
    return h(
      "div",
      null,
      content.map((p) => {
        if (p && p.type === "text") return textBlock(p.text, false);
        if (p && typeof p === "object" && p.source) {
          const src = p.source;
          const where = src.type === "data" ? `inline ${fmtBytes(Math.floor(((src.value || "").length * 3) / 4))}` : `${src.type} ${src.value ?? ""}`;
          return h("div", { class: "part-media", text: `[${p.type}${src.mimeType ? ` ${src.mimeType}` : ""} · ${where}]` });
        }
        const pre = h("pre", { class: "json" });
        setJson(pre, p);
        return pre;
      }),
    );
  }
  if (content === undefined || content === null) return null;
  const pre = h("pre", { class: "json" });
  setJson(pre, content);
  return pre;
}

function prettyArgs(text) {
  const pre = h("pre", { class: "json" });
  try {
    setJson(pre, JSON.parse(text));
  } catch {
    pre.textContent = text ?? "";
  }
  return pre;
}

function buildMessage(m, ctx, streaming) {
  const role = typeof m?.role === "string" ? m.role : "unknown";
  const known = ["user", "assistant", "tool", "reasoning", "activity", "system", "developer"].includes(role);
  const head = h(
    "div",
    { class: "msg-head" },
    h("span", { class: "role", text: role }),
    m.name ? h("span", { text: m.name }) : null,
    m.activityType ? h("span", { class: "tag", text: m.activityType }) : null,
    role === "tool" && m.toolCallId ? h("span", { text: `→ ${ctx.callNames.get(m.toolCallId) || "call"} ${shortId(m.toolCallId)}` }) : null,
    m.subagentRunId ? h("span", { class: "subtag", title: `subagent run ${m.subagentRunId}`, text: `subagent ${shortId(m.subagentRunId)}` }) : null,
    m.encryptedValue ? h("span", { class: "enc", title: `${m.encryptedValueType || "encrypted value"}: ${String(m.encryptedValue).slice(0, 80)}`, text: "encrypted" }) : null,
    h("span", { class: "mid", title: m.id, text: m.id ?? "" }),
  );
  const el = h("div", {
    class: `msg${m.subagentRunId ? " subagent" : ""}`,
    "data-testid": "message",
    "data-role": role,
    "data-message-id": m.id ?? "",
  }, head);
  if (!known) {
    const rest = { ...m };
    delete rest.id;
    delete rest.role;
    const pre = h("pre", { class: "json" });
    setJson(pre, rest);
    el.append(pre);
    return el;
  }
  const hasCalls = role === "assistant" && Array.isArray(m.toolCalls) && m.toolCalls.length > 0;
  if (role === "activity") {
    el.append(contentNode(m.content ?? {}, false));
  } else if (m.content !== undefined && m.content !== null && !(hasCalls && m.content === "")) {
    el.append(contentNode(m.content, streaming && !hasCalls));
  } else if (!hasCalls && streaming) {
    el.append(textBlock("", true));
  }
  if (role === "tool" && m.error) el.append(h("div", { class: "field-error", text: `error: ${m.error}` }));
  if (hasCalls) {
    for (const call of m.toolCalls) {
      const result = ctx.results.get(call.id);
      const box = h(
        "div",
        { class: "tool-call", "data-testid": "tool-call", "data-tool-name": call.function?.name ?? "" },
        h(
          "div",
          { class: "tool-call-head" },
          h("span", { text: "⚙" }),
          h("span", { class: "name", text: call.function?.name ?? "(unnamed)" }),
          h("span", { class: `tool-state ${result ? "done" : "pending"}`, text: result ? "answered" : "no result yet" }),
          h("span", { class: "cid", title: call.id, text: shortId(call.id) }),
        ),
        prettyArgs(call.function?.arguments ?? ""),
      );
      if (result) {
        const r = h("div", { class: "result" }, h("div", { class: "result-label", text: `result (${shortId(result.id)})` }));
        const c = typeof result.content === "string" ? prettyArgs(result.content) : contentNode(result.content, false);
        if (c) r.append(c);
        box.append(r);
      }
      el.append(box);
    }
  }
  return el;
}

function messagesSource() {
  if (!cur) return { messages: [], atEvent: null };
  const input = currentSummary()?.input;
  if (cur.selected !== null) {
    const d = cur.detail;
    if (d && d.index === cur.selected && !d.error) return { messages: conversationAfter(input, d.messages), atEvent: cur.selected, state: d.state, detail: d };
    if (d && d.index === cur.selected && d.error) return { messages: [], atEvent: cur.selected, error: d.error };
    return null; // loading: keep what is shown
  }
  const v = cur.view;
  return { messages: conversationAfter(input, v?.messages), atEvent: null, state: v ? v.state : input?.state ?? null, view: v };
}

function renderMessages() {
  const src = messagesSource();
  renderAtEvent(src);
  if (!src) return;
  const box = $("messages");
  const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 30;
  const list = src.messages;
  const running = src.atEvent === null && currentSummary()?.status === "running";
  const ctx = { results: new Map(), callNames: new Map() };
  for (const m of list) {
    if (m?.role === "tool" && m.toolCallId) ctx.results.set(m.toolCallId, m);
    if (m?.role === "assistant" && Array.isArray(m.toolCalls)) for (const c of m.toolCalls) ctx.callNames.set(c.id, c.function?.name);
  }
  const seen = new Set();
  const occurrences = new Map();
  let prev = null;
  list.forEach((m, i) => {
    const base = `${m?.id ?? ""}|${m?.role ?? ""}`;
    const n = occurrences.get(base) || 0;
    occurrences.set(base, n + 1);
    const key = `${base}|${n}`;
    const streaming = running && i === list.length - 1 && (m?.role === "assistant" || m?.role === "reasoning");
    let extra = "";
    if (m?.role === "assistant" && Array.isArray(m.toolCalls)) extra = JSON.stringify(m.toolCalls.map((c) => ctx.results.get(c.id) ?? null));
    if (m?.role === "tool") extra = ctx.callNames.get(m.toolCallId) ?? "";
    const sig = `${JSON.stringify(m)}${extra}${streaming ? "|s" : ""}`;
    let entry = msgCache.get(key);
    if (!entry || entry.sig !== sig) {
      const el = buildMessage(m ?? {}, ctx, streaming);
      if (entry) entry.el.replaceWith(el);
      entry = { el, sig };
      msgCache.set(key, entry);
    }
    const expected = prev ? prev.nextSibling : box.firstChild;
    if (expected !== entry.el) box.insertBefore(entry.el, expected);
    prev = entry.el;
    seen.add(key);
  });
  for (const [key, entry] of msgCache) {
    if (!seen.has(key)) {
      entry.el.remove();
      msgCache.delete(key);
    }
  }
  $("messages-count").textContent = list.length ? String(list.length) : "";
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function renderAtEvent(src) {
  const at = cur && cur.selected !== null ? cur.selected : null;
  $("at-event").hidden = at === null;
  $("at-event-index").textContent = at === null ? "" : `#${at}`;
}

// ---------------------------------------------------------------- state and diff

const OP_SYM = { add: "+", remove: "-", replace: "~", move: "→", copy: "⇒", test: "?" };

function diffRows(ops) {
  if (!Array.isArray(ops)) return [];
  return ops.map((op) => {
    const kind = String(op?.op ?? "?");
    let val = "";
    if (kind === "move" || kind === "copy") val = `from ${op.from}`;
    else if ("value" in (op || {})) {
      try {
        val = JSON.stringify(op.value);
      } catch {
        val = String(op.value);
      }
      if (val && val.length > 2000) val = `${val.slice(0, 2000)}…`;
    }
    return h(
      "div",
      { class: "diff-op", "data-testid": "diff-op", "data-op": kind, "data-path": op?.path ?? "" },
      h("span", { class: "sym", text: OP_SYM[kind] ?? "·" }),
      h("span", { class: "path", text: op?.path === "" ? "(root)" : op?.path ?? "" }),
      h("span", { class: "val", text: val }),
    );
  });
}

const sameJson = (a, b) => {
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
};

function renderState() {
  const src = messagesSource();
  if (!src) return;
  const pre = $("state");
  const diff = $("state-diff");
  if (!cur) {
    pre.textContent = "";
    diff.replaceChildren();
    $("diff-title").textContent = "Changes";
    return;
  }
  if (src.error) {
    pre.textContent = src.error;
    diff.replaceChildren();
    return;
  }
  const state = src.state === undefined ? null : src.state;
  const key = JSON.stringify([cur.id, src.atEvent]);
  if (pre._key !== key || !sameJson(pre._value, state)) {
    setJson(pre, state);
    pre._key = key;
    pre._value = state;
  }
  if (src.atEvent !== null) {
    const d = src.detail;
    $("diff-title").textContent = `Event #${d.index}: state before → after`;
    const parts = [];
    if (d.patch && !sameJson(d.patch, d.diff)) {
      parts.push(h("div", { class: "diff-section", text: "Patch as sent" }), ...diffRows(d.patch));
      parts.push(h("div", { class: "diff-section", text: "Diff of the state" }));
    }
    const ops = Array.isArray(d.diff) ? d.diff : [];
    if (ops.length) parts.push(...diffRows(ops));
    else parts.push(h("div", { class: "diff-section", text: "This event did not change the state." }));
    diff.replaceChildren(...parts);
    return;
  }
  const change = src.view?.stateChange;
  if (change) {
    const title = $("diff-title");
    title.replaceChildren(
      "Latest change: ",
      h("button", { class: "linkish", type: "button", text: `event #${change.index}`, onclick: () => selectEvent(change.index, { scroll: true }) }),
    );
    diff.replaceChildren(...diffRows(change.diff));
  } else {
    $("diff-title").textContent = "Changes";
    diff.replaceChildren();
  }
}

// ---------------------------------------------------------------- findings

const MAX_FINDINGS_SHOWN = 2000;
let findingsShown = -1;
function renderFindings() {
  const box = $("findings");
  if (!cur) {
    box.replaceChildren();
    findingsShown = -1;
    return;
  }
  const list = cur.findings;
  const rows = list.slice(0, MAX_FINDINGS_SHOWN).map((f) => {
    const row = findingRow(f, () => selectEvent(f.index, { scroll: true }));
    if (f.index === cur.selected) row.setAttribute("aria-current", "true");
    return row;
  });
  if (list.length > MAX_FINDINGS_SHOWN) rows.push(h("div", { class: "empty", text: `… and ${nf0.format(list.length - MAX_FINDINGS_SHOWN)} more (filter the timeline with “findings”)` }));
  box.replaceChildren(...rows);
  findingsShown = list.length;
  schedule("summary");
}

// ---------------------------------------------------------------- interrupts

let interruptKey = "";
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

function renderInterrupt() {
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

async function resumeInterrupts(status) {
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

// ---------------------------------------------------------------- input building and runs

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

function checkHeaders() {
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

function refreshPreview() {
  if (!inputDirty) {
    const text = JSON.stringify(buildInput(), null, 2);
    if ($("input-json").value !== text) $("input-json").value = text;
  }
  $("input-edited").hidden = !inputDirty;
  $("input-reset").disabled = !inputDirty;
  $("input-note").textContent = inputDirty ? "edited: sent as it is" : "built from the message box";
  schedule("thread");
}

function renderThread() {
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
async function startRelay(url, input, { adopt }) {
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

async function onRun() {
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

async function onStop() {
  if (!cur) return;
  try {
    await api(`/api/runs/${encodeURIComponent(cur.id)}/stop`, { method: "POST" });
  } catch (e) {
    toast(`Stop: ${e.message}`);
  }
}

async function onResend() {
  const s = currentSummary();
  if (!s?.input) return;
  try {
    await startRelay(agentUrl(), s.input, { adopt: false });
  } catch (e) {
    toast(`Re-send: ${e.message}`);
  }
}

async function onContinue() {
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

function onNewThread() {
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

// ---------------------------------------------------------------- recordings

async function openRecording(file) {
  if (!file) return;
  try {
    const res = await api(`/api/recordings?name=${encodeURIComponent(file.name || "recording")}`, {
      method: "POST",
      body: file,
      headers: { "Content-Type": "application/octet-stream" },
    });
    const { id } = await res.json();
    const rid = String(id);
    knownRunIds?.add(rid);
    try {
      mergeSummary(await (await api(`/api/runs/${encodeURIComponent(rid)}`)).json());
    } catch {
      /* the poll will bring it */
    }
    selectRun(rid);
    pollRuns();
  } catch (e) {
    toast(`Open recording ${file.name}: ${e.message}`);
  }
}

async function download(format) {
  if (!cur) return;
  try {
    const res = await api(`/api/runs/${encodeURIComponent(cur.id)}/recording?format=${format}`);
    const blob = await res.blob();
    const cd = res.headers.get("Content-Disposition") || "";
    const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd);
    let name = m ? decodeURIComponent(m[1]) : `agui-run-${cur.id}.${format === "sse" ? "sse" : "jsonl"}`;
    name = name.replace(/[\\/]/g, "_");
    const href = URL.createObjectURL(blob);
    const a = h("a", { href, download: name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(href), 30_000);
  } catch (e) {
    toast(`Download: ${e.message}`);
  }
}

// ---------------------------------------------------------------- tabs, popovers, keys

function showTab(name) {
  for (const t of document.querySelectorAll(".tab")) t.setAttribute("aria-selected", String(t.dataset.tab === name));
  for (const p of document.querySelectorAll(".tab-panel")) p.hidden = p.dataset.panel !== name;
}

function autoGrow() {
  const ta = $("message-input");
  ta.style.height = "auto";
  ta.style.height = `${Math.min(160, ta.scrollHeight + 2)}px`;
}

function wire() {
  $("run-button").addEventListener("click", onRun);
  $("stop-button").addEventListener("click", onStop);
  $("resend-button").addEventListener("click", onResend);
  $("continue-button").addEventListener("click", onContinue);
  $("new-thread-button").addEventListener("click", onNewThread);
  $("download-jsonl").addEventListener("click", () => download("jsonl"));
  $("download-sse").addEventListener("click", () => download("sse"));
  $("interrupt-submit").addEventListener("click", () => resumeInterrupts("resolved"));
  $("interrupt-cancel").addEventListener("click", () => resumeInterrupts("cancelled"));
  $("event-copy").addEventListener("click", () => copyText($("event-json")._raw || ""));
  $("state-copy").addEventListener("click", () => copyText($("state")._raw || ""));
  $("at-event-latest").addEventListener("click", () => selectEvent(null));

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

  for (const t of document.querySelectorAll(".tab")) t.addEventListener("click", () => showTab(t.dataset.tab));

  const tl = $("timeline");
  tl.addEventListener("scroll", onTimelineScroll, { passive: true });
  $("timeline-rows").addEventListener("click", (e) => {
    const row = e.target.closest(".tl-row");
    if (row && cur) {
      selectEvent(Number(row.dataset.index));
      tl.focus({ preventScroll: true });
    }
  });
  tl.addEventListener("keydown", (e) => {
    const page = Math.max(1, Math.floor(tl.clientHeight / ROW_H) - 1);
    const moves = { ArrowDown: 1, ArrowUp: -1, j: 1, k: -1, PageDown: page, PageUp: -page, End: 1e12, Home: -1e12 };
    if (e.key in moves) {
      e.preventDefault();
      moveSelection(moves[e.key]);
    } else if (e.key === "Escape") {
      selectEvent(null);
    }
  });
  $("follow-button").addEventListener("click", () => {
    if (!cur) return;
    cur.follow = !cur.follow;
    if (cur.follow) {
      selectEvent(null);
      cur.follow = true;
      setScrollTop(rowCount() * ROW_H);
    }
    schedule("timeline");
  });
  let filterTimer = 0;
  $("timeline-filter").addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(refilterKeepingPlace, 60);
  });
  $("only-findings").addEventListener("change", refilterKeepingPlace);

  $("run-list").addEventListener("click", (e) => {
    const item = e.target.closest(".run-item");
    if (item) selectRun(item.dataset.runId);
  });

  $("open-recording").addEventListener("change", (e) => {
    const file = e.target.files?.[0];
    openRecording(file);
    e.target.value = "";
  });

  // Drag and drop anywhere on the page opens the file as a recording.
  let dragDepth = 0;
  const hasFiles = (e) => [...(e.dataTransfer?.types || [])].includes("Files");
  window.addEventListener("dragenter", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    dragDepth++;
    $("drop-overlay").hidden = false;
  });
  window.addEventListener("dragover", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "copy";
  });
  window.addEventListener("dragleave", (e) => {
    if (!hasFiles(e)) return;
    dragDepth = Math.max(0, dragDepth - 1);
    if (dragDepth === 0) $("drop-overlay").hidden = true;
  });
  window.addEventListener("drop", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    dragDepth = 0;
    $("drop-overlay").hidden = true;
    const file = e.dataTransfer.files?.[0];
    if (file) openRecording(file);
  });

  document.addEventListener("keydown", (e) => {
    const inField = e.target.closest?.("input, textarea, select");
    if (e.key === "Escape" && !inField && cur?.selected !== null) selectEvent(null);
    if (e.key === "/" && !inField) {
      e.preventDefault();
      $("timeline-filter").focus();
    }
  });

  window.addEventListener("resize", () => schedule("timeline"));
  new ResizeObserver(() => schedule("timeline")).observe(tl);
}

// ---------------------------------------------------------------- start

async function init() {
  wire();
  refreshPreview();
  checkHeaders();
  schedule("summary", "timeline", "thread");
  if (HASH_URL) $("agent-url").value = HASH_URL;
  if (!TOKEN) toast("No token in the address: open the exact address agui inspect printed (it ends in #token=…).", "error", 60_000);
  try {
    info = await (await api("/api/info")).json();
    if (!HASH_URL) $("agent-url").value = info.defaultUrl || FALLBACK_URL;
    if (info.proxy) {
      const p = $("proxy-info");
      p.hidden = false;
      p.replaceChildren(
        "Proxy ",
        h("code", { text: `http://${info.proxy.listen}` }),
        " → ",
        h("code", { text: info.proxy.upstream }),
        h("div", { text: "Point a client at the proxy: its runs show up here." }),
      );
    }
    document.title = `agui inspect ${info.version ? `v${info.version}` : ""}`.trim();
  } catch (e) {
    if (!HASH_URL) $("agent-url").value = FALLBACK_URL;
    toast(`Cannot reach the inspector: ${e.message}`, "error", 60_000);
  }
  await pollRuns();
  setInterval(() => {
    if (!document.hidden) pollRuns();
  }, 1000);
  $("message-input").focus();
}

init();
