// What the browser tests (browser.test.mjs, postgres.test.mjs) share: the `agui serve`
// processes, the headless browser and the page server, and what they do with one open
// chat page: the page's selectors, waits on what it shows and what it sent, and reads
// of the runtime's own thread list. Every page function takes the `chat` that
// `openChat` returns ({page, log}).
//
//   AGUI_BIN      the agui binary (default: ../../target/debug/agui from here)
//   CHROMIUM_BIN  the browser (default: /usr/bin/chromium)
//   E2E_ARTIFACTS a folder for a screenshot and DOM dump of each failed case

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { distDir, serveStatic } from "../serve.mjs";

export const STEP_TIMEOUT = 15_000;

export const SEL = {
  textarea: "[data-testid=copilot-chat-textarea]",
  sendButton: "[data-testid=copilot-send-button]",
  user: "[data-testid=copilot-user-message]",
  assistant: "[data-testid=copilot-assistant-message]",
  cursor: "[data-testid=copilot-loading-cursor]",
  errors: "[data-testid=errors] [data-testid=error]",
  haiku: "[data-testid=haiku]",
  haikuLine: "[data-testid=haiku-line]",
  steps: "[data-testid=hitl-steps]",
  step: "[data-testid=hitl-step]",
  confirm: "[data-testid=hitl-confirm]",
  // CopilotChat's own suggestion pills.
  suggestion: "[data-testid=copilot-suggestion]",
  // The page's thread list (?threads=1).
  threads: "[data-testid=threads]",
  threadRow: "[data-testid=thread]",
  threadNew: "[data-testid=thread-new]",
  threadsRefresh: "[data-testid=threads-refresh]",
  threadsError: "[data-testid=threads-error]",
  threadId: "[data-testid=thread-id]",
  // The page's approval card, one per open interrupt (useInterrupt).
  interruptCard: "[data-testid=interrupt-card]",
  interruptMessage: "[data-testid=interrupt-message]",
  interruptApprove: "[data-testid=interrupt-approve]",
  interruptReject: "[data-testid=interrupt-reject]",
  interruptCancel: "[data-testid=interrupt-cancel]",
};

export const demoReply = (text) => `You said: "${text}". This is a deterministic demo reply.`;

export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

export async function describeState(chat) {
  const { page, log } = chat;
  const texts = async (sel) =>
    page
      .locator(sel)
      .allInnerTexts()
      .catch(() => ["<page gone>"]);
  const lines = [
    `  page: ${chat.url}`,
    `  user messages: ${JSON.stringify(await texts(SEL.user))}`,
    `  assistant messages: ${JSON.stringify(await texts(SEL.assistant))}`,
    `  loading cursor shown: ${await page.locator(SEL.cursor).count().catch(() => "?")}`,
    `  stop button shown: ${await page.locator(`${SEL.sendButton} svg.lucide-square`).count().catch(() => "?")}`,
    `  onError entries: ${JSON.stringify(await texts(SEL.errors))}`,
    `  suggestions shown: ${JSON.stringify(await texts(SEL.suggestion))}`,
    `  thread id shown: ${JSON.stringify(await texts(SEL.threadId))}`,
    `  thread rows: ${JSON.stringify(await threadRows(chat).catch(() => "<page gone>"))}`,
    `  thread list error: ${JSON.stringify(await texts(SEL.threadsError))}`,
    `  interrupt cards: ${JSON.stringify(await texts(SEL.interruptMessage))}`,
    `  page errors: ${JSON.stringify(log.pageErrors)}`,
    `  console errors/warnings (last 10): ${JSON.stringify(log.console.slice(-10))}`,
    `  runtime requests (last 10):`,
    ...log.requests
      .slice(-10)
      .map(
        (r) =>
          `    ${r.method} ${r.url} -> ${r.status ?? "pending"}` +
          (r.answered !== undefined && r.answered !== r.status ? ` (answered ${r.answered})` : ""),
      ),
  ];
  return lines.join("\n");
}

/** Runs `fn`; on failure, rethrows with `what` and a dump of the page state. */
export async function waitFor(chat, what, fn) {
  try {
    return await fn();
  } catch (e) {
    throw new Error(`timed out waiting for ${what}: ${e.message.split("\n")[0]}\n${await describeState(chat)}`);
  }
}

/** Waits until no run is in flight: no loading cursor and the send button is not a stop button. */
export async function waitIdle(chat, what = "the run to end", timeout = STEP_TIMEOUT) {
  await waitFor(chat, what, () =>
    chat.page.waitForFunction(
      ([cursor, stop]) => !document.querySelector(cursor) && !document.querySelector(stop),
      [SEL.cursor, `${SEL.sendButton} svg.lucide-square`],
      { timeout, polling: 50 },
    ),
  );
}

