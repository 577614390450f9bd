// What the real-browser tests of the `agui inspect` page share: the agui processes
// they start, a headless Chromium, and helpers that drive and read the page.
//
// Each test file starts its own `agui serve` (the demo agents), the inspectors it
// needs (`agui inspect` relaying to it, or `agui inspect --proxy` in front of it) and a
// browser, with startStack(), and ends them with stopStack().
//
//   AGUI_BIN      the agui binary (default: ../../../target/debug/agui from here)
//   CHROMIUM_BIN  the browser (default: /usr/bin/chromium)
//   E2E_ARTIFACTS a folder for a screenshot and DOM dump of each failed case
//   SCREENSHOTS=1 saves docs/inspect-*.png (the pictures in the README)
//
// Run with `npm test` in this folder (after `npm ci`), or scripts/test-browser.sh.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repoDir = resolve(here, "../../..");
const AGUI_BIN = process.env.AGUI_BIN || resolve(repoDir, "target/debug/agui");
const CHROMIUM_BIN = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const ARTIFACTS = process.env.E2E_ARTIFACTS || "";
const SCREENSHOTS = process.env.SCREENSHOTS === "1";
const DOCS = join(repoDir, "docs");

export const STEP_TIMEOUT = 15_000;
const CASE_TIMEOUT = 60_000;
export const PERF_TIMEOUT = 180_000;

export const T = (id) => `[data-testid="${id}"]`;
export const demoReply = (text) => `You said: "${text}". This is a deterministic demo reply.`;

// ---------------------------------------------------------------- processes

export function freePort() {
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
export async function startAgui(name, args, ready) {
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
export async function api(inspect, path) {
  const res = await fetch(`${inspect.origin}${path}`, { headers: { "X-Agui-Token": inspect.token } });
  assert.ok(res.ok, `GET ${path} -> ${res.status} ${await res.clone().text()}`);
  return res.json();
}

// ---------------------------------------------------------------- the stack of a test file

let context;
let tmp;
let serve;
let inspect;
let proxied;
const openPages = new Set();

/**
 * Starts `agui serve`, then `agui inspect` relaying to it (unless `relay` is false) and
 * `agui inspect --proxy` in front of it (with `proxy`), then the browser. Resolves with
 * them and a scratch folder.
 */
export async function startStack({ relay = true, proxy = false } = {}) {
  assert.ok(existsSync(AGUI_BIN), `no agui binary at ${AGUI_BIN}: build it (cargo build --bin agui) or set AGUI_BIN`);
  assert.ok(existsSync(CHROMIUM_BIN), `no browser at ${CHROMIUM_BIN}: run scripts/setup-browser.sh or set CHROMIUM_BIN`);
  tmp = mkdtempSync(join(tmpdir(), "agui-sdk-inspect-e2e-"));
  serve = await startServe();
  [inspect, proxied] = await Promise.all([
    relay ? startInspect([`${serve.base}/agentic_chat`]) : null,
    proxy ? startInspect(["--proxy", "--upstream", serve.base, "--listen", `127.0.0.1:${await freePort()}`], { proxy: true }) : null,
  ]);

  const userDataDir = join(tmp, "chromium");
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
  return { tmp, serve, inspect, proxied, context };
}

/** Closes the pages and the browser, stops the processes (and `more` of them) and removes the scratch folder. */
export async function stopStack(...more) {
  for (const p of openPages) await p.close().catch(() => {});
  await context?.close().catch(() => {});
  await Promise.all([inspect?.stop(), proxied?.stop(), serve?.stop(), ...more.map((p) => p?.stop())]);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}

// ---------------------------------------------------------------- page helpers

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
export async function waitFor(ui, what, fn) {
  try {
    return await fn();
  } catch (e) {
    throw new Error(`timed out waiting for ${what}: ${e.message.split("\n")[0]}\n${await describeState(ui)}`);
  }
}

export async function waitStatus(ui, status, timeout = STEP_TIMEOUT) {
  await waitFor(ui, `status "${status}"`, () =>
    ui.page.waitForFunction((want) => document.querySelector("[data-testid=status]")?.textContent === want, status, {
      timeout,
      polling: 50,
    }),
  );
}

/** The id of the run selected in the run list. */
export async function selectedRunId(ui) {
  return ui.page.evaluate(() => document.querySelector("[data-testid=run-item][aria-selected=true]")?.dataset.runId ?? null);
}

export async function timelineCounts(ui) {
  return ui.page.$eval(T("timeline"), (el) => ({ count: Number(el.dataset.count), total: Number(el.dataset.total) }));
}

/** The rows the virtual list has in the DOM: [{index, type, finding, selected}]. */
export async function visibleRows(ui) {
  return ui.page.$$eval(T("timeline-event"), (rows) =>
    rows.map((r) => ({
      index: Number(r.dataset.index),
      type: r.dataset.eventType,
      finding: r.dataset.finding || null,
      selected: r.getAttribute("aria-selected") === "true",
    })),
  );
}

export async function scrollTimeline(ui, where) {
  await ui.page.$eval(
    T("timeline"),
    (el, w) => {
      el.scrollTop = w === "end" ? el.scrollHeight : 0;
    },
    where,
  );
}

export async function showTab(ui, name) {
  await ui.page.click(T(`tab-${name}`));
}

export async function setAgent(ui, url) {
  await ui.page.fill(T("agent-url"), url);
}

/** Types a message and presses Run; resolves with the new run's id once it is selected. */
export async function runMessage(ui, text) {
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

export async function messages(ui) {
  return ui.page.$$eval(T("message"), (els) => els.map((m) => ({ role: m.dataset.role, text: m.querySelector(".msg-body")?.textContent ?? m.innerText })));
}

export async function waitMessage(ui, role, text) {
  await waitFor(ui, `a ${role} message ${JSON.stringify(text)}`, () =>
    ui.page.waitForFunction(
      ([r, t]) => [...document.querySelectorAll(`[data-testid=message][data-role="${r}"]`)].some((m) => m.innerText.includes(t)),
      [role, text],
      { timeout: STEP_TIMEOUT, polling: 50 },
    ),
  );
}

export async function clickRow(ui, index) {
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

export async function assertClean(ui) {
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
export function startRequests(ui) {
  return ui.log.api.filter((r) => r.method === "POST" && new URL(r.url).pathname === "/api/runs").map((r) => JSON.parse(r.body));
}

export async function shot(ui, name) {
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
export function pageCase(name, fn, timeout = CASE_TIMEOUT) {
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

export function writeJsonl(path, events) {
  writeFileSync(path, events.map((e) => JSON.stringify(e)).join("\n") + "\n");
  return path;
}
