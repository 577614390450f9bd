// The timeline: event types interned, the type filter, and a virtualised list (only
// the rows in view are in the DOM) with its scrolling, follow mode and keys.

import { $, h } from "./dom.js";
import { nf0, fmtMs, fmtBytes } from "./format.js";
import { schedule } from "./schedule.js";
import { cur, currentSummary } from "./runs.js";
import { selectEvent } from "./event.js";

export const ROW_H = 22;
const OVERSCAN = 12;

/** Event types are interned: one small integer per distinct type. */
export const typeNames = [];
const typeIds = new Map();
const typeClasses = [];
export function internType(name) {
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

export const filter = { inc: [], exc: [], onlyFindings: false, matchByType: [] };
function matchesFilter(name) {
  return (filter.inc.length === 0 || filter.inc.some((t) => name.includes(t))) && !filter.exc.some((t) => name.includes(t));
}

export function rowMatches(run, pos) {
  if (!filter.matchByType[run.type[pos]]) return false;
  if (filter.onlyFindings && !run.findingSev.has(run.idx[pos])) return false;
  return true;
}

export function recomputeFilter() {
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
export function refilterKeepingPlace() {
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

export const rowCount = () => (cur ? (cur.filtered ? cur.filtered.length : cur.idx.length) : 0);
export const posAt = (row) => (cur.filtered ? cur.filtered[row] : row);

/** Position (into the run's arrays) of the event with this raw index, or -1. */
export function posOfIndex(index) {
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
export function rowOfPos(pos) {
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
export function setScrollTop(v) {
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

export function renderTimeline() {
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

export function findingsAt(index) {
  return cur ? cur.findings.filter((f) => f.index === index) : [];
}

export function scrollRowIntoView(row) {
  const tl = $("timeline");
  const top = row * ROW_H;
  if (top < tl.scrollTop) setScrollTop(top);
  else if (top + ROW_H > tl.scrollTop + tl.clientHeight) setScrollTop(top + ROW_H - tl.clientHeight);
}

export function onTimelineScroll() {
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

export function moveSelection(delta) {
  if (!cur) return;
  const count = rowCount();
  if (!count) return;
  let row = cur.selected === null ? -1 : rowOfPos(posOfIndex(cur.selected));
  if (row < 0) row = delta > 0 ? -1 : count;
  const next = Math.max(0, Math.min(count - 1, row + delta));
  selectEvent(cur.idx[posAt(next)], { scroll: true, delay: 80 });
}

/** Scrolling, clicks and keys in the timeline, Follow, and the filter. */
export function wireTimeline() {
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
}