export async function send(chat, text) {
  const box = chat.page.locator(SEL.textarea);
  await box.fill(text);
  await waitFor(chat, "the send button to be enabled", () =>
    chat.page.locator(`${SEL.sendButton}:not([disabled]) svg.lucide-arrow-up`).waitFor({ timeout: STEP_TIMEOUT }),
  );
  await box.press("Enter");
  await waitFor(chat, `the user message "${text}" to show`, () =>
    chat.page.locator(SEL.user, { hasText: text }).last().waitFor({ timeout: STEP_TIMEOUT }),
  );
}

/** Waits for an assistant message whose whole text is `expected`. */
export async function expectAssistant(chat, expected, timeout = STEP_TIMEOUT, what = "the assistant answer") {
  await waitFor(chat, `${what} ${JSON.stringify(expected)}`, () =>
    chat.page.waitForFunction(
      ([sel, want]) =>
        [...document.querySelectorAll(sel)].some(
          (el) => (el.querySelector(":scope > div") ?? el).innerText.trim() === want,
        ),
      [SEL.assistant, expected],
      { timeout, polling: 50 },
    ),
  );
}

/** Waits for an assistant message whose whole text matches `pattern` (a RegExp). */
export async function expectAssistantMatching(chat, pattern, timeout = STEP_TIMEOUT, what = "an assistant answer") {
  await waitFor(chat, `${what} matching ${pattern}`, () =>
    chat.page.waitForFunction(
      ([sel, source, flags]) =>
        [...document.querySelectorAll(sel)].some((el) =>
          new RegExp(source, flags).test((el.querySelector(":scope > div") ?? el).innerText.trim()),
        ),
      [SEL.assistant, pattern.source, pattern.flags],
      { timeout, polling: 50 },
    ),
  );
}

/** The markdown text of each assistant message (without the tool renders after it). */
export async function assistantTexts(chat) {
  return chat.page.evaluate((sel) =>
    [...document.querySelectorAll(sel)].map((el) => (el.querySelector(":scope > div") ?? el).innerText.trim()),
    SEL.assistant,
  );
}

export async function userTexts(chat) {
  return (await chat.page.locator(SEL.user).allInnerTexts()).map((t) => t.trim());
}

/** Records every distinct text the last assistant message shows, to see it stream. */
export async function watchStreaming(chat) {
  await chat.page.evaluate((sel) => {
    window.__seen = [];
    const note = () => {
      const all = document.querySelectorAll(sel);
      const last = all[all.length - 1];
      const text = last ? (last.querySelector(":scope > div") ?? last).innerText.trim() : "";
      if (text && window.__seen[window.__seen.length - 1] !== text) window.__seen.push(text);
    };
    window.__observer?.disconnect();
    window.__observer = new MutationObserver(note);
    window.__observer.observe(document.body, { subtree: true, childList: true, characterData: true });
  }, SEL.assistant);
}

export async function seenTexts(chat) {
  return chat.page.evaluate(() => window.__seen ?? []);
}

/** Polls `check` (run in node) until it is true; on timeout, fails with `what` and the page state. */
export async function until(chat, what, check, timeout = STEP_TIMEOUT) {
  const end = Date.now() + timeout;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${await describeState(chat)}`);
    await sleep(50);
  }
}

/** The rows of the page's thread list, top to bottom: id, shown name and whether it is the open one. */
export async function threadRows(chat) {
  return chat.page.evaluate((sel) =>
    [...document.querySelectorAll(sel)].map((li) => ({
      id: li.dataset.threadId,
      name: li.querySelector("[data-testid=thread-name]")?.innerText.trim() ?? null,
      current: li.dataset.current === "1",
    })),
    SEL.threadRow,
  );
}

/** Waits until the thread list shows exactly `want` (see threadRows). */
export async function expectRows(chat, what, want) {
  const wanted = JSON.stringify(want);
  await until(chat, `${what}: ${wanted}`, async () => JSON.stringify(await threadRows(chat)) === wanted);
}

/** The thread id the page shows as open. */
export async function shownThread(chat) {
  return (await chat.page.locator(SEL.threadId).innerText()).trim();
}

/** The thread list's row for `id`. */
export function row(chat, id) {
  return chat.page.locator(`${SEL.threadRow}[data-thread-id="${id}"]`);
}

/** The logged requests with this method and path (below the runtime's origin), from index `from` on. */
export function requestsTo(chat, method, path, from = 0) {
  return chat.log.requests.slice(from).filter((r) => r.method === method && new URL(r.url).pathname === path);
}

/** Waits until a logged request matching `pick`, from index `from` on, has finished; returns it. */
export async function finished(chat, what, pick, from = 0) {
  let found;
  await until(chat, what, () => {
    found = chat.log.requests.slice(from).find((r) => pick(r) && r.status !== undefined);
    return !!found;
  });
  return found;
}

/** The threads `GET {runtime}/threads?agentId=…` lists for a token, asked from node (not the page). */
export async function serverThreads(server, token, agent, extra = "") {
  const res = await fetch(`${server.url}/threads?agentId=${encodeURIComponent(agent)}${extra}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  assert.equal(res.status, 200, `GET /threads answered ${res.status}: ${text}`);
  return JSON.parse(text).threads;
}

