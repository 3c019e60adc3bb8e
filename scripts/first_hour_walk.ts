/**
 * The first hour as a scripted walk through the console in real chromium: what a new operator
 * does from the setup link to reading an attack. Open the setup link, create the administrator,
 * sign in (the name is filled in), the guided first site (host, upstream, reachability check,
 * create), the one-click test request and its block page, then the attack in the attack log and
 * its detail. Each action (a page opened, a field filled, a click) is counted; the walk's wall time
 * is measured from the first action to the detail on screen. It measures what the console costs a
 * person in clicks and waits, not a person's reading and typing time.
 *
 *   deno run -A scripts/first_hour_walk.ts           # a fresh server and upstream, one walk
 *
 * tests/e2e/first_hour_walk_test.ts runs the same walk and checks that it completes; the figures go
 * in docs/bench/2026-12-02-first-hour-walk.md.
 */
import type { Page } from "playwright-core";
import { launchBrowser } from "../tests/_helpers/browser.ts";
import { startTestServer } from "../tests/_helpers/server.ts";
import { startUpstream } from "../tests/_helpers/upstream.ts";

export interface WalkInput {
  /** The setup link from `<data-dir>/runtime/setup.url`. */
  readonly setupLink: string;
  /** The upstream the first site protects. */
  readonly upstream: string;
  readonly host: string;
  readonly username: string;
  readonly password: string;
}

export interface WalkStep {
  readonly action: string;
  /** Milliseconds from the walk's start to the end of this action. */
  readonly at: number;
}

export interface WalkReport {
  readonly ms: number;
  readonly actions: number;
  readonly steps: readonly WalkStep[];
  /** The test request's trace id, as the first-site flow showed it. */
  readonly trace: string;
  /** The attack log's detail of that trace as shown: trace id, class and evidence. */
  readonly detail: { readonly trace: string; readonly class: string; readonly evidence: string };
}

const text = async (page: Page, selector: string) =>
  ((await page.locator(selector).first().textContent()) ?? "").replace(/\s+/g, " ").trim();

/** Walks the first hour on `page`; every wait is for what the operator would wait to see. */
export async function firstHourWalk(page: Page, input: WalkInput): Promise<WalkReport> {
  const steps: WalkStep[] = [];
  const started = performance.now();
  const act = async (action: string, fn: () => Promise<unknown>) => {
    await fn();
    steps.push({ action, at: Math.round(performance.now() - started) });
  };

  await act("open the setup link", () => page.goto(input.setupLink));
  await page.locator("#setup-form").waitFor({ state: "visible" });
  await act("type the administrator's name", () => page.locator("#username").fill(input.username));
  await act("type a password", () => page.locator("#password").fill(input.password));
  await act("repeat it", () => page.locator("#confirm").fill(input.password));
  await act("create the administrator", () => page.locator("#submit").click());
  await page.locator("#created").waitFor({ state: "visible" });

  await act("type the password to sign in", () => page.locator("#password").fill(input.password));
  await act("sign in", () => page.locator("#submit").click());
  await page.locator("#first-site-form").waitFor();

  await act("type the site's host", () => page.locator("#first-host").fill(input.host));
  await act("type the upstream", () => page.locator("#first-upstream").fill(input.upstream));
  await act("check the upstream", () => page.locator("#first-check").click());
  await page.locator("#first-check-result", { hasText: "reachable" }).waitFor();
  await act("create the site", () => page.locator("#first-create").click());
  await page.locator("#first-created").waitFor();

  await act("send the test request", () => page.locator("#first-test").click());
  await page.locator("#first-test-result", { hasText: "403" }).waitFor();
  await page.frameLocator("#first-block-page").locator("body", { hasText: "Request blocked" })
    .waitFor();
  const trace = await text(page, "#first-trace");

  await act("open it in the attack log", () => page.locator("a.first-log-link").click());
  await page.locator("#record #finding").waitFor();
  const detail = {
    trace: await text(page, "#record .trace-id"),
    class: await text(page, "#finding dd"),
    evidence: await text(page, "#evidence"),
  };
  const ms = Math.round(performance.now() - started);
  return { ms, actions: steps.length, steps, trace, detail };
}

if (import.meta.main) {
  await using up = startUpstream();
  await using server = await startTestServer();
  await using browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const setupLink = (await Deno.readTextFile(`${server.dir}/runtime/setup.url`)).trim();
  const report = await firstHourWalk(page, {
    setupLink,
    upstream: up.url,
    host: "shop.example",
    username: "admin",
    password: "Correct-Horse-9",
  });
  for (const s of report.steps) console.log(`${String(s.at).padStart(6)} ms  ${s.action}`);
  console.log(
    `walk: ${(report.ms / 1000).toFixed(1)} s, ${report.actions} actions, trace ${report.trace}, ` +
      `class ${report.detail.class}; load average ${Deno.loadavg().join(" ")}`,
  );
}
