// The chat page in real headless Chromium (Debian's chromium, driven by playwright-core): built
// here with Vite, served by the demo server (Express, mountChat, a SQLite run store, a Runner
// executing the demo agent) on port 0, and used as a person would: type and watch the words
// arrive, approve a tool call, reload mid-answer, press Stop.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerWords, refundWords } from "../server/demo-agent.js";
import { startChatWebServer, type ChatWebServer } from "../server/demo-server.js";
import {
  answerOn,
  buildPage,
  launchChromium,
  openChat as openOn,
  recordAnswers,
  recordedAnswers,
  send,
} from "./page-driver.js";

const appDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "nerva-chat-web-"));
let server: ChatWebServer;
let browser: Browser;
let token: string;
let refunds = 0;

beforeAll(async () => {
  // The page as `vite build` makes it (into a directory of this test's own).
  const pageDir = join(dir, "page");
  await buildPage(appDir, pageDir);
  server = await startChatWebServer({
    dbPath: join(dir, "runs.db"),
    pageDir,
    tokenDelayMs: 80,
    onRefund: () => refunds++,
  });
  token = (await server.auth.mint("alice", ["customer"])).token;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const openChat = (chatId: string): Promise<Page> => openOn(browser, server.url, chatId, token);

/** Waits until the assistant's text on the page passes `test`. */
async function waitForAnswer(page: Page, test: (text: string) => boolean): Promise<string> {
  for (;;) {
    const text = await answerOn(page);
    if (test(text)) return text;
    await page.waitForTimeout(25);
  }
}

/** The run answering `chatId`, from the queue. */
async function runOf(chatId: string): Promise<string> {
  const { runs } = await server.queue.list({ userId: "alice", limit: 100 });
  const run = runs.find((r) => r.input.args["chatId"] === chatId);
  if (run === undefined) throw new Error(`no run for chat ${chatId}`);
  return run.id;
}

describe("the chat page in Chromium", () => {
  it("shows the answer's words as they arrive", { timeout: 30_000 }, async () => {
    const page = await openChat("tokens");
    await recordAnswers(page);
    await send(page, "hello");
    const full = answerWords("hello").join("");
    await waitForAnswer(page, (t) => t === full);
    await page.getByTestId("status").getByText("ready").waitFor();
    const seen = await recordedAnswers(page);
    const partial = seen.filter((t) => t !== "" && t !== full);
    // Several updates before the end, each a longer beginning of the answer.
    expect(partial.length).toBeGreaterThanOrEqual(3);
    for (const t of partial) expect(full.startsWith(t)).toBe(true);
    expect(await page.getByTestId("message-user").textContent()).toContain("hello");
    await page.close();
  });

  it(
    "asks to approve a tool call, then shows its output and the answer",
    { timeout: 30_000 },
    async () => {
      const page = await openChat("approve");
      const before = refunds;
      await send(page, "please refund my order");
      const approve = page.getByTestId("approve");
      await approve.waitFor();
      expect(await page.getByTestId("tool-name").textContent()).toBe("refund");
      expect(JSON.parse((await page.getByTestId("tool-input").textContent()) ?? "")).toEqual({
        orderId: "o-7",
        amount: 42,
      });
      // The run waits for the answer; the tool has not run.
      expect((await server.queue.get(await runOf("approve")))?.status).toBe("paused");
      expect(refunds).toBe(before);

      await approve.click();
      const output = page.getByTestId("tool-output");
      await output.waitFor();
      expect(JSON.parse((await output.textContent()) ?? "")).toEqual({
        orderId: "o-7",
        refunded: 42,
      });
      const answer = refundWords("success").join("");
      expect(await waitForAnswer(page, (t) => t === answer)).toBe(answer);
      await page.getByTestId("status").getByText("ready").waitFor();
      expect(await page.getByTestId("tool").count()).toBe(1);
      expect(refunds).toBe(before + 1);
      const run = await server.queue.wait(await runOf("approve"), { timeoutSeconds: 10 });
      expect(run.status).toBe("succeeded");
      await page.close();
    },
  );

  it(
    "continues the answer after a reload mid-answer, nothing repeated or missing",
    { timeout: 30_000 },
    async () => {
      const page = await openChat("reload");
      await send(page, "tell me more");
      const full = answerWords("tell me more").join("");
      const before = await waitForAnswer(page, (t) => t.split(" ").length >= 6);
      expect(before).not.toBe(full);
      await page.reload();
      // Reconnected (resume: true): the answer goes on to its end, exactly once.
      expect(await waitForAnswer(page, (t) => t.length >= full.length)).toBe(full);
      await page.getByTestId("status").getByText("ready").waitFor();
      expect(await answerOn(page)).toBe(full);
      expect(await page.getByTestId("message-assistant").count()).toBe(1);
      expect(await page.getByTestId("message-user").count()).toBe(1);
      const run = await server.queue.wait(await runOf("reload"), { timeoutSeconds: 10 });
      expect(run.status).toBe("succeeded");
      await page.close();
    },
  );

  it("cancels the run when Stop is pressed", { timeout: 30_000 }, async () => {
    const page = await openChat("stop");
    await send(page, "go on and on");
    const full = answerWords("go on and on").join("");
    await waitForAnswer(page, (t) => t.split(" ").length >= 4);
    await page.getByTestId("stop").click();
    const run = await server.queue.wait(await runOf("stop"), { timeoutSeconds: 10 });
    expect(run.status).toBe("cancelled");
    await page.getByTestId("status").getByText("ready").waitFor();
    const shown = await answerOn(page);
    expect(full.startsWith(shown)).toBe(true);
    expect(shown).not.toBe(full);
    await page.close();
  });
});
