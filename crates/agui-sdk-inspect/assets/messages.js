// Messages as the reducer builds them (text, tool calls with their results,
// reasoning, activity, subagents), kept in the DOM by key and rebuilt only when they
// change; and what the Messages and State tabs show: the latest view or the
// conversation as of the selected event.

import { $, h, setJson } from "./dom.js";
import { nf0, fmtBytes, shortId } from "./format.js";
import { cur, currentSummary } from "./runs.js";

/** The conversation after a run: what it was sent that the reducer did not repeat, then the reducer's messages. */
export function conversationAfter(input, messages) {
  const vm = Array.isArray(messages) ? messages : [];
  const ids = new Set(vm.map((m) => m?.id));
  const prior = (Array.isArray(input?.messages) ? input.messages : []).filter((m) => !ids.has(m?.id));
  return [...prior, ...vm];
}

export const msgCache = new Map(); // key -> {el, sig}
const MAX_TEXT = 100_000;

function textBlock(text, streaming) {
  const s = String(text ?? "");
  const body = h("div", { class: `msg-body${streaming ? " streaming" : ""}` });
  if (s.length > MAX_TEXT) {
    body.textContent = `${s.slice(0, MAX_TEXT)}…`;
    const more = h("button", { class: "btn small show-all", type: "button", text: `Show all ${nf0.format(s.length)} characters` });
    more.addEventListener("click", () => {
      body.textContent = s;
      more.remove();
    });
    return h("div", null, body, more);
  }
  body.textContent = s;
  return body;
}

function contentNode(content, streaming) {
  if (typeof content === "string") return textBlock(content, streaming);
  if (Array.isArray(content)) {
    return h(
      "div",
      null,
      content.map((p) => {
        if (p && p.type === "text") return textBlock(p.text, false);
        if (p && typeof p === "object" && p.source) {
          const src = p.source;
          const where = src.type === "data" ? `inline ${fmtBytes(Math.floor(((src.value || "").length * 3) / 4))}` : `${src.type} ${src.value ?? ""}`;
          return h("div", { class: "part-media", text: `[${p.type}${src.mimeType ? ` ${src.mimeType}` : ""} · ${where}]` });
        }
        const pre = h("pre", { class: "json" });
        setJson(pre, p);
        return pre;
      }),
    );
  }
  if (content === undefined || content === null) return null;
  const pre = h("pre", { class: "json" });
  setJson(pre, content);
  return pre;
}

function prettyArgs(text) {
  const pre = h("pre", { class: "json" });
  try {
    setJson(pre, JSON.parse(text));
  } catch {
    pre.textContent = text ?? "";
  }
  return pre;
}

function buildMessage(m, ctx, streaming) {
  const role = typeof m?.role === "string" ? m.role : "unknown";
  const known = ["user", "assistant", "tool", "reasoning", "activity", "system", "developer"].includes(role);
  const head = h(
    "div",
    { class: "msg-head" },
    h("span", { class: "role", text: role }),
    m.name ? h("span", { text: m.name }) : null,
    m.activityType ? h("span", { class: "tag", text: m.activityType }) : null,
    role === "tool" && m.toolCallId ? h("span", { text: `→ ${ctx.callNames.get(m.toolCallId) || "call"} ${shortId(m.toolCallId)}` }) : null,
    m.subagentRunId ? h("span", { class: "subtag", title: `subagent run ${m.subagentRunId}`, text: `subagent ${shortId(m.subagentRunId)}` }) : null,
    m.encryptedValue ? h("span", { class: "enc", title: `${m.encryptedValueType || "encrypted value"}: ${String(m.encryptedValue).slice(0, 80)}`, text: "encrypted" }) : null,
    h("span", { class: "mid", title: m.id, text: m.id ?? "" }),
  );
  const el = h("div", {
    class: `msg${m.subagentRunId ? " subagent" : ""}`,
    "data-testid": "message",
    "data-role": role,
    "data-message-id": m.id ?? "",
  }, head);
  if (!known) {
    const rest = { ...m };
    delete rest.id;
    delete rest.role;
    const pre = h("pre", { class: "json" });
    setJson(pre, rest);
    el.append(pre);
    return el;
  }
  const hasCalls = role === "assistant" && Array.isArray(m.toolCalls) && m.toolCalls.length > 0;
  if (role === "activity") {
    el.append(contentNode(m.content ?? {}, false));
  } else if (m.content !== undefined && m.content !== null && !(hasCalls && m.content === "")) {
    el.append(contentNode(m.content, streaming && !hasCalls));
  } else if (!hasCalls && streaming) {
    el.append(textBlock("", true));
  }
  if (role === "tool" && m.error) el.append(h("div", { class: "field-error", text: `error: ${m.error}` }));
  if (hasCalls) {
    for (const call of m.toolCalls) {
      const result = ctx.results.get(call.id);
      const box = h(
        "div",
        { class: "tool-call", "data-testid": "tool-call", "data-tool-name": call.function?.name ?? "" },
        h(
          "div",
          { class: "tool-call-head" },
          h("span", { text: "⚙" }),
          h("span", { class: "name", text: call.function?.name ?? "(unnamed)" }),
          h("span", { class: `tool-state ${result ? "done" : "pending"}`, text: result ? "answered" : "no result yet" }),
          h("span", { class: "cid", title: call.id, text: shortId(call.id) }),
        ),
        prettyArgs(call.function?.arguments ?? ""),
      );
      if (result) {
        const r = h("div", { class: "result" }, h("div", { class: "result-label", text: `result (${shortId(result.id)})` }));
        const c = typeof result.content === "string" ? prettyArgs(result.content) : contentNode(result.content, false);
        if (c) r.append(c);
        box.append(r);
      }
      el.append(box);
    }
  }
  return el;
}

