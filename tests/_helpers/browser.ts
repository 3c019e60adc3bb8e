/**
 * The one wrapper of `playwright-core` for tests: Debian's chromium, headless. A test that needs
 * it is ignored while chromium is absent (`ignore: ignoreWithout(HAS_CHROMIUM)`), unless WAF_REQUIRE_SERVICES=1
 * (CI installs it), where launching it fails the test.
 */
import { chromium } from "playwright-core";
import type { Browser } from "playwright-core";
import { exists, missing, probe } from "./services.ts";
export type { Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** Whether chromium is installed (probed once, when the test module loads). */
export const HAS_CHROMIUM = await probe("chromium", () => exists(CHROMIUM));

/** Launches chromium; throws when it is not installed. */
export async function launchBrowser(): Promise<Browser & AsyncDisposable> {
  if (!HAS_CHROMIUM) throw missing(`chromium is not installed at ${CHROMIUM}`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  return Object.assign(browser, { [Symbol.asyncDispose]: () => browser.close() });
}
