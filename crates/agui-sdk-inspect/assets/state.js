// The State tab: the state (latest, or as of the selected event) and its changes as
// rows of JSON Patch operations.

import { $, h, setJson } from "./dom.js";
import { cur } from "./runs.js";
import { selectEvent } from "./event.js";
import { messagesSource } from "./messages.js";

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

export function renderState() {
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
