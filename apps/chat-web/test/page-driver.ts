// Drives the chat page in Debian's headless Chromium (playwright-core) as a person would, for the
// page's own test and for the apps that serve it: build it with Vite, open a chat, type, read the
// answer, record every text the answer showed on its way.
import type { Browser, Page } from "playwright-core";
import { build } from "vite";

/** Debian's chromium, headless: the one launcher of the repository's browser tests. */
export { launchChromium } from "@nerva/test-chromium";

/** Builds the page from `root` (apps/chat-web) into `outDir` as `pnpm build` does. */
export async function buildPage(root: string, outDir: string): Promise<void> {
  await build({
    root,
    // What `pnpm build` makes (vitest's NODE_ENV=test would otherwise pick React's dev build).
    mode: "production",
    logLevel: "warn",
    build: { outDir, emptyOutDir: true },
  });
}

/** Opens the page at `pageUrl` on chat `chatId` as the token's user, once it is ready. */
export async function openChat(
  browser: Browser,
  pageUrl: string,
  chatId: string,
  token: string,
): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${pageUrl}/?chat=${chatId}&token=${token}`);
  await page.getByTestId("status").getByText("ready").waitFor();
  return page;
}

/** Types `text` and sends it. */
export async function send(page: Page, text: string): Promise<void> {
  await page.getByTestId("input").fill(text);
  await page.getByTestId("send").click();
}

/** The assistant's text on the page. */
export const answerOn = (page: Page): Promise<string> =>
  page.evaluate(() =>
    [...document.querySelectorAll('[data-testid="message-assistant"] [data-testid="text"]')]
      .map((e) => e.textContent ?? "")
      .join(""),
  );

/** From now on, records each text the assistant's answer shows (read back with `recordedAnswers`). */
export function recordAnswers(page: Page): Promise<void> {
  return page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { seen: string[] }).seen = seen;
    new MutationObserver(() => {
      const text = [
        ...document.querySelectorAll('[data-testid="message-assistant"] [data-testid="text"]'),
      ]
        .map((e) => e.textContent ?? "")
        .join("");
      if (seen.at(-1) !== text) seen.push(text);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

/** The texts `recordAnswers` saw, in order. */
export const recordedAnswers = (page: Page): Promise<string[]> =>
  page.evaluate(() => (window as unknown as { seen: string[] }).seen);
