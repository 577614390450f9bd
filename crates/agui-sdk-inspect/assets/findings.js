// Findings: a finding's row (in the Findings tab and under the selected event) and
// the Findings tab.

import { $, h } from "./dom.js";
import { nf0 } from "./format.js";
import { schedule } from "./schedule.js";
import { cur } from "./runs.js";
import { selectEvent } from "./event.js";

export function findingRow(f, onclick) {
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

const MAX_FINDINGS_SHOWN = 2000;
let findingsShown = -1;
export function renderFindings() {
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
