// The runs: those the inspector knows (polled each second and updated by the feeds),
// the run list, and the selected run with everything its feed has delivered.

import { $, h, toast } from "./dom.js";
import { nf0, fmtDuration, fmtClock } from "./format.js";
import { api } from "./api.js";
import { schedule } from "./schedule.js";
import { readFeed } from "./feed.js";
import { recomputeFilter, setScrollTop } from "./timeline.js";
import { msgCache } from "./messages.js";
import { resetInterruptPanel } from "./interrupts.js";

export const runsById = new Map(); // id -> RunSummary, from the poll and the feeds
export let runOrder = []; // ids, oldest first
export let knownRunIds = null; // ids seen by the poll (null before the first poll)

/** The selected run and everything its feed has delivered. */
export let cur = null;
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

/** The selected run's summary: from the poll, else from its feed's latest view. */
export function currentSummary() {
  return cur ? runsById.get(cur.id) || cur.view?.summary || null : null;
}

export function mergeSummary(s) {
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
export async function pollRuns() {
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
export function renderRunList() {
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

export function selectRun(id, { force = false, attempt = 0 } = {}) {
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
  resetInterruptPanel();
  schedule("summary", "timeline", "messages", "state", "findings", "interrupt", "event", "runs");
  readFeed(cur, attempt);
}
