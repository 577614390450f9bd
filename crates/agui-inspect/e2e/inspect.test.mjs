// Drives the `agui inspect` page in a real (headless) Chromium.
//
// It starts `agui serve` (the demo agents), `agui inspect` relaying to it, and a
// second `agui inspect --proxy` in front of it, then walks through what the page
// does: runs and their streamed messages, state and diffs, interrupts and their
// resume, recordings with findings (file picker and drag and drop), the proxy fed by
// the reference TypeScript client, and a 100,000-event recording.
//
//   AGUI_BIN      the agui binary (default: ../../../target/debug/agui from here)
//   CHROMIUM_BIN  the browser (default: /usr/bin/chromium)
//   E2E_ARTIFACTS a folder for a screenshot and DOM dump of each failed case
//   SCREENSHOTS=1 saves docs/inspect-*.png (the pictures in the README)
//
// Run with `npm test` in this folder (after `npm ci`), or scripts/test-browser.sh.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { HttpAgent } from "@ag-ui/client";

const here = dirname(fileURLToPath(import.meta.url));
const repoDir = resolve(here, "../../..");
const AGUI_BIN = process.env.AGUI_BIN || resolve(repoDir, "target/debug/agui");
const CHROMIUM_BIN = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const ARTIFACTS = process.env.E2E_ARTIFACTS || "";
const SCREENSHOTS = process.env.SCREENSHOTS === "1";
const DOCS = join(repoDir, "docs");

const STEP_TIMEOUT = 15_000;
const CASE_TIMEOUT = 60_000;
const PERF_TIMEOUT = 180_000;

const T = (id) => `[data-testid="${id}"]`;
const demoReply = (text) => `You said: "${text}". This is a deterministic demo reply.`;

// ---------------------------------------------------------------- processes

function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

/**
 * Starts the agui binary with `args` and resolves once its output matches every
 * pattern in `ready`, with the matches.
 */
