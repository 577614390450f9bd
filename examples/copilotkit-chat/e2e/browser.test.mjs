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
// (The processes, the browser and the page handles are in chat.mjs, shared with
// postgres.test.mjs.)
//
// Run with `npm run test:e2e`. It tests the page in dist/, built first (by
// build.mjs) when dist/ is missing or older than a file in src/.

import { after, before, describe } from "node:test";
import assert from "node:assert/strict";
import {
  STEP_TIMEOUT,
  SEL,
  demoReply,
  sleep,
  describeState,
  waitFor,
  waitIdle,
  send,
  expectAssistant,
  expectAssistantMatching,
  assistantTexts,
  userTexts,
  watchStreaming,
  seenTexts,
  until,
  threadRows,
  expectRows,
  shownThread,
  row,
  requestsTo,
  finished,
  serverThreads,
  serverHistory,
  openThreadFromList,
  uniqueUser,
  assertClean,
  checkPrerequisites,
  startAgui,
  startBrowser,
  stopBrowser,
  chatCase,
  threadId,
} from "./chat.mjs";

const FAST_DELAY_MS = 20;
const SLOW_DELAY_MS = 300;

let fast;
let slow;

// ---------------------------------------------------------------- the cases

describe("CopilotKit page against agui serve", () => {
  before(async () => {
    checkPrerequisites();
    [fast, slow] = await Promise.all([startAgui(FAST_DELAY_MS), startAgui(SLOW_DELAY_MS)]);
    await startBrowser();
  });

  after(async () => {
    await stopBrowser();
    await Promise.all([fast?.stop(), slow?.stop()]);
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
    // An unnamed thread shows its id.
    assert.equal(
      await chat.page.locator('[data-testid="thread"][data-current="1"] [data-testid="thread-name"]').innerText(),
      thread,
    );
    const threadLists = () =>
      chat.log.requests.filter((r) => r.method === "GET" && new URL(r.url).pathname === "/copilotkit/threads");
    // The row may come from the list fetched when the run ended while Refresh's is
    // still in flight: wait for every list request to be answered.
    await until(chat, "every GET /threads to be answered", () => threadLists().every((r) => r.status !== undefined));
    const lists = threadLists();
    assert.ok(lists.length >= 1, `no GET /threads:\n${await describeState(chat)}`);
    // A list CopilotKit fetches again while one is in flight aborts the first: what
    // counts is that every list the server answered was a 200, and one was.
    assert.ok(
      lists.some((r) => r.answered === 200) && lists.every((r) => r.answered === undefined || r.answered === 200),
      `a thread list failed: ${JSON.stringify(lists)}`,
    );
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
    const user = uniqueUser("g");
    const thread = threadId("g");
    const chat = await open({ runtimeUrl: fast.url, agent: "agentic_chat", thread, single: true, token: user });
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
    // In this mode CopilotKit sends its suggestion runs as `agent/run` on fresh thread
    // ids; the runtime keeps none of them, so the user's list is the chat's thread only.
    const suggesting = (r) => {
      const env = JSON.parse(r.body ?? "{}");
      return env.method === "agent/run" && env.body?.forwardedProps?.toolChoice?.function?.name === "copilotkitSuggest";
    };
    await finished(chat, "a suggestion run sent as agent/run", suggesting);
    await waitIdle(chat);
    const listed = (await serverThreads(fast, user, "agentic_chat", "&includeArchived=true")).map((t) => t.id);
    assert.deepEqual(listed, [thread], "suggestion runs sent as agent/run are kept in no thread");
    await assertClean(chat);
  });

  chatCase("h. the thread list: a new thread, switching between two, rename and delete", async (open) => {
    const agent = "agentic_chat";
    const user = uniqueUser("h");
    const first = threadId("h");
    const chat = await open({ runtimeUrl: fast.url, agent, thread: first, threads: true, token: user });
    const one = "This belongs to the first thread";
    await send(chat, one);
    await expectAssistant(chat, demoReply(one));
    await waitIdle(chat);
    // The list is fetched again when the run ends, without Refresh.
    await expectRows(chat, "the first thread, listed once its run ended", [{ id: first, name: first, current: true }]);

    // New thread: a fresh id the chat switches to, with nothing in it.
    let from = chat.log.requests.length;
    await chat.page.locator(SEL.threadNew).click();
    await until(chat, "a new thread id to be shown", async () => (await shownThread(chat)) !== first);
    const second = await shownThread(chat);
    assert.ok(second.length > 0, "the new thread has an id");
    await finished(
      chat,
      "the connect to the new thread",
      (r) => new URL(r.url).pathname.endsWith("/connect") && JSON.parse(r.body ?? "{}").threadId === second,
      from,
    );
    await until(chat, "the first thread's messages to leave the chat", async () => (await userTexts(chat)).length === 0);
    await waitIdle(chat);
    assert.deepEqual(await assistantTexts(chat), [], "a new thread starts empty");
    assert.ok(new URL(chat.page.url()).searchParams.get("thread") === second, "the address names the new thread");

    const two = "And this belongs to the second";
    await send(chat, two);
    await expectAssistant(chat, demoReply(two));
    await waitIdle(chat);
    const runs = requestsTo(chat, "POST", `/copilotkit/agent/${agent}/run`, from);
    assert.deepEqual(
      runs.map((r) => JSON.parse(r.body ?? "{}").threadId),
      [second],
      "the message on the new thread was run on the new thread",
    );
    await expectRows(chat, "both threads, the newest run first", [
      { id: second, name: second, current: true },
      { id: first, name: first, current: false },
    ]);

    // Switching: each thread shows its own history.
    await openThreadFromList(chat, first, [one], [demoReply(one)]);
    await expectRows(chat, "the first thread marked open", [
      { id: second, name: second, current: false },
      { id: first, name: first, current: true },
    ]);
    await openThreadFromList(chat, second, [two], [demoReply(two)]);

    // Rename the first thread (not the open one).
    const name = "Planning the trip";
    from = chat.log.requests.length;
    await row(chat, first).locator("[data-testid=thread-rename]").click();
    await row(chat, first).locator("[data-testid=thread-rename-input]").fill(name);
    await row(chat, first).locator("[data-testid=thread-rename-save]").click();
    const patch = await finished(
      chat,
      "the rename request",
      (r) => r.method === "PATCH" && new URL(r.url).pathname === `/copilotkit/threads/${encodeURIComponent(first)}`,
      from,
    );
    assert.equal(patch.answered, 200, `the rename was refused:\n${await describeState(chat)}`);
    assert.deepEqual(JSON.parse(patch.body ?? "{}"), { agentId: agent, name }, "the rename request's body");
    const renamed = [
      { id: second, name: second, current: true },
      { id: first, name, current: false },
    ];
    await expectRows(chat, "the new name in the list", renamed);

    // After a reload (the list comes from the runtime again): the same order, the
    // name kept, and still the second thread open with its history.
    from = chat.log.requests.length;
    await chat.page.reload({ waitUntil: "load", timeout: STEP_TIMEOUT });
    await waitFor(chat, "the chat input after the reload", () =>
      chat.page.locator(SEL.textarea).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await finished(chat, "the thread list after the reload", (r) => r.method === "GET" && new URL(r.url).pathname === "/copilotkit/threads", from);
    await expectRows(chat, "the renamed list after the reload", renamed);
    assert.equal(await shownThread(chat), second, "the reload comes back to the open thread");
    await expectAssistant(chat, demoReply(two), STEP_TIMEOUT, "the open thread's history after the reload");
    await waitIdle(chat);
    assert.deepEqual(await userTexts(chat), [two], "the open thread's messages after the reload");
    const listed = await serverThreads(fast, user, agent);
    assert.deepEqual(
      listed.map((t) => [t.id, t.name]),
      [
        [second, null],
        [first, name],
      ],
      "GET /threads after the rename",
    );

    // Delete the first thread: gone from the list, and still gone after Refresh.
    from = chat.log.requests.length;
    await row(chat, first).locator("[data-testid=thread-delete]").click();
    const del = await finished(
      chat,
      "the delete request",
      (r) => r.method === "DELETE" && new URL(r.url).pathname === `/copilotkit/threads/${encodeURIComponent(first)}`,
      from,
    );
    assert.equal(del.answered, 200, `the delete was refused:\n${await describeState(chat)}`);
    assert.deepEqual(JSON.parse(del.body ?? "{}"), { agentId: agent }, "the delete request's body");
    from = chat.log.requests.length;
    await chat.page.locator(SEL.threadsRefresh).click();
    await finished(chat, "the list fetched on Refresh", (r) => r.method === "GET" && new URL(r.url).pathname === "/copilotkit/threads", from);
    await expectRows(chat, "only the second thread after the delete and Refresh", [{ id: second, name: second, current: true }]);
    assert.deepEqual((await serverThreads(fast, user, agent, "&includeArchived=true")).map((t) => t.id), [second], "GET /threads after the delete");
    assert.equal(await shownThread(chat), second, "deleting another thread leaves the open one open");

    // Deleting the open thread opens a new, empty one.
    await row(chat, second).locator("[data-testid=thread-delete]").click();
    await until(chat, "another thread to open after deleting the open one", async () => {
      const shown = await shownThread(chat);
      return shown !== second && shown !== first;
    });
    await expectRows(chat, "an empty list", []);
    await until(chat, "the deleted thread's messages to leave the chat", async () => (await userTexts(chat)).length === 0);
    await until(
      chat,
      "the second delete to be answered",
      () => chat.log.requests.some((r) => r.method === "DELETE" && r.url.endsWith(encodeURIComponent(second)) && r.answered === 200),
    );
    assert.deepEqual(await serverThreads(fast, user, agent, "&includeArchived=true"), [], "GET /threads after both deletes");
    assert.equal(await chat.page.locator(SEL.threadsError).count(), 0, "the thread list reported no error");
    await assertClean(chat);
  });

  chatCase("i. suggestions: shown in the chat, sent when clicked, never kept as threads", async (open) => {
    const agent = "agentic_chat";
    const user = uniqueUser("i");
    const thread = threadId("i");
    const chat = await open({ runtimeUrl: fast.url, agent, thread, threads: true, token: user });
    const suggestPath = `/copilotkit/agent/${agent}/suggest`;
    // Asked for on the empty thread too.
    await waitFor(chat, "suggestions on the empty thread", () =>
      chat.page.locator(SEL.suggestion).first().waitFor({ timeout: STEP_TIMEOUT }),
    );

    const text = "Something to follow up on";
    let from = chat.log.requests.length;
    await send(chat, text);
    await expectAssistant(chat, demoReply(text));
    await waitIdle(chat);
    // Asked again once the run has ended (the run cleared the earlier ones).
    await finished(chat, "a suggestion request after the run", (r) => new URL(r.url).pathname === suggestPath, from);
    await waitFor(chat, "suggestions after the run", () =>
      chat.page.locator(SEL.suggestion).first().waitFor({ timeout: STEP_TIMEOUT }),
    );
    const titles = (await chat.page.locator(SEL.suggestion).allInnerTexts()).map((t) => t.trim());
    assert.ok(
      titles.length >= 1 && titles.length <= 3 && titles.every((t) => t.length > 0),
      `one to three suggestions, each with a title: ${JSON.stringify(titles)}`,
    );
    // The demo agents' suggestions after a message include this one.
    assert.ok(titles.includes("Summarize"), `no "Summarize" suggestion among ${JSON.stringify(titles)}`);

    // Clicking a suggestion sends its message, which the agent answers.
    from = chat.log.requests.length;
    await chat.page.locator(SEL.suggestion, { hasText: "Summarize" }).click();
    const message = "Summarize our conversation so far.";
    await waitFor(chat, "the suggestion's message to be sent", () =>
      chat.page.locator(SEL.user, { hasText: message }).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await expectAssistant(chat, demoReply(message));
    await waitIdle(chat);
    assert.deepEqual(await userTexts(chat), [text, message], "the user's messages, the suggestion's last");
    await finished(chat, "a suggestion request after the second run", (r) => new URL(r.url).pathname === suggestPath, from);

    // Suggestion runs go to /suggest, never /run: each asks for copilotkitSuggest
    // with the user's token, on a thread id of its own.
    const suggests = requestsTo(chat, "POST", suggestPath);
    assert.ok(suggests.length >= 3, `expected suggestion requests on load and after both runs:\n${await describeState(chat)}`);
    for (const r of suggests) {
      const body = JSON.parse(r.body ?? "{}");
      assert.equal(body.forwardedProps?.toolChoice?.function?.name, "copilotkitSuggest", "a suggestion run asks for the tool");
      assert.equal(r.headers?.authorization, `Bearer ${user}`, "a suggestion request carries the user's token");
      assert.notEqual(body.threadId, thread, "a suggestion run is not run on the chat's thread");
    }
    const runs = requestsTo(chat, "POST", `/copilotkit/agent/${agent}/run`);
    assert.equal(runs.length, 2, "only the two messages were runs");
    assert.ok(
      runs.every((r) => JSON.parse(r.body ?? "{}").threadId === thread && !r.body.includes("copilotkitSuggest")),
      "both runs are the chat's, without the suggestion tool",
    );

    // No suggestion run became a thread: not in the page's list, not in GET /threads.
    from = chat.log.requests.length;
    await chat.page.locator(SEL.threadsRefresh).click();
    await finished(chat, "the list fetched on Refresh", (r) => r.method === "GET" && new URL(r.url).pathname === "/copilotkit/threads", from);
    await expectRows(chat, "the chat's thread alone in the list", [{ id: thread, name: thread, current: true }]);
    const listed = (await serverThreads(fast, user, agent, "&includeArchived=true")).map((t) => t.id);
    assert.deepEqual(listed, [thread], "GET /threads lists the chat's thread alone");
    assert.equal(await chat.page.locator(SEL.threadsError).count(), 0, "the thread list reported no error");
    await assertClean(chat);
  });

  // The `interrupt` demo agent ends its first run with RUN_FINISHED's interrupt
  // outcome (an approval, responseSchema {approved: boolean}); the thread then waits
  // for a run whose `resume` answers it.
  const ASK = "I need your approval before sending the email.";
  const QUESTION = "Send the email to team@example.com?";
  // After an approval the demo says it sent the email (or, on a retry after the
  // effect was recorded, that it was already sent).
  const APPROVED = /Approved|already sent/;
  const REJECTED = /Not approved/;

  /** Sends the request, waits for the paused run's card; returns the card's interrupt id. */
  async function pauseForApproval(chat, text) {
    await send(chat, text);
    await expectAssistant(chat, ASK);
    await waitFor(chat, "the approval card", () =>
      chat.page.locator(SEL.interruptCard).first().waitFor({ timeout: STEP_TIMEOUT }),
    );
    await waitIdle(chat, "the paused run to end");
    assert.equal(await chat.page.locator(SEL.interruptCard).count(), 1, "one card for the one open interrupt");
    assert.equal((await chat.page.locator(SEL.interruptMessage).innerText()).trim(), QUESTION, "the card shows the interrupt's message");
    const id = await chat.page.locator(SEL.interruptCard).getAttribute("data-interrupt-id");
    assert.ok(id, "the card names its interrupt");
    return id;
  }

  /** The RUN_STARTED / RUN_FINISHED events of a stored history, in order. */
  const lifecycle = (events) =>
    events.filter((e) => e.type === "RUN_STARTED" || e.type === "RUN_FINISHED" || e.type === "RUN_ERROR");

  chatCase("j. an interrupt: the approval card, Approve resumes the run, a reload shows no card", async (open) => {
    const agent = "interrupt";
    const user = uniqueUser("j");
    const thread = threadId("j");
    const runPath = `/copilotkit/agent/${agent}/run`;
    const chat = await open({ runtimeUrl: fast.url, agent, thread, token: user });
    const text = "Please send the email to the team";
    const interruptId = await pauseForApproval(chat, text);

    const [paused] = requestsTo(chat, "POST", runPath);
    const pausedInput = JSON.parse(paused.body ?? "{}");
    assert.equal(pausedInput.resume, undefined, "the first run carries no resume");

    await chat.page.locator(SEL.interruptApprove).click();
    await expectAssistantMatching(chat, APPROVED, STEP_TIMEOUT, "the agent's answer to the approval");
    await waitIdle(chat, "the resumed run to end");
    await until(chat, "the card to go once the resumed run started", async () => (await chat.page.locator(SEL.interruptCard).count()) === 0);
    assert.deepEqual(await userTexts(chat), [text], "resuming sends no user message");
    // The question, then what the resumed run says (it may say it is sending first).
    const answers = await assistantTexts(chat);
    assert.ok(answers.length >= 2, `the question and the answer: ${JSON.stringify(answers)}`);
    assert.equal(answers[0], ASK);
    assert.match(answers.at(-1), APPROVED);

    // What CopilotKit sent: the same thread, the paused run's runId again, and the
    // answer as a standard resume entry; no tool message (the interrupt is not a
    // tool call's).
    const runs = requestsTo(chat, "POST", runPath);
    assert.equal(runs.length, 2, `the paused run and one resume:\n${await describeState(chat)}`);
    const resumed = JSON.parse(runs[1].body ?? "{}");
    assert.equal(resumed.threadId, thread, "the resume runs on the paused thread");
    assert.deepEqual(resumed.resume, [{ interruptId, status: "resolved", payload: { approved: true } }], "the resume entry");
    assert.equal(resumed.runId, pausedInput.runId, "CopilotKit resumes under the paused run's runId");
    assert.ok(!(resumed.messages ?? []).some((m) => m.role === "tool"), "no tool message for a non-tool-call interrupt");
    assert.equal(runs[1].answered, 200, "the resume was accepted");

    // The runtime keeps both runs: the paused one ending in the interrupt, the
    // resume ending in success.
    const events = await serverHistory(fast, user, thread, "events");
    const steps = lifecycle(events);
    assert.deepEqual(
      steps.map((e) => e.type),
      ["RUN_STARTED", "RUN_FINISHED", "RUN_STARTED", "RUN_FINISHED"],
      `two stored runs: ${JSON.stringify(steps)}`,
    );
    assert.equal(steps[1].outcome?.type, "interrupt", "the first run ends paused");
    assert.deepEqual(steps[1].outcome.interrupts.map((i) => i.id), [interruptId], "on the card's interrupt");
    assert.notEqual(steps[3].outcome?.type, "interrupt", "the resumed run ends without an interrupt");
    // Each stored under the runId it was sent with: here, both under the paused run's.
    assert.deepEqual([steps[0].runId, steps[2].runId], [pausedInput.runId, pausedInput.runId], "the stored runs' ids");
    const messages = await serverHistory(fast, user, thread, "messages");
    const said = messages.filter((m) => m.role === "assistant").map((m) => m.content);
    assert.deepEqual(said, answers, "the stored assistant messages are the ones the page showed");
    assert.deepEqual(
      messages.filter((m) => m.role === "user").map((m) => m.content),
      [text],
      "one user message stored",
    );
    await assertClean(chat);

    // A reload replays the thread: both answers, and no card (the replay's last run
    // ended in success).
    await chat.page.reload({ waitUntil: "load", timeout: STEP_TIMEOUT });
    await waitFor(chat, "the chat input after the reload", () =>
      chat.page.locator(SEL.textarea).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await expectAssistant(chat, ASK, STEP_TIMEOUT, "the question restored after the reload");
    await expectAssistantMatching(chat, APPROVED, STEP_TIMEOUT, "the approval's answer restored after the reload");
    await waitIdle(chat, "the restoring connect to end");
    await sleep(300);
    assert.deepEqual(await assistantTexts(chat), answers, "the restored answers");
    assert.deepEqual(await userTexts(chat), [text], "the restored user message");
    assert.equal(await chat.page.locator(SEL.interruptCard).count(), 0, "no card after the reload of an answered thread");
    await assertClean(chat);

    // The thread goes on as an ordinary one: a new request pauses again.
    await send(chat, "Send another one");
    await expectAssistant(chat, ASK, STEP_TIMEOUT, "the second request's question");
    await waitFor(chat, "a new approval card", () =>
      chat.page.locator(SEL.interruptCard).first().waitFor({ timeout: STEP_TIMEOUT }),
    );
    await waitIdle(chat);
    await assertClean(chat);
  });

  chatCase("k. an interrupt survives a reload; Reject answers it", async (open) => {
    const agent = "interrupt";
    const user = uniqueUser("k");
    const thread = threadId("k");
    const runPath = `/copilotkit/agent/${agent}/run`;
    const chat = await open({ runtimeUrl: fast.url, agent, thread, token: user });
    const interruptId = await pauseForApproval(chat, "Send the email, please");
    const [paused] = requestsTo(chat, "POST", runPath);
    const pausedRunId = JSON.parse(paused.body ?? "{}").runId;

    // The paused thread comes back with its card: the connect's replay ends with the
    // interrupt outcome, which useInterrupt picks up.
    const from = chat.log.requests.length;
    await chat.page.reload({ waitUntil: "load", timeout: STEP_TIMEOUT });
    await waitFor(chat, "the chat input after the reload", () =>
      chat.page.locator(SEL.textarea).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await expectAssistant(chat, ASK, STEP_TIMEOUT, "the question restored after the reload");
    await waitIdle(chat, "the restoring connect to end");
    await waitFor(chat, "the approval card restored by the replay", () =>
      chat.page.locator(SEL.interruptCard).first().waitFor({ timeout: STEP_TIMEOUT }),
    );
    assert.equal(await chat.page.locator(SEL.interruptCard).getAttribute("data-interrupt-id"), interruptId, "the same interrupt");

    await chat.page.locator(SEL.interruptReject).click();
    await expectAssistantMatching(chat, REJECTED, STEP_TIMEOUT, "the agent's answer to the rejection");
    await waitIdle(chat, "the resumed run to end");
    await until(chat, "the card to go", async () => (await chat.page.locator(SEL.interruptCard).count()) === 0);
    const runs = requestsTo(chat, "POST", runPath, from);
    assert.equal(runs.length, 1, `one resume after the reload:\n${await describeState(chat)}`);
    const resumed = JSON.parse(runs[0].body ?? "{}");
    assert.deepEqual(resumed.resume, [{ interruptId, status: "resolved", payload: { approved: false } }], "the resume entry");
    // After a reload CopilotKit no longer knows the paused run's id: it sends the
    // runId of the connect that replayed the interrupt. The runtime answers the
    // resume all the same (it goes by the resume entries, not the runId).
    const connects = requestsTo(chat, "POST", `/copilotkit/agent/${agent}/connect`, from);
    assert.ok(connects.length >= 1, "the reload connected");
    assert.notEqual(resumed.runId, pausedRunId, "the paused run's id is not known after a reload");
    assert.ok(
      connects.some((c) => JSON.parse(c.body ?? "{}").runId === resumed.runId),
      `the resume's runId (${resumed.runId}) is a connect's: ${connects.map((c) => c.body).join("\n")}`,
    );
    const steps = lifecycle(await serverHistory(fast, user, thread, "events"));
    assert.deepEqual(steps.map((e) => e.type), ["RUN_STARTED", "RUN_FINISHED", "RUN_STARTED", "RUN_FINISHED"], "two stored runs");
    assert.deepEqual([steps[0].runId, steps[2].runId], [pausedRunId, resumed.runId], "each stored under the runId it was sent with");
    assert.equal(steps[1].outcome?.type, "interrupt");
    assert.notEqual(steps[3].outcome?.type, "interrupt");
    await assertClean(chat);
  });

  chatCase("l. a paused thread's card stays with it: another thread runs, and the card comes back", async (open) => {
    const agent = "interrupt";
    const user = uniqueUser("l");
    const first = threadId("l");
    const chat = await open({ runtimeUrl: fast.url, agent, thread: first, token: user, threads: true });
    const one = "Send the email, please";
    const firstId = await pauseForApproval(chat, one);

    // A new thread: no card there, and it connects and runs (CopilotKit's shared
    // agent would still hold the first thread's interrupt; the page clears it).
    await chat.page.locator(SEL.threadNew).click();
    await until(chat, "a new thread id to be shown", async () => (await shownThread(chat)) !== first);
    const second = await shownThread(chat);
    await until(chat, "the first thread's messages to leave the chat", async () => (await userTexts(chat)).length === 0);
    await waitIdle(chat);
    assert.equal(await chat.page.locator(SEL.interruptCard).count(), 0, "no card on the new thread");
    const two = "And one from the second thread";
    const secondId = await pauseForApproval(chat, two);
    assert.notEqual(secondId, firstId, "the second thread's own interrupt");
    await assertClean(chat);

    // Back to the first thread: its replay ends paused, so its card is back, and
    // Approve answers that one.
    await openThreadFromList(chat, first, [one], [ASK]);
    await waitFor(chat, "the first thread's card", () =>
      chat.page.locator(`${SEL.interruptCard}[data-interrupt-id="${firstId}"]`).waitFor({ timeout: STEP_TIMEOUT }),
    );
    assert.equal(await chat.page.locator(SEL.interruptCard).count(), 1, "only the first thread's card");
    await chat.page.locator(SEL.interruptApprove).click();
    await expectAssistantMatching(chat, APPROVED, STEP_TIMEOUT, "the first thread's answer");
    await waitIdle(chat);
    const resumes = requestsTo(chat, "POST", `/copilotkit/agent/${agent}/run`).filter((r) => JSON.parse(r.body ?? "{}").resume);
    assert.equal(resumes.length, 1, "one resume");
    const resumed = JSON.parse(resumes[0].body);
    assert.equal(resumed.threadId, first, "the resume runs on the first thread");
    assert.deepEqual(resumed.resume.map((r) => r.interruptId), [firstId], "and answers its interrupt");

    // The second thread is still paused, with its own card.
    await openThreadFromList(chat, second, [two], [ASK]);
    await waitFor(chat, "the second thread's card", () =>
      chat.page.locator(`${SEL.interruptCard}[data-interrupt-id="${secondId}"]`).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await assertClean(chat);
  });

  chatCase("m. a message sent while paused is refused by CopilotKit; the card still answers", async (open) => {
    const agent = "interrupt";
    const user = uniqueUser("m");
    const thread = threadId("m");
    const chat = await open({ runtimeUrl: fast.url, agent, thread, token: user });
    const interruptId = await pauseForApproval(chat, "Send the email, please");
    const runPath = `/copilotkit/agent/${agent}/run`;
    const from = chat.log.requests.length;
    const aside = "Something else meanwhile";
    await send(chat, aside);
    await waitFor(chat, "CopilotKit's refusal", () =>
      chat.page.locator(SEL.errors, { hasText: "pending interrupt" }).waitFor({ timeout: STEP_TIMEOUT }),
    );
    await waitIdle(chat);
    assert.deepEqual(requestsTo(chat, "POST", runPath, from), [], "the refused message sent no run");
    assert.deepEqual(
      (await chat.page.locator(SEL.errors).allInnerTexts()).map((e) => e.replace(/:.*/s, "")),
      ["agent_run_failed"],
      "one onError entry",
    );
    assert.equal(await chat.page.locator(SEL.interruptCard).count(), 1, "the card stays");

    // The answer goes out as the resume, and it carries the refused message with it.
    await chat.page.locator(SEL.interruptApprove).click();
    await expectAssistantMatching(chat, APPROVED);
    await waitIdle(chat);
    const runs = requestsTo(chat, "POST", runPath, from);
    assert.equal(runs.length, 1, "one run: the resume");
    const resumed = JSON.parse(runs[0].body ?? "{}");
    assert.deepEqual(resumed.resume?.map((r) => r.interruptId), [interruptId], "the resume answers the interrupt");
    assert.equal(resumed.messages.filter((m) => m.role === "user").at(-1)?.content, aside, "the refused message rides along");
    assert.deepEqual(chat.log.pageErrors, []);
  });

  chatCase("n. Cancel answers the interrupt as cancelled", async (open) => {
    const agent = "interrupt";
    const user = uniqueUser("n");
    const thread = threadId("n");
    const chat = await open({ runtimeUrl: fast.url, agent, thread, token: user });
    const interruptId = await pauseForApproval(chat, "Send the email, please");
    await chat.page.locator(SEL.interruptCancel).click();
    await expectAssistantMatching(chat, REJECTED, STEP_TIMEOUT, "the agent's answer to the cancel");
    await waitIdle(chat);
    await until(chat, "the card to go", async () => (await chat.page.locator(SEL.interruptCard).count()) === 0);
    const runs = requestsTo(chat, "POST", `/copilotkit/agent/${agent}/run`);
    assert.equal(runs.length, 2, "the paused run and the resume");
    assert.deepEqual(JSON.parse(runs[1].body ?? "{}").resume, [{ interruptId, status: "cancelled" }], "a cancelled entry, no payload");
    await assertClean(chat);
  });
});
