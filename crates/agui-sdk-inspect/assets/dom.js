// DOM helpers of the page: finding and building elements, JSON shown highlighted,
// toasts, the clipboard, and the side tabs.

export const $ = (id) => document.getElementById(id);

/** Creates an element: h("div", {class: "x", dataset: {a: 1}, onclick}, child, "text"). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

/** Pretty JSON as highlighted HTML (escaped), or plain text when it is huge. */
const JSON_TOKEN = /("(?:[^"\\\n]|\\.)*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
export function setJson(el, value) {
  let text;
  try {
    text = value === undefined ? "undefined" : JSON.stringify(value, null, 2);
  } catch (e) {
    text = String(value);
  }
  el.dataset.raw = "";
  el._raw = text;
  if (text.length > 300_000) {
    el.textContent = text;
    return;
  }
  let out = "";
  let last = 0;
  JSON_TOKEN.lastIndex = 0;
  let m;
  while ((m = JSON_TOKEN.exec(text))) {
    out += esc(text.slice(last, m.index));
    if (m[1] !== undefined) {
      out += m[2] !== undefined
        ? `<span class="j-key">${esc(m[1])}</span>${esc(m[2])}`
        : `<span class="j-str">${esc(m[1])}</span>`;
    } else if (m[3] !== undefined) {
      out += `<span class="j-lit">${m[3]}</span>`;
    } else {
      out += `<span class="j-num">${m[4]}</span>`;
    }
    last = JSON_TOKEN.lastIndex;
  }
  out += esc(text.slice(last));
  el.innerHTML = out;
}

export function toast(message, kind = "error", ms = 7000) {
  const el = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status", text: message });
  el.addEventListener("click", () => el.remove());
  $("toasts").append(el);
  while ($("toasts").children.length > 4) $("toasts").firstChild.remove();
  setTimeout(() => el.remove(), ms);
}

export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    toast("Copied.", "info", 1500);
  } catch {
    toast("The clipboard is not available here.");
  }
}

export function showTab(name) {
  for (const t of document.querySelectorAll(".tab")) t.setAttribute("aria-selected", String(t.dataset.tab === name));
  for (const p of document.querySelectorAll(".tab-panel")) p.hidden = p.dataset.panel !== name;
}
