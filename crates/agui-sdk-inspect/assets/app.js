// agui inspect — the page. Plain JavaScript, no dependencies; talks only to the
// inspector's own origin (see API.md next to this folder for the contract).
//
// This module wires the page's controls to the modules next to it and starts it: the
// first poll of the runs, then one each second.

import { $, h, toast, copyText, showTab } from "./dom.js";
import { TOKEN, HASH_URL, FALLBACK_URL, api } from "./api.js";
import { schedule } from "./schedule.js";
import { cur, pollRuns, selectRun } from "./runs.js";
import { wireTimeline } from "./timeline.js";
import { selectEvent } from "./event.js";
import { resumeInterrupts } from "./interrupts.js";
import { checkHeaders, refreshPreview, onRun, onStop, onResend, onContinue, onNewThread, wireInput } from "./input.js";
import { download, wireRecordings } from "./recordings.js";

let info = null;

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

  wireInput();

  for (const t of document.querySelectorAll(".tab")) t.addEventListener("click", () => showTab(t.dataset.tab));

  wireTimeline();

  $("run-list").addEventListener("click", (e) => {
    const item = e.target.closest(".run-item");
    if (item) selectRun(item.dataset.runId);
  });

  wireRecordings();

  document.addEventListener("keydown", (e) => {
    const inField = e.target.closest?.("input, textarea, select");
    if (e.key === "Escape" && !inField && cur?.selected !== null) selectEvent(null);
    if (e.key === "/" && !inField) {
      e.preventDefault();
      $("timeline-filter").focus();
    }
  });

  window.addEventListener("resize", () => schedule("timeline"));
  new ResizeObserver(() => schedule("timeline")).observe($("timeline"));
}

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
