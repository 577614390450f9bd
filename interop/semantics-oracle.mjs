// Reads semantic test cases (JSON Lines on stdin) and answers each with what the
// AG-UI 1.0 reference client computes, one JSON line per case on stdout.
//
// Case: {"id": n, "events": [...], "messages": [...], "state": any}
// Answer: {"id": n,
//          "verify":  {"ok": true, "emitted": k} | {"ok": false, "error": "..."},
//          "expand":  {"ok": true, "output": [...]} | {"ok": false, "error": "..."},
//          "compact": {"output": [...]}   (of the expanded events when expansion succeeded),
//          "apply":   {"ok": true, "messages": [...], "state": any, "pendingInterrupts": [...]}
//                   | {"ok": false, "error": "..."}}
// "apply" runs on the expanded events when expansion succeeded, else on the raw ones.
//
// Interrupt case: {"id": n, "expiry": {"now": iso, "expiresAt": [string|null...]},
//                  "resume": {"interrupts": [...], "responses": {...}}}
// Answer: {"id": n, "expired": [bool...], "resume": {"output": [...]} | {"error": "..."}}
//
// Enforcement case: {"id": n, "enforce": [raw events...]}
// Answer: {"id": n, "enforce": [{"output": event|null, "warnings": [paths or "drop:TYPE"]}
//                               | {"errorPath": [...], "warnings": [...]}, ...]}

import { createInterface } from "node:readline";
import {
  enforceEvents,
  verifyEvents,
  transformChunks,
  compactEvents,
  defaultApplyEvents,
  isInterruptExpired,
  buildResumeArray,
} from "@ag-ui/client";
import { from, lastValueFrom, of, tap, toArray } from "rxjs";

// The reference reducer and compactor warn on skipped events; the answers carry what
// matters, so keep the output clean.
let captured = null;
console.warn = (msg) => {
  if (captured) captured.push(String(msg));
};
console.log = () => {};

async function runEnforce(events) {
  delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;
  const answers = [];
  for (const ev of events) {
    captured = [];
    let answer;
    try {
      const out = await lastValueFrom(of(clone(ev)).pipe(enforceEvents(), toArray()));
      answer = { output: out.length ? out[0] : null };
    } catch (e) {
      answer = { errorPath: e && e.issues ? e.issues[0].path : ["?" + String(e && e.message)] };
    }
    answer.warnings = captured.map((w) => {
      const drop = /Dropping unrecognised event '(.*)': /.exec(w);
      if (drop) return "drop:" + drop[1];
      const at = /material at '([^']*)'/.exec(w);
      return at ? at[1] : w;
    });
    captured = null;
    answers.push(answer);
  }
  return answers;
}

const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

async function runVerify(events) {
  try {
    const out = await lastValueFrom(from(clone(events)).pipe(verifyEvents(), toArray()));
    return { ok: true, emitted: out.length };
  } catch (e) {
    return { ok: false, error: String(e && e.message) };
  }
}

async function runExpand(events) {
  try {
    const out = await lastValueFrom(from(clone(events)).pipe(transformChunks(), toArray()));
    return { ok: true, output: out };
  } catch (e) {
    return { ok: false, error: String(e && e.message) };
  }
}

async function runApply(events, messages, state) {
  const agent = { messages: clone(messages), state: clone(state), pendingInterrupts: [] };
  const input = {
    threadId: "t",
    runId: "r",
    messages: clone(messages),
    state: clone(state),
    tools: [],
    context: [],
  };
  let finalMessages = clone(messages);
  let finalState = clone(state);
  try {
    const mutations = await lastValueFrom(
      defaultApplyEvents(input, from(clone(events)), agent, []).pipe(toArray()),
    );
    for (const m of mutations) {
      if (m.messages !== undefined) finalMessages = m.messages;
      if (m.state !== undefined) finalState = m.state;
    }
    return {
      ok: true,
      messages: finalMessages,
      state: finalState,
      pendingInterrupts: agent.pendingInterrupts,
    };
  } catch (e) {
    return { ok: false, error: String(e && e.message) };
  }
}

// The client's inbound order: enforcement, chunk expansion, verification, then the
// reducer; what reaches the reducer is recorded as delivered.
async function runPipeline(events, messages, state) {
  delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;
  captured = [];
  const delivered = [];
  const agent = { messages: clone(messages), state: clone(state), pendingInterrupts: [] };
  const input = { threadId: "t", runId: "r", messages: clone(messages), state: clone(state), tools: [], context: [] };
  let finalMessages = clone(messages);
  let finalState = clone(state);
  let error = null;
  try {
    const events$ = from(clone(events)).pipe(
      enforceEvents(),
      transformChunks(),
      verifyEvents(),
      tap((e) => delivered.push(clone(e))),
    );
    const mutations = await lastValueFrom(defaultApplyEvents(input, events$, agent, []).pipe(toArray()));
    for (const m of mutations) {
      if (m.messages !== undefined) finalMessages = m.messages;
      if (m.state !== undefined) finalState = m.state;
    }
  } catch (e) {
    error = String(e && e.message);
  }
  const warnings = [];
  for (const w of captured) {
    const drop = /Dropping unrecognised event '(.*)': /.exec(w);
    if (drop) warnings.push("drop:" + drop[1]);
    const at = /material at '([^']*)'/.exec(w);
    if (at) warnings.push(at[1]);
  }
  captured = null;
  return error === null
    ? { ok: true, delivered, warnings, messages: finalMessages, state: finalState }
    : { ok: false, delivered, warnings };
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
const answers = [];
for await (const line of rl) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  if (c.expiry) {
    const now = new Date(c.expiry.now);
    const expired = c.expiry.expiresAt.map((e) =>
      isInterruptExpired(e === null ? { id: "i", reason: "r" } : { id: "i", reason: "r", expiresAt: e }, now),
    );
    let resume;
    try {
      resume = { output: buildResumeArray(c.resume.interrupts, c.resume.responses) };
    } catch (e) {
      resume = { error: String(e && e.message) };
    }
    answers.push(JSON.stringify({ id: c.id, expired, resume }));
    continue;
  }
  if (c.pipeline) {
    answers.push(JSON.stringify({ id: c.id, pipeline: await runPipeline(c.pipeline, c.messages, c.state) }));
    continue;
  }
  if (c.enforce) {
    answers.push(JSON.stringify({ id: c.id, enforce: await runEnforce(c.enforce) }));
    continue;
  }
  process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "true";
  const verify = await runVerify(c.events);
  const expand = await runExpand(c.events);
  const compact = { output: compactEvents(clone(expand.ok ? expand.output : c.events)) };
  const apply = await runApply(expand.ok ? expand.output : c.events, c.messages ?? [], c.state);
  answers.push(JSON.stringify({ id: c.id, verify, expand, compact, apply }));
  if (answers.length >= 256) {
    process.stdout.write(answers.join("\n") + "\n");
    answers.length = 0;
  }
}
if (answers.length) process.stdout.write(answers.join("\n") + "\n");
