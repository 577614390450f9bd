// The `agui inspect --proxy` page in a real (headless) Chromium: runs of the reference
// TypeScript client (@ag-ui/client) through the proxy show up live, and one is re-sent
// through the relay. Helpers: support.mjs.

import { after, before, describe } from "node:test";
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";
import {
  STEP_TIMEOUT, T, demoReply, api, waitFor, waitStatus, selectedRunId, timelineCounts, setAgent,
  waitMessage, assertClean, pageCase, startStack, stopStack,
} from "./support.mjs";

let serve;
let proxied;

describe("agui inspect in a real browser: the proxy", () => {
  before(async () => {
    ({ serve, proxied } = await startStack({ relay: false, proxy: true }));
  });

  after(async () => {
    await stopStack();
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
});
