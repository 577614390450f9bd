// The `agui inspect` page in a real (headless) Chromium, with recordings: a broken one
// (its findings and marked rows, opened by the file picker and by drag and drop), and
// one of 100,000 events (how long it takes to show, the heap, scrolling, filtering).
// Helpers: support.mjs.

import { after, before, describe } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, createWriteStream } from "node:fs";
import { join } from "node:path";
import {
  STEP_TIMEOUT, PERF_TIMEOUT, T, api, waitFor, selectedRunId, timelineCounts, visibleRows,
  scrollTimeline, showTab, waitMessage, assertClean, pageCase, writeJsonl, startStack, stopStack,
} from "./support.mjs";

let tmp;
let inspect;
let context;

describe("agui inspect in a real browser: recordings", () => {
  before(async () => {
    ({ tmp, inspect, context } = await startStack());
  });

  after(async () => {
    await stopStack();
  });

  pageCase("4. a broken recording: findings and marked rows (file picker and drop)", async (open) => {
    const ui = await open();
    const { page } = ui;
    const events = [
      { type: "RUN_STARTED", threadId: "t-broken", runId: "r-broken" },
      { type: "TEXT_MESSAGE_START", messageId: "m1", role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "never-started", delta: "oops" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Hello" },
      { type: "TEXT_MESSAGE_END", messageId: "m1" },
      { type: "RUN_FINISHED", threadId: "t-broken", runId: "r-broken" },
    ];
    const file = writeJsonl(join(tmp, "broken.jsonl"), events);
    const before = await selectedRunId(ui);
    await page.setInputFiles(T("open-recording"), file);
    await waitFor(ui, "the recording to be selected", () =>
      page.waitForFunction(
        (prev) => {
          const sel = document.querySelector("[data-testid=run-item][aria-selected=true]");
          return sel && sel.dataset.runId !== prev && sel.dataset.source === "recording";
        },
        before,
        { timeout: STEP_TIMEOUT },
      ),
    );
    const recId = await selectedRunId(ui);
    await showTab(ui, "findings");
    const finding = page.locator(`${T("finding")}[data-index="2"]`);
    await waitFor(ui, "a finding at event 2", () => finding.first().waitFor({ timeout: STEP_TIMEOUT }));
    assert.match(await finding.first().innerText(), /never-started|not started|unknown|no .*message/i, "the finding names the problem");
    const marked = page.locator(`${T("timeline-event")}[data-index="2"]`);
    await marked.waitFor({ timeout: STEP_TIMEOUT });
    assert.ok(await marked.getAttribute("data-finding"), "the row of event 2 is marked");
    const others = (await visibleRows(ui)).filter((r) => r.index !== 2 && r.finding);
    assert.deepEqual(others, [], "only event 2 has findings");

    const summary = await api(inspect, `/api/runs/${recId}`);
    assert.equal(summary.source, "recording");
    assert.equal(summary.events, events.length);
    assert.ok(summary.findings >= 1);
    assert.equal((await timelineCounts(ui)).total, events.length);

    // Clicking the finding selects its event.
    await finding.first().click();
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-event][data-index="2"]')?.getAttribute("aria-selected") === "true", null, { timeout: STEP_TIMEOUT });
    await page.waitForFunction(() => (document.querySelector("[data-testid=event-json]")?.textContent || "").includes("never-started"), null, { timeout: STEP_TIMEOUT });

    // The findings filter keeps only marked rows.
    await page.check("#only-findings");
    await page.waitForFunction(() => document.querySelector("[data-testid=timeline]").dataset.count === "1", null, { timeout: STEP_TIMEOUT });
    await page.uncheck("#only-findings");

    // The same file dropped on the page opens a second recording.
    const body = readFileSync(file, "utf8");
    await page.evaluate((text) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], "dropped.jsonl", { type: "application/x-ndjson" }));
      for (const type of ["dragenter", "dragover", "drop"]) {
        document.body.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
      }
    }, body);
    await waitFor(ui, "the dropped recording to be selected", () =>
      page.waitForFunction(
        (prev) => {
          const sel = document.querySelector("[data-testid=run-item][aria-selected=true]");
          return sel && sel.dataset.runId !== prev && sel.dataset.source === "recording";
        },
        recId,
        { timeout: STEP_TIMEOUT },
      ),
    );
    await page.locator(`${T("finding")}[data-index="2"]`).first().waitFor({ timeout: STEP_TIMEOUT });
    assert.ok(await page.locator("#drop-overlay").isHidden(), "the drop overlay went away");
    await assertClean(ui);
  });

  pageCase(
    "8. performance: a 100,000-event recording",
    async (open, t) => {
      const N = 100_000;
      const file = join(tmp, "big.jsonl");
      await new Promise((ok, fail) => {
        const out = createWriteStream(file);
        out.on("error", fail);
        out.on("finish", ok);
        const lines = [
          { type: "RUN_STARTED", threadId: "t-big", runId: "r-big" },
          { type: "TEXT_MESSAGE_START", messageId: "big", role: "assistant" },
        ].map((e) => JSON.stringify(e));
        for (let i = 0; i < N - 4; i++) lines.push(JSON.stringify({ type: "TEXT_MESSAGE_CONTENT", messageId: "big", delta: `w${i % 10} ` }));
        lines.push(JSON.stringify({ type: "TEXT_MESSAGE_END", messageId: "big" }));
        lines.push(JSON.stringify({ type: "RUN_FINISHED", threadId: "t-big", runId: "r-big" }));
        out.end(lines.join("\n") + "\n");
      });

      const ui = await open();
      const { page } = ui;
      const before = await selectedRunId(ui);
      const started = Date.now();
      await page.setInputFiles(T("open-recording"), file);
      await waitFor(ui, "the big recording to render", () =>
        page.waitForFunction(
          ([prev, n]) => {
            const sel = document.querySelector("[data-testid=run-item][aria-selected=true]");
            const tl = document.querySelector("[data-testid=timeline]");
            return (
              sel && sel.dataset.runId !== prev &&
              document.querySelector("[data-testid=status]").textContent === "finished" &&
              Number(tl.dataset.total) === n &&
              Number(tl.dataset.count) === n
            );
          },
          [before, N],
          { timeout: 60_000, polling: 50 },
        ),
      );
      const elapsed = Date.now() - started;
      await waitMessage(ui, "assistant", "w0 w1 w2");

      const cdp = await context.newCDPSession(page);
      await cdp.send("Performance.enable");
      const { metrics } = await cdp.send("Performance.getMetrics");
      const heap = metrics.find((m) => m.name === "JSHeapUsedSize")?.value ?? NaN;
      const heapMb = heap / 1024 / 1024;
      console.log(`inspect perf: ${N} events rendered in ${elapsed} ms, JS heap ${heapMb.toFixed(1)} MB`);
      t.diagnostic(`inspect perf: ${N} events rendered in ${elapsed} ms, JS heap ${heapMb.toFixed(1)} MB`);
      assert.ok(elapsed < 60_000, `rendering took ${elapsed} ms`);
      assert.ok(heapMb < 1024, `JS heap ${heapMb} MB`);

      // Only the visible rows are in the DOM, and the end is reachable.
      const inDom = (await visibleRows(ui)).length;
      assert.ok(inDom > 0 && inDom < 200, `rows in the DOM: ${inDom}`);
      const scrollStart = Date.now();
      await scrollTimeline(ui, "end");
      await waitFor(ui, "the last row", () => page.waitForSelector(`${T("timeline-event")}[data-index="${N - 1}"]`, { timeout: STEP_TIMEOUT }));
      const last = (await visibleRows(ui)).at(-1);
      assert.deepEqual([last.index, last.type], [N - 1, "RUN_FINISHED"]);
      const scrollMs = Date.now() - scrollStart;

      // Filtering 100,000 rows stays quick.
      const filterStart = Date.now();
      await page.fill(T("timeline-filter"), "run_");
      await page.waitForFunction(() => document.querySelector("[data-testid=timeline]").dataset.count === "2", null, { timeout: STEP_TIMEOUT });
      const filterMs = Date.now() - filterStart;
      await page.fill(T("timeline-filter"), "");
      await page.waitForFunction((n) => document.querySelector("[data-testid=timeline]").dataset.count === String(n), N, { timeout: STEP_TIMEOUT });
      // Selecting an event deep in the run shows it.
      await scrollTimeline(ui, "end");
      await page.click(`${T("timeline-event")}[data-index="${N - 2}"]`);
      await page.waitForFunction(() => (document.querySelector("[data-testid=event-json]")?.textContent || "").includes("TEXT_MESSAGE_END"), null, { timeout: STEP_TIMEOUT });
      t.diagnostic(`scroll to the end ${scrollMs} ms, filter ${filterMs} ms`);
      await assertClean(ui);
    },
    PERF_TIMEOUT,
  );
});
