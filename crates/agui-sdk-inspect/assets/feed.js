// The selected run's feed (GET /api/runs/{id}/feed): its lines of events, findings and
// views go into the run's columns, and a feed that breaks off is started over.

import { toast } from "./dom.js";
import { ApiError, api, readLines } from "./api.js";
import { schedule } from "./schedule.js";
import { cur, mergeSummary, selectRun } from "./runs.js";
import { internType, filter, rowMatches, recomputeFilter } from "./timeline.js";
import { thread, absorbView } from "./input.js";

export async function readFeed(run, attempt = 0) {
  const signal = run.abort.signal;
  try {
    const res = await api(`/api/runs/${encodeURIComponent(run.id)}/feed`, { signal });
    if (!(await readLines(res, (line) => handleFeedLine(run, line), () => cur === run))) return;
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
