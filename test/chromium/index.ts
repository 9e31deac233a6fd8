// One way for this repository's browser tests to start a browser: Debian's chromium (installed by
// .ci/run), headless, driven by playwright-core. Used by the chat page's driver
// (@nerva/chat-web/testing), the trace viewer's test and the runs dashboard's test. There is no
// skip: where chromium is missing, the launch rejects (playwright-core names the missing
// executable) and the test that needed it fails.
import { chromium, type Browser } from "playwright-core";

export type { Browser, Page } from "playwright-core";

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** Headless, no sandbox (containers), and nothing that reaches the network on its own. */
export const CHROMIUM_ARGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Starts Debian's chromium, headless; close it with `browser.close()`.
 *
 * @example
 * const browser = await launchChromium();
 * const page = await browser.newPage();
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
}
