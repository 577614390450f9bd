// The example page in a real (headless) Chromium against `agui serve --store
// postgres://…`, restarted: a thread the page showed before the server was killed
// with SIGKILL is shown again, exactly, by the page reloaded against the next server
// on the same database, and goes on there.
//
// The test uses a database of its own, created and dropped (also when it fails)
// through `psql` on the PostgreSQL at AGUI_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/test, whose user may create databases), as the
// Rust tests of `agui serve --store postgres://…` do. Without PostgreSQL (or `psql`)
// the test is skipped, except under AGUI_REQUIRE_POSTGRES=1 (set by
// scripts/test-all.sh) or CI, where that is a failure.
//
// AGUI_BIN, CHROMIUM_BIN and E2E_ARTIFACTS as for browser.test.mjs (see chat.mjs).
// Run with `node --test e2e/postgres.test.mjs` here, or scripts/test-browser.sh.

import { after, before, describe } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  STEP_TIMEOUT,
  SEL,
  demoReply,
  describeState,
  waitFor,
  waitIdle,
  send,
  expectAssistant,
  assistantTexts,
  userTexts,
  until,
  threadRows,
  requestsTo,
  serverThreads,
  serverHistory,
  uniqueUser,
  assertClean,
  checkPrerequisites,
  startAgui,
  startBrowser,
  stopBrowser,
  chatCase,
  threadId,
} from "./chat.mjs";

const ADMIN_URL = process.env.AGUI_TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/test";
const DELAY_MS = 20;
const AGENT = "agentic_chat";

/** Whether a missing PostgreSQL (or `psql`) fails the test rather than skipping it. */
function required() {
  const ci = process.env.CI ?? "";
  return process.env.AGUI_REQUIRE_POSTGRES === "1" || (ci !== "" && ci !== "0" && ci !== "false");
}

/** Runs `sql` through `psql` on the database at `url`: its rows, one a line; throws with what psql said. */
function psql(url, sql) {
  try {
    return execFileSync("psql", ["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql], {
      env: { ...process.env, PGCONNECT_TIMEOUT: "5" },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    });
  } catch (e) {
    throw new Error(`psql ${JSON.stringify(sql)}: ${(e.stderr || e.message).trim()}`);
  }
}

/** `url` with its database replaced by `db` (its query, if any, kept). */
function withDatabase(url, db) {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/** A new empty database of the test's own: {name, url, drop()}. */
function createDatabase() {
  const name = `agui_browser_${process.pid}_${Date.now().toString(36)}`;
  psql(ADMIN_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  psql(ADMIN_URL, `CREATE DATABASE ${name}`);
  return {
    name,
    url: withDatabase(ADMIN_URL, name),
    drop: () => psql(ADMIN_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** Reloads the chat's page and waits until it shows `users`/`answers` and its connect has ended. */
async function reloadAndRestore(chat, thread, users, answers) {
  const from = chat.log.requests.length;
  await chat.page.reload({ waitUntil: "load", timeout: STEP_TIMEOUT });
  await waitFor(chat, "the chat input after the reload", () =>
    chat.page.locator(SEL.textarea).waitFor({ timeout: STEP_TIMEOUT }),
  );
  await until(
    chat,
    `the restored history ${JSON.stringify({ users, answers })}`,
    async () =>
      JSON.stringify(await userTexts(chat)) === JSON.stringify(users) &&
      JSON.stringify(await assistantTexts(chat)) === JSON.stringify(answers),
  );
  await waitIdle(chat, "the restoring connect to end");
  const connects = requestsTo(chat, "POST", `/copilotkit/agent/${AGENT}/connect`, from).filter(
    (r) => JSON.parse(r.body ?? "{}").threadId === thread,
  );
  assert.ok(connects.length >= 1, `no connect to ${thread} after the reload:\n${await describeState(chat)}`);
}

// Why PostgreSQL cannot be used (null when it can).
let unreachable = null;

describe("CopilotKit page against agui serve on PostgreSQL", () => {
  before(async () => {
    checkPrerequisites();
    try {
      psql(ADMIN_URL, "SELECT 1");
    } catch (e) {
      unreachable = `PostgreSQL at ${ADMIN_URL} does not answer through psql: ${e.message}`;
      assert.ok(!required(), `AGUI_REQUIRE_POSTGRES=1 or CI is set, but ${unreachable}`);
      console.error(`skipped: ${unreachable} (set AGUI_TEST_POSTGRES_URL)`);
      return;
    }
    await startBrowser();
  });

  after(async () => {
    await stopBrowser();
  });

  chatCase(
    "p. a thread restores after agui serve on PostgreSQL is killed and restarted",
    async (open, t) => {
      if (unreachable) {
        t.skip(unreachable);
        return;
      }
      const db = createDatabase();
      const store = ["--store", db.url];
      let server;
      let failed = true;
      try {
        server = await startAgui(DELAY_MS, { args: store });
        const user = uniqueUser("p");
        const thread = threadId("p");
        const chat = await open({ runtimeUrl: server.url, agent: AGENT, thread, threads: true, token: user });

        // Two runs on the thread.
        const first = "Keep this in the database";
        const second = "And this one, in a second run";
        await send(chat, first);
        await expectAssistant(chat, demoReply(first));
        await waitIdle(chat);
        await send(chat, second);
        await expectAssistant(chat, demoReply(second));
        await waitIdle(chat);
        const users = await userTexts(chat);
        const answers = await assistantTexts(chat);
        assert.deepEqual(users, [first, second], "the user messages shown before the restart");
        assert.deepEqual(answers, [demoReply(first), demoReply(second)], "the answers shown before the restart");
        await assertClean(chat);
        const listed = (await serverThreads(server, user, AGENT)).map((th) => th.id);
        assert.deepEqual(listed, [thread], "the user's threads before the restart");
        const stored = await serverHistory(server, user, thread, "messages");

        // A crash, and a new server on the same address and database: the page's
        // runtime URL stays the same.
        await server.kill();
        server = await startAgui(DELAY_MS, { addr: server.addr, args: store });
        assert.deepEqual(
          (await serverThreads(server, user, AGENT)).map((th) => th.id),
          [thread],
          "the user's threads after the restart",
        );
        assert.deepEqual(
          await serverHistory(server, user, thread, "messages"),
          stored,
          "the thread's stored messages after the restart",
        );

        await reloadAndRestore(chat, thread, users, answers);
        assert.deepEqual(await userTexts(chat), users, "the restored user messages");
        assert.deepEqual(await assistantTexts(chat), answers, "the restored assistant messages");
        await until(chat, `the thread list to show ${thread} as the open thread`, async () =>
          (await threadRows(chat)).some((r) => r.id === thread && r.current),
        );
        await assertClean(chat);

        // The restored thread goes on, on the new server.
        const third = "A third line, after the restart";
        await send(chat, third);
        await expectAssistant(chat, demoReply(third));
        await waitIdle(chat);
        assert.deepEqual(await userTexts(chat), [...users, third], "user messages after sending on the restored thread");
        assert.deepEqual(
          await assistantTexts(chat),
          [...answers, demoReply(third)],
          "assistant messages after sending on the restored thread",
        );
        await assertClean(chat);
        failed = false;
      } finally {
        await server?.kill();
        try {
          db.drop();
        } catch (e) {
          // A failed drop fails a case that passed; after a failure, it is only told.
          if (!failed) throw e;
          console.error(`dropping database ${db.name}: ${e.message}`);
        }
      }
    },
    { timeout: 120_000 },
  );
});
