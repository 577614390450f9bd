// The top bar's status and figures, and the selected run's header: its label, source,
// address, error, and which of its buttons apply.

import { $, h } from "./dom.js";
import { nf0, fmtMs, fmtDuration, fmtBytes } from "./format.js";
import { cur, currentSummary } from "./runs.js";

export function renderSummary() {
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
