// What the browser tests do with one open chat page: the page's selectors, waits on
// what it shows and what it sent, and reads of the runtime's own thread list. Every
// function takes the `chat` that `openChat` in browser.test.mjs returns ({page, log}).

import assert from "node:assert/strict";

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
