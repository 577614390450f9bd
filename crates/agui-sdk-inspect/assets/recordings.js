// Recordings: a file opened by the picker or dropped on the page becomes a run, and
// the selected run downloads as JSON Lines or SSE.

import { $, h, toast } from "./dom.js";
import { api } from "./api.js";
import { knownRunIds, cur, mergeSummary, pollRuns, selectRun } from "./runs.js";

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

export async function download(format) {
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

/** The file picker, and drag and drop anywhere on the page. */
export function wireRecordings() {
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
}