export function messagesSource() {
  if (!cur) return { messages: [], atEvent: null };
  const input = currentSummary()?.input;
  if (cur.selected !== null) {
    const d = cur.detail;
    if (d && d.index === cur.selected && !d.error) return { messages: conversationAfter(input, d.messages), atEvent: cur.selected, state: d.state, detail: d };
    if (d && d.index === cur.selected && d.error) return { messages: [], atEvent: cur.selected, error: d.error };
    return null; // loading: keep what is shown
  }
  const v = cur.view;
  return { messages: conversationAfter(input, v?.messages), atEvent: null, state: v ? v.state : input?.state ?? null, view: v };
}

export function renderMessages() {
  const src = messagesSource();
  renderAtEvent(src);
  if (!src) return;
  const box = $("messages");
  const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 30;
  const list = src.messages;
  const running = src.atEvent === null && currentSummary()?.status === "running";
  const ctx = { results: new Map(), callNames: new Map() };
  for (const m of list) {
    if (m?.role === "tool" && m.toolCallId) ctx.results.set(m.toolCallId, m);
    if (m?.role === "assistant" && Array.isArray(m.toolCalls)) for (const c of m.toolCalls) ctx.callNames.set(c.id, c.function?.name);
  }
  const seen = new Set();
  const occurrences = new Map();
  let prev = null;
  list.forEach((m, i) => {
    const base = `${m?.id ?? ""}|${m?.role ?? ""}`;
    const n = occurrences.get(base) || 0;
    occurrences.set(base, n + 1);
    const key = `${base}|${n}`;
    const streaming = running && i === list.length - 1 && (m?.role === "assistant" || m?.role === "reasoning");
    let extra = "";
    if (m?.role === "assistant" && Array.isArray(m.toolCalls)) extra = JSON.stringify(m.toolCalls.map((c) => ctx.results.get(c.id) ?? null));
    if (m?.role === "tool") extra = ctx.callNames.get(m.toolCallId) ?? "";
    const sig = `${JSON.stringify(m)}${extra}${streaming ? "|s" : ""}`;
    let entry = msgCache.get(key);
    if (!entry || entry.sig !== sig) {
      const el = buildMessage(m ?? {}, ctx, streaming);
      if (entry) entry.el.replaceWith(el);
      entry = { el, sig };
      msgCache.set(key, entry);
    }
    const expected = prev ? prev.nextSibling : box.firstChild;
    if (expected !== entry.el) box.insertBefore(entry.el, expected);
    prev = entry.el;
    seen.add(key);
  });
  for (const [key, entry] of msgCache) {
    if (!seen.has(key)) {
      entry.el.remove();
      msgCache.delete(key);
    }
  }
  $("messages-count").textContent = list.length ? String(list.length) : "";
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function renderAtEvent(src) {
  const at = cur && cur.selected !== null ? cur.selected : null;
  $("at-event").hidden = at === null;
  $("at-event-index").textContent = at === null ? "" : `#${at}`;
}
