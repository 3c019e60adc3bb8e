/**
 * The one wrapper of `playwright-core` for tests: Debian's chromium, headless. Absent chromium
 * skips the browser test with a clear message unless WAF_REQUIRE_SERVICES=1 (CI installs it).
 */
import { chromium } from "playwright-core";
import type { Browser } from "playwright-core";
export type { Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** Launches chromium, or returns undefined (with a message) when it is not installed. */
export async function launchBrowser(): Promise<(Browser & AsyncDisposable) | undefined> {
  try {
    await Deno.stat(CHROMIUM);
  } catch {
    const message = `chromium is not installed at ${CHROMIUM}`;
    if (Deno.env.get("WAF_REQUIRE_SERVICES") === "1") {
      throw new Error(`${message}, and WAF_REQUIRE_SERVICES=1 requires it`);
    }
    console.warn(`skipped: ${message} (set WAF_REQUIRE_SERVICES=1 to make this a failure)`);
    return undefined;
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  return Object.assign(browser, { [Symbol.asyncDispose]: () => browser.close() });
}