/** Clicks a thread in the list and waits until the chat shows `users`/`answers` as that thread's history. */
export async function openThreadFromList(chat, id, users, answers) {
  const from = chat.log.requests.length;
  await row(chat, id).locator("[data-testid=thread-open]").click();
  await until(chat, `the page to show thread ${id} as open`, async () => (await shownThread(chat)) === id);
  await finished(
    chat,
    `the connect to thread ${id}`,
    (r) => new URL(r.url).pathname.endsWith("/connect") && JSON.parse(r.body ?? "{}").threadId === id,
    from,
  );
  await until(
    chat,
    `thread ${id}'s history ${JSON.stringify({ users, answers })}`,
    async () =>
      JSON.stringify(await userTexts(chat)) === JSON.stringify(users) &&
      JSON.stringify(await assistantTexts(chat)) === JSON.stringify(answers),
  );
  await waitIdle(chat, `the connect to thread ${id} to end`);
}

/** A thread's stored history from the runtime (`GET /threads/{id}/{what}`, what = "events" or "messages"), asked from node. */
export async function serverHistory(server, token, thread, what) {
  const res = await fetch(`${server.url}/threads/${encodeURIComponent(thread)}/${what}`, {
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });
  const text = await res.text();
  assert.equal(res.status, 200, `GET /threads/${thread}/${what} answered ${res.status}: ${text}`);
  return JSON.parse(text)[what];
}

export const uniqueUser = (name) => `user-${name}-${process.pid}-${Date.now().toString(36)}`;

/** The page must have reported no error through onError and thrown nothing. */
export async function assertClean(chat) {
  const errors = await chat.page.locator(SEL.errors).allInnerTexts();
  assert.deepEqual(errors, [], `CopilotKit reported errors through onError:\n${await describeState(chat)}`);
  assert.deepEqual(chat.log.pageErrors, [], `uncaught errors in the page:\n${await describeState(chat)}`);
}

// ---------------------------------------------------------------- settings

const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const AGUI_BIN = process.env.AGUI_BIN || resolve(exampleDir, "../../target/debug/agui");
export const CHROMIUM_BIN = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const ARTIFACTS = process.env.E2E_ARTIFACTS || "";
const CASE_TIMEOUT = 60_000;

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
 * Starts `agui serve` streaming with `delayMs` between pieces, on `addr` (default: a
 * free loopback port) with `args` added; resolves once it says it listens.
 */