async function startAgui(name, args, ready) {
  const child = spawn(AGUI_BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const matches = await new Promise((ok, fail) => {
    const timer = setTimeout(() => {
      fail(new Error(`${name} did not start within 20 s; output:\n${output}`));
    }, 20_000);
    const check = () => {
      const found = ready.map((re) => re.exec(output));
      if (found.every(Boolean)) {
        clearTimeout(timer);
        ok(found);
      }
    };
    child.stdout.on("data", check);
    child.stderr.on("data", check);
    child.once("error", (e) => {
      clearTimeout(timer);
      fail(new Error(`could not start ${AGUI_BIN}: ${e.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`${name} exited early (code ${code}, signal ${signal}); output:\n${output}`));
    });
  });
  return {
    child,
    matches,
    output: () => output,
    stop: () =>
      new Promise((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once("exit", () => done());
        child.kill("SIGTERM");
        setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        }, 3_000).unref();
      }),
  };
}

async function startServe() {
  const addr = `127.0.0.1:${await freePort()}`;
  const p = await startAgui("agui serve", ["serve", "--addr", addr, "--delay-ms", "5"], [/listening on \S+\r?\n/]);
  return { ...p, base: `http://${addr}` };
}

/** Starts `agui inspect`; resolves with the page address (token included) and the proxy's. */
async function startInspect(extra = [], { proxy = false } = {}) {
  const addr = `127.0.0.1:${await freePort()}`;
  const ready = [/agui inspect: open (\S+)\r?\n/];
  if (proxy) ready.push(/agui inspect: proxy on (\S+) -> (\S+)\r?\n/);
  const p = await startAgui("agui inspect", ["inspect", "--addr", addr, ...extra], ready);
  const pageUrl = p.matches[0][1];
  const token = new URLSearchParams(new URL(pageUrl).hash.slice(1)).get("token");
  assert.ok(token, `no token in the printed address ${pageUrl}`);
  return { ...p, pageUrl, origin: `http://${addr}`, token, proxyUrl: proxy ? p.matches[1][1] : null };
}

/** Calls the inspector's API from the test, with the token. */
async function api(inspect, path) {
  const res = await fetch(`${inspect.origin}${path}`, { headers: { "X-Agui-Token": inspect.token } });
  assert.ok(res.ok, `GET ${path} -> ${res.status} ${await res.clone().text()}`);
  return res.json();
}

// ---------------------------------------------------------------- page helpers

let context;
let userDataDir;
let tmp;
let serve;
let inspect;
let proxied;
let slow;
const openPages = new Set();

async function openInspector(target = inspect) {
  const page = await context.newPage();
  openPages.add(page);
  const log = { pageErrors: [], console: [], failed: [], api: [], other: [] };
  page.on("pageerror", (e) => log.pageErrors.push(e.stack || e.message));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") log.console.push(`${m.type()}: ${m.text()}`);
  });
  page.on("request", (r) => {
    const url = r.url();
    if (url.startsWith(`${target.origin}/api/`)) {
      log.api.push({ method: r.method(), url, token: r.headers()["x-agui-token"], body: r.postData() });
    } else if (!url.startsWith(target.origin) && !url.startsWith("blob:") && !url.startsWith("data:")) {
      log.other.push(url);
    }
  });
  page.on("requestfailed", (r) => {
    const why = r.failure()?.errorText || "";
    // A feed is aborted whenever another run is selected: that is no failure.
    if (!/ERR_ABORTED/.test(why)) log.failed.push(`${r.method()} ${r.url()}: ${why}`);
  });
  await page.goto(target.pageUrl, { waitUntil: "load", timeout: STEP_TIMEOUT });
  const ui = { page, log, inspect: target };
  await waitFor(ui, "the page to load its runs", () =>
    page.waitForFunction(() => document.querySelector("[data-testid=agent-url]")?.value !== "", null, { timeout: STEP_TIMEOUT }),
  );
  return ui;
}

async function describeState(ui) {
  const { page, log } = ui;
  const safe = (p) => p.catch((e) => `<${e.message.split("\n")[0]}>`);
  const dump = await safe(
    page.evaluate(() => {
      const q = (s) => document.querySelector(s);
      const all = (s) => [...document.querySelectorAll(s)];
      const tl = q("[data-testid=timeline]");
      return {
        status: q("[data-testid=status]")?.textContent,
        figures: q("[data-testid=figures]")?.textContent,
        timeline: tl && { count: tl.dataset.count, total: tl.dataset.total },
        rows: all("[data-testid=timeline-event]").slice(0, 8).map((r) => `${r.dataset.index} ${r.dataset.eventType}`),
        runs: all("[data-testid=run-item]").map((r) => `${r.dataset.runId}/${r.dataset.source}/${r.dataset.status}${r.getAttribute("aria-selected") === "true" ? " *" : ""}`),
        messages: all("[data-testid=message]").map((m) => `${m.dataset.role}: ${m.innerText.slice(0, 160)}`),
        findings: all("[data-testid=finding]").map((f) => f.innerText),
        interrupt: !q("[data-testid=interrupt]")?.hidden,
        toasts: all(".toast").map((t) => t.innerText),
        event: q("[data-testid=event-json]")?.textContent.slice(0, 300),
      };
    }),
  );
  return [
    `  page: ${ui.inspect.pageUrl}`,
    `  page state: ${JSON.stringify(dump, null, 2).replace(/\n/g, "\n  ")}`,
    `  page errors: ${JSON.stringify(log.pageErrors)}`,
    `  console errors/warnings (last 10): ${JSON.stringify(log.console.slice(-10))}`,
    `  failed requests: ${JSON.stringify(log.failed.slice(-10))}`,
  ].join("\n");
}

/** Runs `fn`; on failure, rethrows with `what` and a dump of the page. */
async function waitFor(ui, what, fn) {
  try {
    return await fn();
  } catch (e) {
    throw new Error(`timed out waiting for ${what}: ${e.message.split("\n")[0]}\n${await describeState(ui)}`);
  }
}

async function waitStatus(ui, status, timeout = STEP_TIMEOUT) {
  await waitFor(ui, `status "${status}"`, () =>
    ui.page.waitForFunction((want) => document.querySelector("[data-testid=status]")?.textContent === want, status, {
      timeout,
      polling: 50,
    }),
  );
}

/** The id of the run selected in the run list. */
async function selectedRunId(ui) {
  return ui.page.evaluate(() => document.querySelector("[data-testid=run-item][aria-selected=true]")?.dataset.runId ?? null);
}

async function timelineCounts(ui) {
  return ui.page.$eval(T("timeline"), (el) => ({ count: Number(el.dataset.count), total: Number(el.dataset.total) }));
}

/** The rows the virtual list has in the DOM: [{index, type, finding, selected}]. */
async function visibleRows(ui) {
  return ui.page.$$eval(T("timeline-event"), (rows) =>
    rows.map((r) => ({
      index: Number(r.dataset.index),
      type: r.dataset.eventType,
      finding: r.dataset.finding || null,
      selected: r.getAttribute("aria-selected") === "true",
    })),
  );
}

async function scrollTimeline(ui, where) {
  await ui.page.$eval(
    T("timeline"),
    (el, w) => {
      el.scrollTop = w === "end" ? el.scrollHeight : 0;
    },
    where,
  );
}

async function showTab(ui, name) {
  await ui.page.click(T(`tab-${name}`));
}

async function setAgent(ui, url) {
  await ui.page.fill(T("agent-url"), url);
}

/** Types a message and presses Run; resolves with the new run's id once it is selected. */
async function runMessage(ui, text) {
  const before = await selectedRunId(ui);
  await ui.page.fill(T("message-input"), text);
  await ui.page.click(T("run-button"));
  await waitFor(ui, "the new run to be selected", () =>
    ui.page.waitForFunction(
      (prev) => {
        const sel = document.querySelector("[data-testid=run-item][aria-selected=true]");
        return sel && sel.dataset.runId !== prev && sel.dataset.source === "relay";
      },
      before,
      { timeout: STEP_TIMEOUT, polling: 50 },
    ),
  );
  return selectedRunId(ui);
}

async function messages(ui) {
  return ui.page.$$eval(T("message"), (els) => els.map((m) => ({ role: m.dataset.role, text: m.querySelector(".msg-body")?.textContent ?? m.innerText })));
}

async function waitMessage(ui, role, text) {
  await waitFor(ui, `a ${role} message ${JSON.stringify(text)}`, () =>
    ui.page.waitForFunction(
      ([r, t]) => [...document.querySelectorAll(`[data-testid=message][data-role="${r}"]`)].some((m) => m.innerText.includes(t)),
      [role, text],
      { timeout: STEP_TIMEOUT, polling: 50 },
    ),
  );
}

async function clickRow(ui, index) {
  const row = ui.page.locator(`${T("timeline-event")}[data-index="${index}"]`);
  await waitFor(ui, `timeline row #${index}`, () => row.waitFor({ timeout: STEP_TIMEOUT }));
  await row.click();
  await waitFor(ui, `the JSON of event #${index}`, () =>
    ui.page.waitForFunction(
      (i) => {
        const row = document.querySelector(`[data-testid=timeline-event][data-index="${i}"]`);
        return row?.getAttribute("aria-selected") === "true" && (document.querySelector("[data-testid=event-json]")?.textContent || "").length > 0;
      },
      index,
      { timeout: STEP_TIMEOUT, polling: 50 },
    ),
  );
  return JSON.parse(await ui.page.textContent(T("event-json")));
}

async function assertClean(ui) {
  const toasts = await ui.page.$$eval(".toast:not(.info)", (els) => els.map((e) => e.innerText));
  assert.deepEqual(toasts, [], `the page reported errors:\n${await describeState(ui)}`);
  assert.deepEqual(ui.log.pageErrors, [], `uncaught errors in the page:\n${await describeState(ui)}`);
  assert.deepEqual(ui.log.console, [], `console errors or warnings:\n${await describeState(ui)}`);
  assert.deepEqual(ui.log.failed, [], `failed requests:\n${await describeState(ui)}`);
  assert.deepEqual(ui.log.other, [], "the page fetched something from elsewhere");
  const token = ui.inspect.token;
  assert.ok(ui.log.api.length > 0, "no API request was seen");
  for (const r of ui.log.api) {
    assert.equal(r.token, token, `${r.method} ${r.url} went without the token header`);
    assert.ok(!r.url.includes(token), `the token is in a URL: ${r.url}`);
  }
}

/** The bodies of the page's POST /api/runs requests, parsed. */
function startRequests(ui) {
  return ui.log.api.filter((r) => r.method === "POST" && new URL(r.url).pathname === "/api/runs").map((r) => JSON.parse(r.body));
}

async function shot(ui, name) {
  if (!SCREENSHOTS) return;
  mkdirSync(DOCS, { recursive: true });
  await ui.page.screenshot({ path: join(DOCS, name) });
}

async function closeUi(ui, name, failed) {
  if (failed && ARTIFACTS && ui && !ui.page.isClosed()) {
    mkdirSync(ARTIFACTS, { recursive: true });
    const base = join(ARTIFACTS, name.replace(/[^a-z0-9]+/gi, "-"));
    await ui.page.screenshot({ path: `${base}.png` }).catch(() => {});
    writeFileSync(`${base}.txt`, await describeState(ui).catch((e) => String(e)));
  }
  openPages.delete(ui?.page);
  await ui?.page.close().catch(() => {});
}

/** Runs one case with its own pages, keeping a picture of each when it fails. */
function pageCase(name, fn, timeout = CASE_TIMEOUT) {
  test(name, { timeout }, async (t) => {
    const opened = [];
    const open = async (target) => {
      const ui = await openInspector(target);
      opened.push(ui);
      return ui;
    };
    let failed = true;
    try {
      await fn(open, t);
      failed = false;
    } finally {
      for (const [i, ui] of opened.entries()) await closeUi(ui, `${name}-${i}`, failed);
    }
  });
}

function writeJsonl(path, events) {
  writeFileSync(path, events.map((e) => JSON.stringify(e)).join("\n") + "\n");
  return path;
}

// ---------------------------------------------------------------- the cases

describe("agui inspect in a real browser", () => {
  before(async () => {
    assert.ok(existsSync(AGUI_BIN), `no agui binary at ${AGUI_BIN}: build it (cargo build --bin agui) or set AGUI_BIN`);
    assert.ok(existsSync(CHROMIUM_BIN), `no browser at ${CHROMIUM_BIN}: run scripts/setup-browser.sh or set CHROMIUM_BIN`);
    tmp = mkdtempSync(join(tmpdir(), "agui-inspect-e2e-"));
    serve = await startServe();
    [inspect, proxied] = await Promise.all([
      startInspect([`${serve.base}/agentic_chat`]),
      startInspect(["--proxy", "--upstream", serve.base, "--listen", `127.0.0.1:${await freePort()}`], { proxy: true }),
    ]);

    userDataDir = join(tmp, "chromium");
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_BIN,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      viewport: { width: 1400, height: 900 },
      acceptDownloads: true,
      timeout: 30_000,
    });
    for (const p of context.pages()) await p.close();
  });

  after(async () => {
    for (const p of openPages) await p.close().catch(() => {});
    await context?.close().catch(() => {});
    await Promise.all([inspect?.stop(), proxied?.stop(), serve?.stop(), slow?.stop()]);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
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
    assert.deepEqual(
      (await messages(ui)).map((m) => m.role),
      ["user", "assistant", "assistant"],
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

  pageCase("5. proxy: the reference client's run through the proxy shows up live", async (open) => {
    const ui = await open(proxied);
    const { page } = ui;
    const info = await api(proxied, "/api/info");
    assert.equal(info.proxy?.upstream, serve.base);
    assert.match(await page.innerText("#proxy-info"), new RegExp(proxied.proxyUrl.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));

    const text = "Through the proxy";
    const agent = new HttpAgent({ url: `${proxied.proxyUrl}/agentic_chat`, threadId: `proxy-${process.pid}` });
    agent.addMessage({ id: "proxy-user-1", role: "user", content: text });
    await agent.runAgent();
    const reply = agent.messages.at(-1);
    assert.equal(reply?.role, "assistant");
    assert.equal(reply.content, demoReply(text), "the client got the agent's answer through the proxy");

    const item = page.locator(`${T("run-item")}[data-source=proxy]`);
    await waitFor(ui, "a proxy run in the list", () => item.first().waitFor({ timeout: STEP_TIMEOUT }));
    // The newest proxy run is selected by itself; clicking it again keeps it.
    await waitFor(ui, "the proxy run to be selected", () =>
      page.waitForFunction(() => document.querySelector("[data-testid=run-item][aria-selected=true]")?.dataset.source === "proxy", null, { timeout: STEP_TIMEOUT }),
    );
    await item.first().click();
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", demoReply(text));
    await waitMessage(ui, "user", text);
    const label = await item.first().innerText();
    assert.match(label, /POST \/agentic_chat/);

    const { runs } = await api(proxied, "/api/runs");
    const run = runs.find((r) => r.source === "proxy");
    assert.equal(run.input.threadId, `proxy-${process.pid}`);
    assert.equal(Number((await timelineCounts(ui)).total), run.events);

    // A second client run appears and is selected while the page is open.
    const first = await selectedRunId(ui);
    agent.addMessage({ id: "proxy-user-2", role: "user", content: "Once more" });
    await agent.runAgent();
    await waitFor(ui, "the second proxy run to be selected", () =>
      page.waitForFunction((prev) => {
        const sel = document.querySelector("[data-testid=run-item][aria-selected=true]");
        return sel && sel.dataset.runId !== prev && sel.dataset.source === "proxy";
      }, first, { timeout: STEP_TIMEOUT }),
    );
    await waitMessage(ui, "assistant", demoReply("Once more"));
    assert.equal(await page.locator(`${T("run-item")}[data-source=proxy]`).count(), 2);

    // Re-send the proxy run's input through the relay, to the agent URL.
    await setAgent(ui, `${serve.base}/agentic_chat`);
    const proxyRun = await selectedRunId(ui);
    await page.click(T("resend-button"));
    await page.waitForFunction((prev) => {
      const sel = document.querySelector("[data-testid=run-item][aria-selected=true]");
      return sel && sel.dataset.runId !== prev && sel.dataset.source === "relay";
    }, proxyRun, { timeout: STEP_TIMEOUT });
    await waitStatus(ui, "finished");
    await waitMessage(ui, "assistant", demoReply("Once more"));
    const resent = await api(proxied, `/api/runs/${await selectedRunId(ui)}`);
    const original = await api(proxied, `/api/runs/${proxyRun}`);
    assert.deepEqual(resent.input, original.input, "Re-send sends the run's input as it was");
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
