// Render scheduling: parts of the page are marked dirty and redrawn together, at most
// once an animation frame.

import { renderRunList } from "./runs.js";
import { renderSummary } from "./summary.js";
import { renderTimeline } from "./timeline.js";
import { renderEvent } from "./event.js";
import { renderFindings } from "./findings.js";
import { renderMessages } from "./messages.js";
import { renderState } from "./state.js";
import { renderInterrupt } from "./interrupts.js";
import { renderThread } from "./input.js";

const dirty = new Set();
let frame = 0;
export function schedule(...what) {
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
