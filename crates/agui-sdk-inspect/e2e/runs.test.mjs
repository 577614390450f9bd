// The `agui inspect` page in a real (headless) Chromium, relaying runs to `agui serve`:
// a chat and its second turn, shared state and its diffs, an interrupt and its resume,
// messages of every kind, and Stop. Helpers: support.mjs.

import { after, before, describe } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  STEP_TIMEOUT, T, demoReply, freePort, startAgui, api, waitFor, waitStatus, selectedRunId,
  timelineCounts, visibleRows, scrollTimeline, showTab, setAgent, runMessage, messages,
  waitMessage, clickRow, assertClean, startRequests, shot, pageCase, startStack, stopStack,
} from "./support.mjs";

let serve;
let inspect;
let slow;

describe("agui inspect in a real browser: runs", () => {
  before(async () => {
    ({ serve, inspect } = await startStack());
  });

  after(async () => {
    await stopStack(slow);
  });

  pageCase("1. agentic_chat: a run, its messages, timeline, event JSON, filter, download and a second turn", async (open) => {
    const ui = await open();
    const { page } = ui;
    assert.equal(await page.inputValue(T("agent-url")), `${serve.base}/agentic_chat`, "the agent URL from the address");
    assert.equal(await page.textContent(T("status")), "", "the status before any run");

    // Every status the pill shows, in order.
    await page.evaluate(() => {
      window.__statuses = [];
      const el = document.querySelector("[data-testid=status]");
      new MutationObserver(() => {
        const s = el.textContent;
        if (window.__statuses[window.__statuses.length - 1] !== s) window.__statuses.push(s);
      }).observe(el, { childList: true, characterData: true, subtree: true });
    });

    // Request headers, as `Name: value` lines.
    await page.click("#headers-toggle");
    await page.fill(T("headers-input"), "X-Inspect-Test: one\nAuthorization: Bearer e2e");
    await page.click("#headers-toggle");

    const text = "Hello from a real browser";
    const runId = await runMessage(ui, text);
    const posted = startRequests(ui).at(-1);
    assert.deepEqual(posted.headers, { "X-Inspect-Test": "one", Authorization: "Bearer e2e" }, "the headers sent with the run");
    assert.equal(posted.format, "sse");
    assert.equal(posted.url, `${serve.base}/agentic_chat`);
    await waitStatus(ui, "finished");
    const statuses = await page.evaluate(() => window.__statuses);
    assert.ok(statuses.indexOf("running") >= 0 && statuses.indexOf("running") < statuses.indexOf("finished"), `statuses seen: ${JSON.stringify(statuses)}`);

    await waitMessage(ui, "assistant", demoReply(text));
    const msgs = await messages(ui);
    assert.deepEqual(
      msgs.map((m) => [m.role, m.text.trim()]),
      [
        ["user", text],
        ["assistant", demoReply(text)],
      ],
      "the messages pane",
    );

    // The run as the API has it: what was sent, how many events came.
    const run = await api(inspect, `/api/runs/${runId}`);
    assert.equal(run.source, "relay");
    assert.equal(run.status, "finished");
    assert.equal(run.url, `${serve.base}/agentic_chat`);
    assert.deepEqual(run.input.messages.map((m) => [m.role, m.content]), [["user", text]], "the input the page built");
    assert.deepEqual([run.input.tools, run.input.context, run.input.forwardedProps, run.input.state], [[], [], {}, {}]);
    const threadId = run.input.threadId;
    assert.match(threadId, /^[0-9a-f-]{36}$/, "a random uuid thread");

    await waitFor(ui, "the timeline to hold every event", () =>
      page.waitForFunction((n) => Number(document.querySelector("[data-testid=timeline]").dataset.total) === n, run.events, { timeout: STEP_TIMEOUT }),
    );
    const counts = await timelineCounts(ui);
    assert.equal(counts.total, run.events, "data-total against GET /api/runs/{id}");
    assert.equal(counts.count, run.events, "no filter: every row counts");
    assert.equal(Number(await page.getAttribute(T("figures"), "data-events")), run.events, "the figures' events");
    const words = demoReply(text).split(" ").length;
    assert.equal(run.events, words + 4, "RUN_STARTED, TEXT_MESSAGE_START, one content per word, END, RUN_FINISHED");

    await scrollTimeline(ui, "top");
    let rows = await visibleRows(ui);
    assert.deepEqual(
      rows.slice(0, 3).map((r) => [r.index, r.type]),
      [
        [0, "RUN_STARTED"],
        [1, "TEXT_MESSAGE_START"],
        [2, "TEXT_MESSAGE_CONTENT"],
      ],
    );
    await scrollTimeline(ui, "end");
    await page.waitForSelector(`${T("timeline-event")}[data-index="${run.events - 1}"][data-event-type=RUN_FINISHED]`, { timeout: STEP_TIMEOUT });

    // Selecting a row shows that event's JSON.
    await scrollTimeline(ui, "top");
    const ev = await clickRow(ui, 1);
    assert.equal(ev.type, "TEXT_MESSAGE_START");
    assert.equal(ev.role, "assistant");
    assert.match(ev.messageId, /reply$/);
    const ev2 = await clickRow(ui, 2);
    assert.equal(ev2.type, "TEXT_MESSAGE_CONTENT");
    assert.equal(ev2.delta, "You ");
    // The keyboard moves the selection.
    await page.keyboard.press("ArrowDown");
    await page.waitForFunction(() => JSON.parse(document.querySelector("[data-testid=event-json]").textContent || "{}").delta === "said: ", null, { timeout: STEP_TIMEOUT });
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => !document.querySelector("[data-testid=timeline-event][aria-selected=true]"), null, { timeout: STEP_TIMEOUT });

    // The type filter.
    await page.fill(T("timeline-filter"), "content");
    await page.waitForFunction((n) => Number(document.querySelector("[data-testid=timeline]").dataset.count) === n, words, { timeout: STEP_TIMEOUT });
    rows = await visibleRows(ui);
    assert.ok(rows.length > 0 && rows.every((r) => r.type === "TEXT_MESSAGE_CONTENT"), `filtered rows: ${JSON.stringify(rows)}`);
    assert.equal((await timelineCounts(ui)).total, run.events, "data-total ignores the filter");
    await page.fill(T("timeline-filter"), "-content");
    await page.waitForFunction((n) => Number(document.querySelector("[data-testid=timeline]").dataset.count) === n, 4, { timeout: STEP_TIMEOUT });
    await page.fill(T("timeline-filter"), "");
    await page.waitForFunction((n) => Number(document.querySelector("[data-testid=timeline]").dataset.count) === n, run.events, { timeout: STEP_TIMEOUT });

    // Download as JSON Lines: one line per event, the token never in a URL.
    const [download] = await Promise.all([page.waitForEvent("download", { timeout: STEP_TIMEOUT }), page.click(T("download-jsonl"))]);
    assert.ok(!download.url().includes(inspect.token), "the token leaked into the download URL");
    const lines = readFileSync(await download.path(), "utf8").trim().split("\n");
    assert.equal(lines.length, run.events, "JSONL lines");
    assert.equal(JSON.parse(lines[0]).type, "RUN_STARTED");
    const [sse] = await Promise.all([page.waitForEvent("download", { timeout: STEP_TIMEOUT }), page.click(T("download-sse"))]);
    const frames = readFileSync(await sse.path(), "utf8").split("\n").filter((l) => l.startsWith("data:"));
    assert.equal(frames.length, run.events, "SSE data frames");

    // A second turn continues the thread with the first run's messages.
    const second = "And a second line";
    const runId2 = await runMessage(ui, second);
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", demoReply(second));
    const run2 = await api(inspect, `/api/runs/${runId2}`);
    assert.equal(run2.input.threadId, threadId, "same thread");
    assert.notEqual(run2.input.runId, run.input.runId, "a new runId");
    assert.deepEqual(
      run2.input.messages.map((m) => [m.role, m.content]),
      [
        ["user", text],
        ["assistant", demoReply(text)],
        ["user", second],
      ],
      "the second run's input carries the conversation",
    );
    assert.deepEqual(
      (await messages(ui)).map((m) => m.role),
      ["user", "assistant", "user", "assistant"],
    );

    // The Input tab shows what the next run will send.
    await page.fill(T("message-input"), "third");
    await showTab(ui, "input");
    await page.waitForFunction(() => {
      try {
        const v = JSON.parse(document.querySelector("[data-testid=input-json]").value);
        return v.messages.length === 5 && v.messages[4].content === "third";
      } catch {
        return false;
      }
    }, null, { timeout: STEP_TIMEOUT });
    const preview = JSON.parse(await page.inputValue(T("input-json")));
    assert.equal(preview.threadId, threadId);

    // An edited input is sent as it is.
    preview.messages = [{ id: "edited-1", role: "user", content: "edited by hand" }];
    preview.threadId = "edited-thread";
    await page.fill(T("input-json"), JSON.stringify(preview, null, 2));
    const runId3 = await (async () => {
      await page.click(T("run-button"));
      await page.waitForFunction((prev) => document.querySelector("[data-testid=run-item][aria-selected=true]")?.dataset.runId !== prev, runId2, { timeout: STEP_TIMEOUT });
      return selectedRunId(ui);
    })();
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", demoReply("edited by hand"));
    const run3 = await api(inspect, `/api/runs/${runId3}`);
    assert.deepEqual(run3.input, preview, "the edited input, unchanged");

    // New thread: a fresh threadId and no history.
    await page.click(T("new-thread-button"));
    await page.fill(T("message-input"), "fresh");
    await page.waitForFunction((old) => {
      const v = JSON.parse(document.querySelector("[data-testid=input-json]").value);
      return v.threadId !== old && v.threadId !== "edited-thread" && v.messages.length === 1;
    }, threadId, { timeout: STEP_TIMEOUT });

    // Headers as a JSON object, and the protobuf format.
    await page.click("#headers-toggle");
    await page.fill(T("headers-input"), '{"X-Inspect-Test": "two"}');
    await page.click("#headers-toggle");
    await page.selectOption(T("format-select"), "proto");
    const protoRun = await runMessage(ui, "fresh");
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", demoReply("fresh"));
    const protoSummary = await api(inspect, `/api/runs/${protoRun}`);
    assert.equal(protoSummary.format, "proto", "a protobuf run");
    assert.deepEqual(startRequests(ui).at(-1).headers, { "X-Inspect-Test": "two" });
    const protoEvent = await (async () => {
      await scrollTimeline(ui, "top");
      return clickRow(ui, 2);
    })();
    assert.equal(protoEvent.type, "TEXT_MESSAGE_CONTENT", "a protobuf event shown as JSON");
    await page.selectOption(T("format-select"), "sse");
    await assertClean(ui);
  });

  pageCase("2. shared_state: the state, its diff, and a STATE_DELTA's ops", async (open) => {
    const ui = await open();
    const { page } = ui;
    await setAgent(ui, `${serve.base}/shared_state`);
    await page.click(T("new-thread-button"));
    const runId = await runMessage(ui, "Add a step");
    await waitStatus(ui, "finished");
    await showTab(ui, "state");

    const expected = {
      title: "Pancakes",
      ingredients: [
        { name: "Flour", amount: "200 g" },
        { name: "Milk", amount: "300 ml" },
      ],
      instructions: ["Mix everything", "Step 2: taste and adjust"],
      updatedBy: "agent",
    };
    await waitFor(ui, "the final state", () =>
      page.waitForFunction(() => {
        try {
          return JSON.parse(document.querySelector("[data-testid=state]").textContent).updatedBy === "agent";
        } catch {
          return false;
        }
      }, null, { timeout: STEP_TIMEOUT }),
    );
    assert.deepEqual(JSON.parse(await page.textContent(T("state"))), expected, "the state pane");

    // Without a selection, the diff is the latest state change.
    const latest = await page.$$eval(`${T("state-diff")} ${T("diff-op")}`, (els) => els.map((e) => [e.dataset.op, e.dataset.path]));
    assert.ok(latest.length > 0, "no diff-op rows for the latest state change");
    assert.ok(latest.some(([op, path]) => op === "add" && path === "/updatedBy"), `latest diff: ${JSON.stringify(latest)}`);
    assert.ok(latest.some(([op, path]) => op === "add" && path.startsWith("/instructions/")), `latest diff: ${JSON.stringify(latest)}`);

    // The STATE_DELTA row shows its ops.
    await scrollTimeline(ui, "top");
    const rows = await visibleRows(ui);
    assert.deepEqual(rows.slice(0, 3).map((r) => r.type), ["RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA"]);
    const delta = rows.find((r) => r.type === "STATE_DELTA");
    const ev = await clickRow(ui, delta.index);
    assert.equal(ev.type, "STATE_DELTA");
    const sentOps = ev.delta;
    assert.ok(Array.isArray(sentOps) && sentOps.length > 0, `the delta's ops: ${JSON.stringify(ev)}`);
    await waitFor(ui, "the diff of the selected STATE_DELTA", () =>
      page.waitForFunction((i) => document.querySelector("#diff-title")?.textContent.includes(`#${i}`), delta.index, { timeout: STEP_TIMEOUT }),
    );
    const ops = await page.$$eval(`${T("state-diff")} ${T("diff-op")}`, (els) => els.map((e) => ({ op: e.dataset.op, path: e.dataset.path, text: e.innerText })));
    for (const o of sentOps) {
      assert.ok(
        ops.some((r) => r.op === o.op && r.path === o.path),
        `the op ${JSON.stringify(o)} is not shown; rows: ${JSON.stringify(ops)}`,
      );
    }
    const added = ops.find((r) => r.path === "/updatedBy");
    assert.match(added.text, /^\+\s*\/updatedBy\s*"agent"$/, "an add row reads + /path value");
    assert.deepEqual(JSON.parse(await page.textContent(T("state"))), expected, "the state after the delta");
    await shot(ui, "inspect-timeline.png");

    // The snapshot before it: the state at that event.
    await clickRow(ui, 1);
    await page.waitForFunction(() => document.querySelector("#diff-title")?.textContent.includes("#1"), null, { timeout: STEP_TIMEOUT });
    const atSnapshot = JSON.parse(await page.textContent(T("state")));
    assert.deepEqual(atSnapshot.instructions, ["Mix everything"], "the state as of the snapshot");
    assert.equal(atSnapshot.updatedBy, undefined);

    // A second turn sends the state back; the agent adds another step.
    await page.click("#at-event-latest");
    const runId2 = await runMessage(ui, "Another step");
    await waitStatus(ui, "finished");
    const run2 = await api(inspect, `/api/runs/${runId2}`);
    assert.deepEqual(run2.input.state, expected, "the next run carries the state");
    await page.waitForFunction(() => {
      try {
        return JSON.parse(document.querySelector("[data-testid=state]").textContent).instructions.length === 3;
      } catch {
        return false;
      }
    }, null, { timeout: STEP_TIMEOUT });
    assert.notEqual(runId2, runId);
    await assertClean(ui);
  });

  pageCase("3. interrupt: the panel, the answer, and the resumed run", async (open) => {
    const ui = await open();
    const { page } = ui;
    await setAgent(ui, `${serve.base}/interrupt`);
    await page.click(T("new-thread-button"));
    const first = await runMessage(ui, "Send the weekly email");
    await waitStatus(ui, "interrupted");
    const panel = page.locator(T("interrupt"));
    await waitFor(ui, "the interrupt panel", () => panel.waitFor({ timeout: STEP_TIMEOUT }));
    assert.match(await panel.innerText(), /Send the email to team@example\.com\?/);
    assert.match(await panel.innerText(), /tool_approval/);
    const answer = page.locator(T("interrupt-response"));
    assert.equal(await answer.count(), 1);
    assert.deepEqual(JSON.parse(await answer.inputValue()), { approved: true }, "the prefilled answer");
    await waitMessage(ui, "assistant", "I need your approval before sending the email.");

    const firstRun = await api(inspect, `/api/runs/${first}`);
    await page.click(T("interrupt-submit"));
    await waitFor(ui, "the resumed run to be selected", () =>
      page.waitForFunction((prev) => document.querySelector("[data-testid=run-item][aria-selected=true]")?.dataset.runId !== prev, first, { timeout: STEP_TIMEOUT }),
    );
    const second = await selectedRunId(ui);
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", "Approved: the email is sent.");
    assert.ok(await panel.isHidden(), "the interrupt panel is gone");

    const resumed = await api(inspect, `/api/runs/${second}`);
    assert.equal(resumed.input.threadId, firstRun.input.threadId, "the same thread");
    assert.equal(resumed.input.resume.length, 1);
    assert.equal(resumed.input.resume[0].status, "resolved");
    assert.deepEqual(resumed.input.resume[0].payload, { approved: true });
    assert.match(resumed.input.resume[0].interruptId, /approval$/);
    assert.deepEqual(
      resumed.input.messages.map((m) => m.role),
      ["user", "assistant"],
      "the resume carries the conversation so far",
    );
    // The ask, then the resumed run's two messages: the send (an effect the runtime
    // keeps at most once) and the answer.
    await waitMessage(ui, "assistant", "Sending the email…");
    assert.deepEqual(
      (await messages(ui)).map((m) => m.role),
      ["user", "assistant", "assistant", "assistant"],
    );

    // Declined this time: the answer is edited before resuming.
    const third = await runMessage(ui, "Send it again");
    await waitStatus(ui, "interrupted");
    await panel.waitFor({ timeout: STEP_TIMEOUT });
    await page.fill(T("interrupt-response"), '{"approved": false}');
    await page.click(T("interrupt-submit"));
    await page.waitForFunction((prev) => document.querySelector("[data-testid=run-item][aria-selected=true]")?.dataset.runId !== prev, third, { timeout: STEP_TIMEOUT });
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", "Not approved: nothing was sent.");
    await assertClean(ui);
  });

  pageCase("6. messages of every kind: reasoning, tool calls and results, subagents", async (open) => {
    const ui = await open();
    const { page } = ui;
    await setAgent(ui, `${serve.base}/subagents`);
    await page.click(T("new-thread-button"));
    await runMessage(ui, "otters");
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", "The researcher says: otters are fascinating.");
    const roles = (await messages(ui)).map((m) => m.role);
    assert.ok(roles.includes("tool"), `a tool result message: ${JSON.stringify(roles)}`);
    const call = page.locator('[data-testid=tool-call][data-tool-name="research"]');
    await call.waitFor({ timeout: STEP_TIMEOUT });
    assert.match(await call.innerText(), /"topic": "otters"/, "the call's arguments");
    assert.match(await call.innerText(), /Researcher: otters are fascinating\./, "the call's result");
    assert.ok((await page.locator(".msg.subagent").count()) >= 1, "the subagent's message is marked");

    await setAgent(ui, `${serve.base}/reasoning`);
    await runMessage(ui, "think");
    await waitStatus(ui, "finished");
    await waitMessage(ui, "reasoning", "Think step by step");
    await waitMessage(ui, "assistant", "After thinking: 42.");
    await shot(ui, "inspect-messages.png");
    await page.emulateMedia({ colorScheme: "dark" });
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.notEqual(bg, "rgb(246, 247, 249)", "the dark theme applies");
    await shot(ui, "inspect-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
    await assertClean(ui);
  });

  pageCase("7. stop: a slow run ends when Stop is pressed", async (open) => {
    slow = await startAgui("agui serve (slow)", ["serve", "--addr", `127.0.0.1:${await freePort()}`, "--delay-ms", "150"], [/listening on (\S+)\r?\n/]);
    const base = slow.matches[0][1].replace(/\/$/, "");
    const ui = await open();
    const { page } = ui;
    await setAgent(ui, `${base}/agentic_chat`);
    await page.click(T("new-thread-button"));
    const text = "Please answer slowly so that there is time to press the stop button";
    const runId = await runMessage(ui, text);
    await waitFor(ui, "the slow answer to begin", () =>
      page.waitForFunction(() => Number(document.querySelector("[data-testid=timeline]").dataset.total) >= 5, null, { timeout: STEP_TIMEOUT }),
    );
    assert.equal(await page.textContent(T("status")), "running");
    assert.ok(await page.isEnabled(T("stop-button")), "Stop is enabled while the run goes on");
    await page.click(T("stop-button"));
    await waitFor(ui, "the run to end after Stop", () =>
      page.waitForFunction(() => {
        const s = document.querySelector("[data-testid=status]").textContent;
        return s !== "running" && s !== "";
      }, null, { timeout: 5_000, polling: 50 }),
    );
    const run = await api(inspect, `/api/runs/${runId}`);
    assert.equal(run.stopped, true, "the run is marked stopped");
    assert.ok(run.events < demoReply(text).split(" ").length + 4, `the run was not cut short: ${run.events} events`);
    assert.ok(await page.isVisible("#stopped-tag"), "the page says it was stopped");
    assert.ok(await page.isDisabled(T("stop-button")), "Stop is disabled once the run ended");
    const total = (await timelineCounts(ui)).total;
    await page.waitForTimeout(500);
    assert.equal((await timelineCounts(ui)).total, total, "events kept coming after Stop");
    assert.equal(total, run.events);
    await assertClean(ui);
  });
});
