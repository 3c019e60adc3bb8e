/**
 * The sign-in page in a real headless chromium when the server wants a CAPTCHA: after typos of
 * its own, and while another client attacks the same username. The page solves the proof of
 * work itself (no external tool) and reaches the console.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { HAS_CHROMIUM, launchBrowser, type Page } from "../_helpers/browser.ts";
import { ADMIN, call, completeSetup } from "../_helpers/identity.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { ignoreWithout } from "../_helpers/services.ts";

async function signIn(page: Page, server: TestServer, password: string): Promise<void> {
  await page.goto(`${server.managementUrl}/login`);
  await page.locator("#username").fill(ADMIN.username);
  await page.locator("#password").fill(password);
  await page.locator("#submit").click();
}

Deno.test({
  name:
    "after three typos the sign-in page solves the CAPTCHA itself and reaches the console (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  await completeSetup(server);
  const page = await browser.newPage();
  const posted: Record<string, unknown>[] = [];
  page.on("request", (r) => {
    if (r.url().endsWith("/api/auth/login")) posted.push(JSON.parse(r.postData() ?? "{}"));
  });
  for (let i = 0; i < 3; i++) {
    await signIn(page, server, `Wrong-Pass-${i}x`);
    await page.locator("#error").filter({ hasText: "Invalid username or password" }).waitFor();
  }
  // The server now wants a CAPTCHA from this client for this username.
  const refused = await call(server, "POST", "/api/auth/login", { body: ADMIN });
  assertEquals(refused.status, 403);
  await refused.body?.cancel();

  await signIn(page, server, ADMIN.password);
  // No site yet: the console starts with the guided first site.
  await page.waitForURL(`${server.managementUrl}/console/sites/first`);
  const last = posted[posted.length - 1]!;
  ok(typeof last.captcha_receipt === "string", "the page sent a receipt it solved");
  await page.close();
});

Deno.test({
  name:
    "while another address attacks the username, the administrator's page still signs in (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  await completeSetup(server);
  // A distributed attack past the username's ceiling: 100 failures from 100 other addresses
  // (counted as the login counts them; tests/mod/identity/login_test.ts drives real logins).
  for (let i = 0; i < 100; i++) server.identity.login.throttle.fail("admin", `198.51.100.${i}`);
  assertEquals(server.identity.login.options("127.0.0.1", "admin").captcha_required, true);
  const page = await browser.newPage();
  await signIn(page, server, ADMIN.password);
  // No site yet: the console starts with the guided first site.
  await page.waitForURL(`${server.managementUrl}/console/sites/first`);
  await page.close();
});
