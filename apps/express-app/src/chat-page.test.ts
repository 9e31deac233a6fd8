// The chat page (apps/chat-web: Vite + React + useChat) against the Express example itself, in
// Debian's headless Chromium driven by playwright-core: the page as `vite build` makes it, served
// by createApp at /chat-ui beside the example's /api/chat, a token from the example's own
// /token. Type a message and watch its words arrive; book a flight, approve the booking in the
// page and see the tool's output and the answer. (Reload and Stop are covered against the
// page's demo server in apps/chat-web/test/chat-web.test.ts.)
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAuth, createExampleService, type ExampleService } from "@nerva/example-kit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  answerOn,
  buildPage,
  launchChromium,
  openChat as openOn,
  recordAnswers,
  recordedAnswers,
  send,
} from "@nerva/chat-web/testing";
import { CHAT_PAGE_PATH, createApp } from "./app.js";

const chatWebDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "chat-web");
const dir = mkdtempSync(join(tmpdir(), "nerva-express-chat-page-"));
let service: ExampleService;
let server: Server;
let url: string;
let token: string;
let browser: Browser;

beforeAll(async () => {
  const pageDir = join(dir, "page");
  await buildPage(chatWebDir, pageDir);
  // The example as `node dist/main.js` runs it without a key or REDIS_URL: embedded state, the
  // scripted model.
  service = await createExampleService({}, { log: () => undefined });
  await service.start();
  server = createApp({ ...service, auth: createAuth(), chatPage: { pageDir } }).listen(
    0,
    "127.0.0.1",
  );
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const minted = await fetch(`${url}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user: "alice" }),
  });
  token = ((await minted.json()) as { token: string }).token;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
  await service?.close();
  rmSync(dir, { recursive: true, force: true });
});

const openChat = (chatId: string): Promise<Page> =>
  openOn(browser, `${url}${CHAT_PAGE_PATH}`, chatId, token);

describe("the chat page on the Express example, in Chromium", () => {
  it("shows the answer's words as they arrive", { timeout: 30_000 }, async () => {
    const page = await openChat("story");
    await recordAnswers(page);
    await send(page, "Tell me a story");
    await page.getByTestId("status").getByText("ready").waitFor();
    const full = await answerOn(page);
    expect(full).toMatch(/^Once upon a time an agent answered every request on time/);
    const seen = await recordedAnswers(page);
    const partial = seen.filter((t) => t !== "" && t !== full);
    // story_agent's words one by one: several longer beginnings of the answer before its end.
    expect(partial.length).toBeGreaterThanOrEqual(3);
    for (const t of partial) expect(full.startsWith(t)).toBe(true);
    await page.close();
  });

  it(
    "asks its user to approve a booking, then shows the booking and the answer",
    { timeout: 30_000 },
    async () => {
      const page = await openChat("booking");
      await send(page, "Book a flight to Lisbon");
      const booking = page.locator('[data-testid="tool"][data-tool="book_flight"]');
      await booking.getByTestId("approve").waitFor();
      expect(JSON.parse((await booking.getByTestId("tool-input").textContent()) ?? "")).toEqual({
        flight: "NV101",
        to: "Lisbon",
      });
      // The search that found the flight, already done, is shown once.
      const search = page.locator('[data-testid="tool"][data-tool="search_flights"]');
      expect(await search.getAttribute("data-state")).toBe("output-available");
      const runs = await service.backend.queue("runs").list({ userId: "alice", status: "paused" });
      expect(runs.runs.map((r) => r.input.args["chatId"])).toEqual(["booking"]);

      await booking.getByTestId("approve").click();
      const output = booking.getByTestId("tool-output");
      await output.waitFor();
      expect(JSON.parse((await output.textContent()) ?? "")).toEqual({
        flight: "NV101",
        to: "Lisbon",
        reference: "BK-NV101-LISBON",
      });
      await page.getByTestId("status").getByText("ready").waitFor();
      expect(await answerOn(page)).toBe(
        "Booked NV101 to Lisbon. Your reference is BK-NV101-LISBON.",
      );
      expect(await page.getByTestId("tool").count()).toBe(2);
      expect(await page.getByTestId("message-assistant").count()).toBe(1);
      await page.close();
    },
  );
});