export async function startAgui(delayMs, { addr, args = [] } = {}) {
  addr ??= `127.0.0.1:${await freePort()}`;
  const child = spawn(AGUI_BIN, ["serve", "--addr", addr, "--delay-ms", String(delayMs), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => {
      fail(new Error(`agui serve on ${addr} did not report listening within 20 s; output:\n${output}`));
    }, 20_000);
    const onData = () => {
      if (output.includes("listening on")) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("error", (e) => {
      clearTimeout(timer);
      fail(new Error(`could not start ${AGUI_BIN}: ${e.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`agui serve exited early (code ${code}, signal ${signal}); output:\n${output}`));
    });
  });
  return {
    child,
    addr,
    url: `http://${addr}/copilotkit`,
    output: () => output,
    /** SIGKILL, as a crash: resolves once the process is gone. */
    kill: () =>
      new Promise((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once("exit", () => done());
        child.kill("SIGKILL");
      }),
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

// ---------------------------------------------------------------- pages

let browser;
let userDataDir;
let pageServer;
let pageOrigin;
const openPages = new Set();

/** Opens the chat page and returns a handle that records what went wrong. */
export async function openChat({ runtimeUrl, agent, thread, single = false, threads = false, token = "" }) {
  const page = await browser.newPage();
  openPages.add(page);
  const log = { pageErrors: [], console: [], requests: [] };
  // Each logged request by its playwright Request, so that the many requests to
  // one URL (GET /threads, POST …/suggest) each get their own status.
  const entries = new WeakMap();
  page.on("pageerror", (e) => log.pageErrors.push(e.stack || e.message));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") log.console.push(`${m.type()}: ${m.text()}`);
  });
  page.on("request", (r) => {
    if (r.url().startsWith(runtimeUrl) && r.method() !== "OPTIONS") {
      const entry = { method: r.method(), url: r.url(), body: r.postData(), headers: r.headers() };
      entries.set(r, entry);
      log.requests.push(entry);
    }
  });
  // `answered` is the HTTP status of the response's head; `status` is how the
  // request ended: that status once the body is read, or the failure (CopilotKit
  // reads no body of a thread mutation's answer and aborts it, so a rename that
  // was answered 200 still ends "failed: net::ERR_ABORTED").
  page.on("response", (res) => {
    const entry = entries.get(res.request());
    if (entry) entry.answered = res.status();
  });
  page.on("requestfinished", async (r) => {
    const entry = entries.get(r);
    if (entry) entry.status = (await r.response())?.status();
  });
  page.on("requestfailed", (r) => {
    const entry = entries.get(r);
    if (entry) entry.status = `failed: ${r.failure()?.errorText}`;
  });
  const query = new URLSearchParams({ runtimeUrl, agent, thread });
  if (single) query.set("single", "1");
  if (threads) query.set("threads", "1");
  if (token) query.set("token", token);
  const url = `${pageOrigin}/?${query}`;
  await page.goto(url, { waitUntil: "load", timeout: STEP_TIMEOUT });
  const chat = { page, log, url, runtimeUrl };
  await waitFor(chat, "the chat input to appear", () => page.locator(SEL.textarea).waitFor({ timeout: STEP_TIMEOUT }));
  await waitIdle(chat, "the page to settle after loading (connect finished)");
  return chat;
}

export async function closeChat(chat, name) {
  if (ARTIFACTS && chat && !chat.page.isClosed()) {
    mkdirSync(ARTIFACTS, { recursive: true });
    const base = join(ARTIFACTS, name.replace(/[^a-z0-9]+/gi, "-"));
    await chat.page.screenshot({ path: `${base}.png`, fullPage: true }).catch(() => {});
    writeFileSync(`${base}.txt`, await describeState(chat).catch((e) => String(e)));
  }
  openPages.delete(chat?.page);
  await chat?.page.close().catch(() => {});
}

/** Runs one case with its own page, keeping a picture of it when it fails. */
export function chatCase(name, fn, { timeout = CASE_TIMEOUT } = {}) {
  test(name, { timeout }, async (t) => {
    const opened = [];
    const open = async (options) => {
      const chat = await openChat(options);
      opened.push(chat);
      return chat;
    };
    let failed = true;
    try {
      await fn(open, t);
      failed = false;
    } finally {
      for (const [i, chat] of opened.entries()) {
        if (failed) await closeChat(chat, `${name}-${i}`);
        else {
          openPages.delete(chat.page);
          await chat.page.close().catch(() => {});
        }
      }
    }
  });
}

export const threadId = (name) => `e2e-${name}-${process.pid}-${Date.now().toString(36)}`;

// ---------------------------------------------------------------- the browser

/** Builds dist/ when it is missing or older than src/, and checks that the page, agui and the browser are there. */
export function checkPrerequisites() {
  // Test the page as src/ has it: build dist/ when it is missing or older.
  const built = join(distDir, "main.js");
  const newestSource = Math.max(
    ...readdirSync(join(exampleDir, "src")).map((f) => statSync(join(exampleDir, "src", f)).mtimeMs),
  );
  if (!existsSync(built) || statSync(built).mtimeMs < newestSource) {
    execFileSync(process.execPath, [join(exampleDir, "build.mjs")], { cwd: exampleDir, stdio: "inherit" });
  }
  assert.ok(
    existsSync(join(distDir, "index.html")),
    `no built page in ${distDir}: run \`npm run build\` in ${exampleDir} first`,
  );
  assert.ok(existsSync(AGUI_BIN), `no agui binary at ${AGUI_BIN}: build it (cargo build --bin agui) or set AGUI_BIN`);
  assert.ok(existsSync(CHROMIUM_BIN), `no browser at ${CHROMIUM_BIN}: run scripts/setup-browser.sh or set CHROMIUM_BIN`);
}

/** Serves dist/ on a loopback port of its own and starts the headless browser that openChat uses. */
export async function startBrowser() {
  pageServer = await serveStatic({ dir: distDir, host: "127.0.0.1", port: 0 });
  pageOrigin = `http://127.0.0.1:${pageServer.address().port}`;

  userDataDir = mkdtempSync(join(tmpdir(), "agui-e2e-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
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
    viewport: { width: 1100, height: 900 },
    timeout: 30_000,
  });
  browser = context;
  for (const p of context.pages()) await p.close();
}

/** Closes what startBrowser started (and every page still open). */
export async function stopBrowser() {
  for (const p of openPages) await p.close().catch(() => {});
  await browser?.close().catch(() => {});
  await new Promise((done) => (pageServer ? pageServer.close(() => done()) : done()));
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
}
