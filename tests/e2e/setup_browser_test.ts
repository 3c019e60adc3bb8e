/**
 * The whole first-install flow as a new user meets it, in a real headless chromium: start on an
 * empty data directory, read setup.url, open it, complete setup in the page, read "account
 * created" on the sign-in page, sign in (landing on the guided first site), list users.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { HAS_CHROMIUM, launchBrowser } from "../_helpers/browser.ts";
import { startTestServer } from "../_helpers/server.ts";
import { setupReceipt } from "../../mod/identity/setup_token.ts";
import { ignoreWithout } from "../_helpers/services.ts";

Deno.test({
  name:
    "a new user completes setup in the browser, signs in and sees the user list (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  const link = (await Deno.readTextFile(`${server.dir}/runtime/setup.url`)).trim();
  const token = /#token=(.+)$/.exec(link)![1]!;

  const page = await browser.newPage();
  const requests: { url: string; headers: Record<string, string> }[] = [];
  page.on("request", (r) => requests.push({ url: r.url(), headers: r.headers() }));
  await page.goto(link);

  await page.locator("#setup-form").waitFor({ state: "visible" });
  // The fragment is gone from the address bar and history before any request carried it.
  assertEquals(page.url(), `${server.managementUrl}/setup`);
  assertEquals(await page.evaluate(() => globalThis.location.hash), "");
  assertEquals(await page.locator("#receipt-value").textContent(), setupReceipt(token));
  assertMatch((await page.locator("#probe-profile").textContent())!, /^(low|balanced|strict)$/);

  // The rules react as the user types.
  await page.locator("#username").fill(" admin");
  assertEquals(await page.locator("#username-rules li.bad").count() > 0, true);
  await page.locator("#username").fill("admin");
  assertEquals(await page.locator("#username-rules li.bad").count(), 0);
  await page.locator("#password").fill("Password-2026");
  await page.locator("#confirm").fill("Password-2026");
  // The server's refusal (a common password) is shown as it is.
  await page.locator("#submit").click();
  await page.locator("#error").filter({ hasText: "not a common password" }).waitFor();

  await page.locator("#password").fill("Correct-Horse-9");
  await page.locator("#confirm").fill("Correct-Horse-9");
  assertEquals(await page.locator("#password-rules li.bad").count(), 0);
  await page.locator("#submit").click();
  await page.waitForURL(`${server.managementUrl}/login`);
  // The sign-in page says the account exists, with its name filled in.
  assertMatch(
    (await page.locator("#created").textContent())!,
    /Administrator account created:\s+sign in/,
  );
  assertEquals(await page.locator("#created").isVisible(), true);
  assertEquals(await page.locator("#username").inputValue(), "admin");

  await page.locator("#password").fill("Correct-Horse-9");
  await page.locator("#submit").click();
  // No site yet: the first sign-in lands on the guided first site.
  await page.waitForURL(`${server.managementUrl}/console/sites/first`);
  await page.locator("#first-site-form").waitFor();
  await page.locator("#nav-users").click();
  await page.locator("main table tbody tr").first().waitFor();
  const rows = await page.locator("main table tbody tr td:first-child").allTextContents();
  assertEquals(rows, ["admin you"]);
  assertMatch((await page.locator("#whoami").textContent())!, /Signed in as admin \(admin\)/);

  // The token only ever travelled in the X-WAF-Setup-Token header.
  for (const r of requests) ok(!r.url.includes(token), r.url);
  const withHeader = requests.filter((r) => r.headers["x-waf-setup-token"] === token);
  ok(withHeader.some((r) => r.url.endsWith("/api/setup/probe")));
  ok(withHeader.some((r) => r.url.endsWith("/api/setup")));
  for (const line of server.logs) ok(!line.includes(token), line);
  assertEquals((await server.identity.users.list()).map((u) => u.username), ["admin"]);
  await page.close();
});

Deno.test({
  name:
    "without the link the setup page says where it is, and takes a link opened in the same tab or pasted (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  const link = (await Deno.readTextFile(`${server.dir}/runtime/setup.url`)).trim();
  const token = /#token=(.+)$/.exec(link)![1]!;
  const page = await browser.newPage();
  await page.goto(`${server.managementUrl}/setup`);
  await page.locator("#where").waitFor({ state: "visible" });
  const where = (await page.locator("#where").textContent())!;
  assertMatch(where, /runtime\/setup\.url/);
  assertMatch(where, /waf setup url/);
  assertEquals(await page.locator("#setup-form").isVisible(), false);

  // The real link opened in the same tab changes only the fragment: no reload, a hashchange.
  await page.goto(link);
  await page.locator("#setup-form").waitFor({ state: "visible" });
  assertEquals(await page.evaluate(() => globalThis.location.hash), "");
  assertEquals(await page.locator("#receipt-value").textContent(), setupReceipt(token));
  assertEquals(await page.locator("#where").isVisible(), false);
  assertEquals(
    await page.locator("#language option").allTextContents(),
    ["English", "简体中文"],
    "the console's languages, and no other",
  );
  // The offered level is applied: it becomes the level of new sites.
  await page.locator("#profile").selectOption("strict");
  await page.locator("#username").fill("admin");
  await page.locator("#password").fill("Correct-Horse-9");
  await page.locator("#confirm").fill("Correct-Horse-9");
  await page.locator("#submit").click();
  await page.waitForURL(`${server.managementUrl}/login`);
  assertEquals(server.dataPlane.sites.defaultLevel(), "strict");
  await page.close();
});

Deno.test({
  name: "a setup link pasted into the page's field is used without a reload (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  const link = (await Deno.readTextFile(`${server.dir}/runtime/setup.url`)).trim();
  const page = await browser.newPage();
  await page.goto(`${server.managementUrl}/setup`);
  await page.locator("#link").fill("http://nothing.here/setup");
  await page.locator("#link-submit").click();
  await page.locator("#error").filter({ hasText: "not the setup link" }).waitFor();
  await page.locator("#link").fill(link);
  await page.locator("#link-submit").click();
  await page.locator("#setup-form").waitFor({ state: "visible" });
  assertEquals(
    await page.locator("#link").inputValue(),
    "",
    "the token does not stay in the field",
  );
  await page.close();
});

Deno.test({
  name:
    "the first visit (setup, sign-in, console) fetches nothing that fails and logs no error (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  const link = (await Deno.readTextFile(`${server.dir}/runtime/setup.url`)).trim();
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error on ${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  await page.goto(link);
  await page.locator("#setup-form").waitFor({ state: "visible" });
  // Typed and sent at once, as a quick user does: the draft saved 400 ms after the name was typed
  // must not reach the server once setup is complete (409).
  await page.locator("#password").fill("Correct-Horse-9");
  await page.locator("#confirm").fill("Correct-Horse-9");
  await page.locator("#username").fill("admin");
  await page.locator("#submit").click();
  await page.waitForURL(`${server.managementUrl}/login`);
  await page.waitForTimeout(800);
  await page.locator("#username").fill("admin");
  await page.locator("#password").fill("Correct-Horse-9");
  await page.locator("#submit").click();
  await page.waitForURL(`${server.managementUrl}/console/sites/first`);
  await page.locator("#first-site-form").waitFor();
  await page.waitForLoadState("networkidle");
  assertEquals(problems, []);
  await page.close();
});
