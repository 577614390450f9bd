// Drives the example page in a real (headless) Chromium against the
// CopilotKit runtime that `agui serve` mounts at /copilotkit.
//
// It starts two `agui serve` processes (a fast one and a slow one, for the
// stop case), serves dist/ from a third loopback port so that every runtime
// call is cross-origin, and walks through the chat features the page wires.
//
//   AGUI_BIN      the agui binary (default: ../../target/debug/agui from here)
//   CHROMIUM_BIN  the browser (default: /usr/bin/chromium)
//   E2E_ARTIFACTS a folder for a screenshot and DOM dump of each failed case
//
// Run with `npm run test:e2e` after `npm run build`.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { distDir, serveStatic } from "../serve.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const exampleDir = resolve(here, "..");
const AGUI_BIN = process.env.AGUI_BIN || resolve(exampleDir, "../../target/debug/agui");
const CHROMIUM_BIN = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const ARTIFACTS = process.env.E2E_ARTIFACTS || "";

const FAST_DELAY_MS = 20;
const SLOW_DELAY_MS = 300;
const STEP_TIMEOUT = 15_000;
const CASE_TIMEOUT = 60_000;

const SEL = {
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
};

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

/** Starts `agui serve` on a free loopback port; resolves once it says it listens. */
async function startAgui(delayMs) {
  const port = await freePort();
  const addr = `127.0.0.1:${port}`;
  const child = spawn(AGUI_BIN, ["serve", "--addr", addr, "--delay-ms", String(delayMs)], {
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
    url: `http://${addr}/copilotkit`,
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

// ---------------------------------------------------------------- page helpers

let browser;
let userDataDir;
let pageServer;
let pageOrigin;
let fast;
let slow;
const openPages = new Set();

/** Opens the chat page and returns a handle that records what went wrong. */
async function openChat({ runtimeUrl, agent, thread, single = false, threads = false, token = "" }) {
  const page = await browser.newPage();
  openPages.add(page);
  const log = { pageErrors: [], console: [], requests: [] };
  page.on("pageerror", (e) => log.pageErrors.push(e.stack || e.message));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") log.console.push(`${m.type()}: ${m.text()}`);
  });
  page.on("request", (r) => {
    if (r.url().startsWith(runtimeUrl) && r.method() !== "OPTIONS") {
      log.requests.push({ method: r.method(), url: r.url(), body: r.postData(), headers: r.headers() });
    }
  });
  page.on("requestfinished", async (r) => {
    const entry = log.requests.find((e) => e.url === r.url() && e.status === undefined);
    if (entry) entry.status = (await r.response())?.status();
  });
  page.on("requestfailed", (r) => {
    const entry = log.requests.find((e) => e.url === r.url() && e.status === undefined);
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

async function describeState(chat) {
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
    `  page errors: ${JSON.stringify(log.pageErrors)}`,
    `  console errors/warnings (last 10): ${JSON.stringify(log.console.slice(-10))}`,
    `  runtime requests (last 10):`,
    ...log.requests.slice(-10).map((r) => `    ${r.method} ${r.url} -> ${r.status ?? "pending"}`),
  ];
  return lines.join("\n");
}

/** Runs `fn`; on failure, rethrows with `what` and a dump of the page state. */
async function waitFor(chat, what, fn) {
  try {
    return await fn();
  } catch (e) {
    throw new Error(`timed out waiting for ${what}: ${e.message.split("\n")[0]}\n${await describeState(chat)}`);
  }
}

/** Waits until no run is in flight: no loading cursor and the send button is not a stop button. */
async function waitIdle(chat, what = "the run to end", timeout = STEP_TIMEOUT) {
  await waitFor(chat, what, () =>
    chat.page.waitForFunction(
      ([cursor, stop]) => !document.querySelector(cursor) && !document.querySelector(stop),
      [SEL.cursor, `${SEL.sendButton} svg.lucide-square`],
      { timeout, polling: 50 },
    ),
  );
}

async function send(chat, text) {
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
async function expectAssistant(chat, expected, timeout = STEP_TIMEOUT, what = "the assistant answer") {
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

/** The markdown text of each assistant message (without the tool renders after it). */
async function assistantTexts(chat) {
  return chat.page.evaluate((sel) =>
    [...document.querySelectorAll(sel)].map((el) => (el.querySelector(":scope > div") ?? el).innerText.trim()),
    SEL.assistant,
  );
}

async function userTexts(chat) {
  return (await chat.page.locator(SEL.user).allInnerTexts()).map((t) => t.trim());
}

/** Records every distinct text the last assistant message shows, to see it stream. */
async function watchStreaming(chat) {
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

async function seenTexts(chat) {
  return chat.page.evaluate(() => window.__seen ?? []);
}

/** The page must have reported no error through onError and thrown nothing. */
async function assertClean(chat) {
  const errors = await chat.page.locator(SEL.errors).allInnerTexts();
  assert.deepEqual(errors, [], `CopilotKit reported errors through onError:\n${await describeState(chat)}`);
  assert.deepEqual(chat.log.pageErrors, [], `uncaught errors in the page:\n${await describeState(chat)}`);
}

async function closeChat(chat, name) {
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
function chatCase(name, fn) {
  test(name, { timeout: CASE_TIMEOUT }, async (t) => {
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

const threadId = (name) => `e2e-${name}-${process.pid}-${Date.now().toString(36)}`;

// ---------------------------------------------------------------- the cases

describe("CopilotKit page against agui serve", () => {
  before(async () => {
    assert.ok(
      existsSync(join(distDir, "index.html")),
      `no built page in ${distDir}: run \`npm run build\` in ${exampleDir} first`,
    );
    assert.ok(existsSync(AGUI_BIN), `no agui binary at ${AGUI_BIN}: build it (cargo build --bin agui) or set AGUI_BIN`);
    assert.ok(existsSync(CHROMIUM_BIN), `no browser at ${CHROMIUM_BIN}: run scripts/setup-browser.sh or set CHROMIUM_BIN`);

    [fast, slow] = await Promise.all([startAgui(FAST_DELAY_MS), startAgui(SLOW_DELAY_MS)]);
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
  });

  after(async () => {
    for (const p of openPages) await p.close().catch(() => {});
    await browser?.close().catch(() => {});
    await Promise.all([fast?.stop(), slow?.stop()]);
    await new Promise((done) => (pageServer ? pageServer.close(() => done()) : done()));
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  chatCase("a. agentic_chat streams its answer", async (open) => {
    const chat = await open({ runtimeUrl: fast.url, agent: "agentic_chat", thread: threadId("a") });
    await watchStreaming(chat);
    const text = "Hello from a real browser, one word at a time";
    await send(chat, text);
    await expectAssistant(chat, demoReply(text));
    await waitIdle(chat);
    const seen = await seenTexts(chat);
    assert.ok(
      seen.length >= 3 && seen.every((s) => demoReply(text).startsWith(s.replace(/\s+$/, ""))),
      `the answer did not arrive in growing pieces; texts seen: ${JSON.stringify(seen)}`,
    );
    const routes = chat.log.requests.map((r) => `${r.method} ${new URL(r.url).pathname}`);
    assert.ok(
      routes.includes("POST /copilotkit/agent/agentic_chat/run"),
      `the run did not go to the multi-route endpoint; requests: ${JSON.stringify(routes)}`,
    );
    await assertClean(chat);
  });

  chatCase("b. a reload restores the thread through connect", async (open) => {
    const thread = threadId("b");
    const first = "Remember this line";
    const chat = await open({ runtimeUrl: fast.url, agent: "agentic_chat", thread });
    await send(chat, first);
    await expectAssistant(chat, demoReply(first));
    await waitIdle(chat);
    await assertClean(chat);

    const requestsBefore = chat.log.requests.length;
    await chat.page.reload({ waitUntil: "load", timeout: STEP_TIMEOUT });
    await waitFor(chat, "the chat input after the reload", () =>
      chat.page.locator(SEL.textarea).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await expectAssistant(chat, demoReply(first), STEP_TIMEOUT, "the answer restored after the reload");
    await waitIdle(chat, "the restoring connect to end");
    const connects = chat.log.requests
      .slice(requestsBefore)
      .filter((r) => new URL(r.url).pathname === "/copilotkit/agent/agentic_chat/connect");
    assert.ok(connects.length >= 1, `no connect request after the reload:\n${await describeState(chat)}`);
    assert.deepEqual(await userTexts(chat), [first], "the restored user messages");
    assert.deepEqual(await assistantTexts(chat), [demoReply(first)], "the restored assistant messages");

    const second = "And now a second line";
    await send(chat, second);
    await expectAssistant(chat, demoReply(second));
    await waitIdle(chat);
    assert.deepEqual(await userTexts(chat), [first, second], "user messages after sending on the restored thread");
    assert.deepEqual(
      await assistantTexts(chat),
      [demoReply(first), demoReply(second)],
      "assistant messages after sending on the restored thread",
    );
    await assertClean(chat);
  });

  chatCase("c. a frontend tool round trip (generate_haiku)", async (open) => {
    const chat = await open({ runtimeUrl: fast.url, agent: "tool_based_generative_ui", thread: threadId("c") });
    await send(chat, "Write me a haiku about the sea");
    await waitFor(chat, "the haiku to render", () => chat.page.locator(SEL.haiku).first().waitFor({ timeout: STEP_TIMEOUT }));
    await expectAssistant(chat, "Glad you liked the haiku.");
    await waitIdle(chat);
    // The arguments stream in, so the lines are only read once the call is complete.
    await waitFor(chat, "the haiku's tool call to be complete", () =>
      chat.page.locator(`${SEL.haiku}[data-status=complete]`).waitFor({ timeout: STEP_TIMEOUT }),
    );
    const lines = (await chat.page.locator(SEL.haikuLine).allInnerTexts()).map((t) => t.trim());
    assert.equal(lines.length, 3, `expected three english lines, got ${JSON.stringify(lines)}`);
    assert.ok(lines.every((l) => l.length > 0), `empty haiku line in ${JSON.stringify(lines)}`);
    const runs = chat.log.requests.filter((r) => new URL(r.url).pathname.endsWith("/run"));
    assert.equal(runs.length, 2, `expected the first run and one follow-up after the tool result:\n${await describeState(chat)}`);
    const followUp = JSON.parse(runs[1].body ?? "{}");
    const last = followUp.messages?.at(-1);
    assert.equal(last?.role, "tool", `the follow-up run does not end with the tool result: ${runs[1].body}`);
    await assertClean(chat);
  });

  chatCase("d. human in the loop (generate_task_steps)", async (open) => {
    const chat = await open({ runtimeUrl: fast.url, agent: "human_in_the_loop", thread: threadId("d") });
    await send(chat, "Plan a trip to the mountains");
    await expectAssistant(chat, "Here is a plan. Please review the steps.");
    await waitFor(chat, "four task steps with a Confirm button", async () => {
      await chat.page.locator(SEL.confirm).waitFor({ timeout: STEP_TIMEOUT });
      await chat.page.waitForFunction((sel) => document.querySelectorAll(sel).length === 4, SEL.step, {
        timeout: STEP_TIMEOUT,
      });
    });
    await waitFor(chat, "Confirm to become clickable", () =>
      chat.page.locator(`${SEL.confirm}:not([disabled])`).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await chat.page.locator(SEL.confirm).click();
    await expectAssistant(chat, "Executing the 4 steps you approved.");
    await waitIdle(chat);

    // A second round, with one step unticked.
    await send(chat, "Plan it again, shorter");
    await waitFor(chat, "a second, unanswered list of steps", () =>
      chat.page.locator(SEL.confirm).waitFor({ timeout: STEP_TIMEOUT }),
    );
    const second = chat.page.locator(SEL.steps).last();
    await waitFor(chat, "Confirm to become clickable (second round)", () =>
      second.locator(`${SEL.confirm}:not([disabled])`).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await second.locator(SEL.step).nth(1).uncheck();
    await second.locator(SEL.confirm).click();
    await expectAssistant(chat, "Executing the 3 steps you approved.");
    await waitIdle(chat);
    await assertClean(chat);
  });

  chatCase("e. stop a slow run mid-stream", async (open, t) => {
    const chat = await open({ runtimeUrl: slow.url, agent: "agentic_chat", thread: threadId("e") });
    const text = "Please answer slowly so that there is time to press the stop button";
    const full = demoReply(text);
    await send(chat, text);
    await waitFor(chat, "the slow answer to begin", () =>
      chat.page.waitForFunction(
        (sel) => {
          const all = document.querySelectorAll(sel);
          const last = all[all.length - 1];
          return !!last && (last.querySelector(":scope > div") ?? last).innerText.trim().split(/\s+/).length >= 3;
        },
        SEL.assistant,
        { timeout: STEP_TIMEOUT, polling: 50 },
      ),
    );
    const stopButton = chat.page.locator(`${SEL.sendButton}:has(svg.lucide-square)`);
    await waitFor(chat, "the send button to turn into a stop button", () => stopButton.waitFor({ timeout: 5_000 }));
    await stopButton.click();
    const stoppedAt = Date.now();
    await waitIdle(chat, "the run to end after stop", 10_000);
    const stopLatency = Date.now() - stoppedAt;
    const partial = (await assistantTexts(chat)).at(-1) ?? "";
    assert.ok(
      partial.length < full.length && full.startsWith(partial),
      `the answer was not cut short by stop: ${JSON.stringify(partial)}`,
    );
    const stops = chat.log.requests.filter((r) => /\/copilotkit\/agent\/agentic_chat\/stop\//.test(r.url));
    assert.equal(stops.length, 1, `expected one stop request:\n${await describeState(chat)}`);
    await chat.page.waitForTimeout(2 * SLOW_DELAY_MS);
    assert.equal((await assistantTexts(chat)).at(-1), partial, "the answer kept growing after the stop");

    const next = "short one";
    await send(chat, next);
    await expectAssistant(chat, demoReply(next), 20_000);
    await waitIdle(chat);
    await assertClean(chat);
    t.diagnostic(`stop took ${stopLatency} ms to settle the page`);

    // The stopped run's thread restores after a reload: its replay is one the
    // page's client (@ag-ui/client 0.0.59, strict schemas) accepts, cut-short
    // answer included.
    await chat.page.reload({ waitUntil: "load", timeout: STEP_TIMEOUT });
    await waitFor(chat, "the chat input after the reload", () =>
      chat.page.locator(SEL.textarea).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await expectAssistant(chat, demoReply(next), STEP_TIMEOUT, "the thread restored after a stopped run");
    await waitIdle(chat, "the restoring connect to end");
    assert.deepEqual(await userTexts(chat), [text, next], "the restored user messages");
    assert.deepEqual(await assistantTexts(chat), [partial, demoReply(next)], "the restored answers");
    await assertClean(chat);
  });

  chatCase("f. the thread list shows this user's conversations, and another user's none", async (open) => {
    const thread = threadId("g");
    const user = `user-a-${process.pid}-${Date.now().toString(36)}`;
    const chat = await open({ runtimeUrl: fast.url, agent: "agentic_chat", thread, threads: true, token: user });
    const text = "A conversation to find again";
    await send(chat, text);
    await expectAssistant(chat, demoReply(text));
    await waitIdle(chat);
    await chat.page.locator('[data-testid="threads-refresh"]').click();
    await waitFor(chat, "the thread to appear in the list", () =>
      chat.page.locator('[data-testid="thread"][data-current="1"]').waitFor({ timeout: STEP_TIMEOUT }),
    );
    assert.equal(
      await chat.page.locator('[data-testid="thread"][data-current="1"]').innerText(),
      thread,
    );
    const lists = chat.log.requests.filter((r) => r.method === "GET" && new URL(r.url).pathname === "/copilotkit/threads");
    assert.ok(lists.length >= 1, `no GET /threads:\n${await describeState(chat)}`);
    assert.ok(lists.every((r) => r.status === 200), `a thread list failed: ${JSON.stringify(lists)}`);
    assert.equal(await chat.page.locator('[data-testid="threads-error"]').count(), 0);
    assert.ok(
      chat.log.requests.every((r) => r.headers?.authorization === `Bearer ${user}`),
      "every runtime request carries the user's token",
    );
    await assertClean(chat);

    // Another user (another token) on the same thread id: none of the first one's
    // threads, and the thread id is a new, empty conversation.
    const other = await open({ runtimeUrl: fast.url, agent: "agentic_chat", thread, threads: true, token: `${user}-other` });
    await other.page.locator('[data-testid="threads-refresh"]').click();
    await waitFor(other, "the other user's list to load", () =>
      other.page.waitForFunction(() => document.querySelector('[data-testid="threads"]')?.dataset.loading === "0", null, {
        timeout: STEP_TIMEOUT,
      }),
    );
    await other.page.waitForTimeout(300);
    assert.equal(await other.page.locator('[data-testid="thread"]').count(), 0, "another user sees no threads");
    assert.deepEqual(await assistantTexts(other), [], "another user's connect replays nothing");
    await assertClean(other);
  });

  chatCase("g. single-route transport", async (open) => {
    const chat = await open({ runtimeUrl: fast.url, agent: "agentic_chat", thread: threadId("f"), single: true });
    const text = "One endpoint for everything";
    await send(chat, text);
    await expectAssistant(chat, demoReply(text));
    await waitIdle(chat);
    const paths = chat.log.requests.map((r) => `${r.method} ${new URL(r.url).pathname}`);
    assert.ok(
      paths.length > 0 && paths.every((p) => p === "POST /copilotkit"),
      `single-route mode used other routes: ${JSON.stringify(paths)}`,
    );
    const methods = chat.log.requests.map((r) => JSON.parse(r.body ?? "{}").method);
    for (const m of ["info", "agent/connect", "agent/run"]) {
      assert.ok(methods.includes(m), `no ${m} envelope was sent; envelopes: ${JSON.stringify(methods)}`);
    }
    await assertClean(chat);
  });
});
