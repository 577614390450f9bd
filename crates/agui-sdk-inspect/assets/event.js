// The selected event: choosing it (click, keys, a finding), loading its detail (the
// event and the conversation as of it), and the event pane.

import { $, setJson } from "./dom.js";
import { fmtMs, fmtBytes } from "./format.js";
import { api } from "./api.js";
import { schedule } from "./schedule.js";
import { cur } from "./runs.js";
import { typeNames, recomputeFilter, posOfIndex, rowOfPos, findingsAt, scrollRowIntoView } from "./timeline.js";
import { findingRow } from "./findings.js";

let detailTimer = 0;
export function selectEvent(index, { scroll = false, delay = 0 } = {}) {
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

export function renderEvent() {
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
