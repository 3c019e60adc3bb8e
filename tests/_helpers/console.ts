/**
 * The console's browser test kit: one real server and one headless chromium per test file, a
 * page per user signed in through the real sign-in page (on the dashboard, or on the guided first
 * site while there is none), a guard that fails the test on any
 * script error or CSP violation, screenshots into one temporary folder (printed once), and the
 * checks every page must pass (each form control has a label).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { launchBrowser } from "./browser.ts";
import { ADMIN, callJson, completeSetup, type Session } from "./identity.ts";
import { type Hit, hit } from "./protection.ts";
import { startTestServer, type TestServer } from "./server.ts";

export interface ConsoleKit extends AsyncDisposable {
  readonly server: TestServer;
  readonly browser: Browser;
  /** Where screenshots go (a temporary folder, not committed). */
  readonly shots: string;
  /** A new page signed in as `user`, with `language` as the browser's language. */
  signIn(user: { username: string; password: string }, language?: string): Promise<ConsolePage>;
}

export interface ConsolePage {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Script errors, failed asset loads and CSP violations seen so far. */
  readonly problems: string[];
  /** Opens `/console/<path>` by client-side navigation when the shell is loaded. */
  open(path: string): Promise<void>;
  screenshot(name: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts chromium and the server (setup done, `ADMIN` exists); throws without chromium (a test
 * using it is ignored then, by `ignoreWithout(HAS_CHROMIUM)`).
 */
export async function startConsoleKit(
  config: Record<string, unknown> = {},
): Promise<ConsoleKit> {
  const browser = await launchBrowser();
  const server = await startTestServer({ config });
  await completeSetup(server);
  const shots = await Deno.makeTempDir({ prefix: "waf-console-shots-" });
  console.log(`console screenshots: ${shots}`);

  const signIn = async (user: { username: string; password: string }, language = "en-US") => {
    const context = await browser.newContext({
      locale: language,
      viewport: { width: 1280, height: 900 },
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !/status of 4\d\d|status of 501/.test(m.text())) {
        problems.push(`console error: ${m.text()}`);
      }
    });
    await page.goto(`${server.managementUrl}/login`);
    await page.locator("#username").fill(user.username);
    await page.locator("#password").fill(user.password);
    await page.locator("#submit").click();
    // While no site exists an administrator lands on the guided first site instead.
    const landed = new Set(["/console", "/console/sites/first"]);
    await page.waitForURL((u) => u.origin === server.managementUrl && landed.has(u.pathname));
    await page.locator("#page-title").waitFor();
    return {
      page,
      context,
      problems,
      async open(path: string) {
        await page.evaluate(`history.pushState(null, "", ${JSON.stringify(`/console/${path}`)});
          dispatchEvent(new Event("console:navigate"));`);
        await page.locator("main .page").first().waitFor();
      },
      async screenshot(name: string) {
        await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
      },
      close: () => context.close(),
    };
  };

  return {
    server,
    browser,
    shots,
    signIn,
    async [Symbol.asyncDispose]() {
      await browser.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

export { ADMIN };

/** Form controls on the page that have no accessible label (run in the page: DOM code). */
const UNLABELLED = `(() => {
  const missing = [];
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden") continue;
    const named = (el.labels && el.labels.length > 0) || el.getAttribute("aria-label") ||
      el.getAttribute("aria-labelledby");
    if (!named) missing.push(el.outerHTML.slice(0, 120));
  }
  return missing;
})()`;

export function unlabelled(page: Page): Promise<string[]> {
  return page.evaluate(UNLABELLED) as Promise<string[]>;
}

/** Waits until `selector`'s text matches `re` (pages poll and reload); returns the text. */
export async function textMatches(
  p: ConsolePage,
  selector: string,
  re: RegExp,
  tries = 150,
): Promise<string> {
  const locator = p.page.locator(selector).first();
  await locator.waitFor();
  for (let i = 0; i < tries; i++) {
    const text = (await locator.textContent()) ?? "";
    if (re.test(text)) return text;
    await p.page.waitForTimeout(100);
  }
  throw new Error(`${selector} never matched ${re}: "${await locator.textContent()}"`);
}

/**
 * Runs `script` in the page until its value passes `want` (pages poll and reload); returns it,
 * or throws naming `what` with the last value seen.
 */
export async function evaluateUntil<T>(
  p: ConsolePage,
  script: string,
  want: (value: T) => boolean,
  what: string,
): Promise<T> {
  let value: T | undefined;
  for (let i = 0; i < 100; i++) {
    value = await p.page.evaluate(script) as T;
    if (want(value)) return value;
    await p.page.waitForTimeout(100);
  }
  throw new Error(`${what} never showed what was expected: ${JSON.stringify(value)}`);
}

/** True once no "Loading…" status is left in the page (polled: the CSP refuses eval). */
const LOADED = `![...document.querySelectorAll("main [role=status]")]
  .some((e) => /Loading|加载中/.test(e.textContent))`;

/** Waits until the open page has drawn and none of its parts is still loading. */
export async function settle(p: ConsolePage): Promise<void> {
  await p.page.locator("main .page").first().waitFor();
  for (let i = 0; i < 300 && !(await p.page.evaluate(LOADED)); i++) {
    await p.page.waitForTimeout(50);
  }
  await p.page.waitForTimeout(150);
}

/**
 * Creates the site `shop` (host shop.test, trusting 127.0.0.1/32) in front of `upstream` through
 * the Sites page's form, as an administrator would, and waits for it in the list.
 */
export async function createShopInForm(p: ConsolePage, upstream: string): Promise<void> {
  await p.open("sites");
  await p.page.locator("button.new").click();
  await p.page.locator("#edit-name").fill("shop");
  await p.page.locator("#edit-hosts").fill("shop.test");
  await p.page.locator("#edit-upstreams").fill(upstream);
  await p.page.locator("#edit-trusted-proxies").fill("127.0.0.1/32");
  await p.page.locator("form button[type=submit]").click();
  await p.page.locator("td", { hasText: "shop.test" }).waitFor();
}

/** Creates the site `shop` (host shop.test) in front of `upstream` and sends it one SQLi attack. */
export async function shopWithAttack(
  server: TestServer,
  session: Session,
  upstream: string,
): Promise<Hit> {
  const site = await callJson(server, "POST", "/api/sites", {
    session,
    body: { name: "shop", hosts: ["shop.test"], upstreams: [upstream] },
  });
  if (site.status !== 201) throw new Error(`site: ${site.status} ${JSON.stringify(site.body)}`);
  const attack = await hit(server, "/search?q=1%20union%20select%20password%20from%20users", {
    ip: "198.51.100.7",
  });
  if (attack.status !== 403) throw new Error(`the attack was not blocked: ${attack.status}`);
  return attack;
}
