/**
 * Two-factor recovery codes and the sign-in page's reasons in a real headless chromium (issue
 * #36): turning 2FA on in My account keeps the browser signed in and shows ten codes once, with
 * copy and download; a code signs in on the sign-in page instead of one from the app, once; the
 * count left shows on My account; a new set needs the password and retires the old; turning 2FA
 * off lands on the sign-in page saying why; the permission list wraps between identifiers only.
 */
import { contrast } from "../_helpers/accessibility.ts";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { codeAt } from "../_helpers/api_access.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { type ConsolePage, settle, startConsoleKit, textMatches } from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const OPS = { username: "ops", password: "Juniper-Stone-71" };
const CODE = /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

const shownCodes = (p: ConsolePage) => p.page.locator("#recovery-list code").allTextContents();

/** Signs in on the sign-in page with a recovery code instead of a code from the app. */
async function signInWithRecovery(p: ConsolePage["page"], base: string, code: string) {
  await p.goto(`${base}/login?next=%2Fconsole%2Faccount`);
  await p.locator("#username").fill(OPS.username);
  await p.locator("#password").fill(OPS.password);
  await p.locator("#totp").waitFor(); // an account uses 2FA: the form asks for a code
  await p.locator("#use-recovery").click();
  assertEquals(await p.locator("#totp").isVisible(), false, "the app's code gives way");
  await p.locator("#recovery").fill(code);
  await p.locator("#submit").click();
}

Deno.test({
  name:
    "2FA recovery codes in the console: shown once with copy and download, one signs in once, a new set needs the password (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using kit = await startConsoleKit();
  const { server } = kit;
  const base = server.managementUrl;
  const opsId = await createUser(server, OPS.username, OPS.password, "admin");
  const ops = await kit.signIn(OPS);
  await ops.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  let secret = "";
  let codes: string[] = [];

  await t.step("turning 2FA on keeps this browser signed in and shows ten codes once", async () => {
    const elsewhere = await login(server, OPS.username, OPS.password);
    await ops.open("account");
    await ops.page.locator("#tfa-setup").click();
    secret = (await ops.page.locator("#tfa-secret").textContent())!;
    await ops.page.locator("#tfa-code").fill(codeAt(server, secret));
    await ops.page.locator("#tfa-enable").click();
    await ops.page.locator("#recovery-codes").waitFor();
    assertEquals(ops.page.url(), `${base}/console/account`, "still in the console");
    codes = await shownCodes(ops);
    assertEquals(codes.length, 10);
    for (const c of codes) assertMatch(c, CODE);
    await ops.screenshot("account-recovery-codes");

    await ops.page.locator("#copy-recovery-codes").click();
    await ops.page.locator("#recovery-codes .done", { hasText: "Copied" }).waitFor();
    const copied = await ops.page.evaluate("navigator.clipboard.readText()") as string;
    assertEquals(copied.trim().split("\n"), codes);
    const [download] = await Promise.all([
      ops.page.waitForEvent("download"),
      ops.page.locator("#download-recovery-codes").click(),
    ]);
    assertEquals(download.suggestedFilename(), "waf-recovery-codes-ops.txt");
    const file = await Deno.readTextFile((await download.path())!);
    assertEquals(file.trim().split("\n"), codes);

    await ops.page.locator("#recovery-saved").click();
    assertEquals(await ops.page.locator("#recovery-codes").count(), 0, "shown once");
    await textMatches(ops, "#recovery-left", /^10 of 10 recovery codes left\./);
    // A reload finds the session alive; the account's other session has ended.
    await ops.page.reload();
    await ops.page.locator("#two-factor .badge", { hasText: "on" }).waitFor();
    assertEquals(
      (await callJson(server, "GET", "/api/auth/session", { session: elsewhere })).status,
      401,
    );
    ok(ops.problems.length === 0, ops.problems.join("\n"));
  });

  await t.step(
    "a recovery code signs in once on the sign-in page; the count goes down",
    async () => {
      const context = await kit.browser.newContext({ viewport: { width: 390, height: 844 } });
      const page = await context.newPage();
      await signInWithRecovery(page, base, codes[0]!.toLowerCase());
      await page.waitForURL(`${base}/console/account`);
      await page.locator("#recovery-left", { hasText: "9 of 10 recovery codes left." }).waitFor();
      await page.screenshot({ path: `${kit.shots}/account-390.png`, fullPage: true });
      await context.close();

      const again = await kit.browser.newContext();
      const retry = await again.newPage();
      await signInWithRecovery(retry, base, codes[0]!);
      await retry.locator("#error", { hasText: "Invalid or already used recovery code" }).waitFor();
      assertEquals(await retry.locator("#recovery").isVisible(), true, "still asking for one");
      await retry.screenshot({ path: `${kit.shots}/login-recovery-used.png`, fullPage: true });
      await again.close();

      const s = await login(server, OPS.username, OPS.password, { recovery_code: codes[1]! });
      const used = await callJson(server, "GET", "/api/audit?action=user.2fa.recovery_code.use", {
        session: s,
      });
      assertEquals(
        (used.body.items as { detail: unknown }[]).map((i) => i.detail),
        [{ remaining: 8 }, { remaining: 9 }],
      );
    },
  );

  await t.step("a new set needs the password and retires the old codes", async () => {
    await ops.page.reload();
    await settle(ops);
    await textMatches(ops, "#recovery-left", /^8 of 10 recovery codes left\./);
    await ops.page.locator("#recovery-password").fill("Not-The-Pass-1");
    await ops.page.locator("#recovery-regenerate").click();
    await ops.page.locator("#two-factor .error-box code", { hasText: "PASSWORD_INVALID" })
      .waitFor();
    await ops.page.locator("#recovery-password").fill(OPS.password);
    await ops.page.locator("#recovery-regenerate").click();
    await ops.page.locator("#recovery-codes").waitFor();
    const fresh = await shownCodes(ops);
    assertEquals(fresh.length, 10);
    ok(fresh.every((c) => !codes.includes(c)), "a new set");
    await ops.page.locator("#recovery-saved").click();
    await textMatches(ops, "#recovery-left", /^10 of 10 recovery codes left\./);
    const stale = await callJson(server, "POST", "/api/auth/login", {
      body: { ...OPS, recovery_code: codes[2]! },
    });
    assertEquals(stale.status, 401, "the old set is gone");
    codes = fresh;
  });

  await t.step("turning 2FA off lands on the sign-in page saying why", async () => {
    server.clock.advance(30_000);
    await ops.page.locator("#disable-password").fill(OPS.password);
    await ops.page.locator("#disable-code").fill(codeAt(server, secret));
    await ops.page.locator("#two-factor button.danger").click();
    await ops.page.waitForURL(`${base}/login?next=%2Fconsole%2Faccount`);
    await ops.page.locator("#reason", {
      hasText: "Two-factor authentication is off: sign in again with your password alone.",
    }).waitFor();
    await ops.screenshot("login-reason-2fa-off");
    // Said once: a reload of the sign-in page says nothing more.
    await ops.page.reload();
    await ops.page.locator("#username").waitFor();
    assertEquals(await ops.page.locator("#reason").isVisible(), false);
    const row = server.db.prepare("SELECT totp_enabled FROM users WHERE id = ?").get(opsId);
    assertEquals({ ...row }, { totp_enabled: 0 });
    ok(ops.problems.length === 0, ops.problems.join("\n"));
    await ops.close();
  });
});

Deno.test({
  name:
    "My account lists the permissions without breaking one inside a word, at 1440 and 390 px (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using kit = await startConsoleKit();
  const p = await kit.signIn({ username: "admin", password: "Correct-Horse-9" });
  await p.open("account");
  for (const width of [1440, 390]) {
    await p.page.setViewportSize({ width, height: 900 });
    await p.page.waitForTimeout(100);
    const items = p.page.locator("#account-permissions code");
    assertEquals(await items.count(), 30);
    for (const item of await items.all()) {
      const lines = await item.evaluate((e) =>
        new Set([...e.getClientRects()].map((r) => Math.round(r.top))).size
      );
      assertEquals(lines, 1, `${await item.textContent()} at ${width} px`);
    }
    await p.screenshot(`account-permissions-${width}`);
  }
  ok(p.problems.length === 0, p.problems.join("\n"));
  await p.close();
});

Deno.test({
  name:
    "the sign-in page says once why the console ended a session, readable in both schemes (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using kit = await startConsoleKit();
  const { server } = kit;
  const base = server.managementUrl;
  // A new password from My account: the sign-in page says why it is back.
  await createUser(server, OPS.username, OPS.password, "readonly");
  const ops = await kit.signIn(OPS);
  await ops.open("account");
  await ops.page.locator("#current-password").fill(OPS.password);
  await ops.page.locator("#new-password").fill("Harbour-Quill-73");
  await ops.page.locator("#password-change").click();
  await ops.page.waitForURL(`${base}/login?next=%2Fconsole%2Faccount`);
  await ops.page.locator("#reason", {
    hasText: "Your password was changed: sign in again with the new one.",
  }).waitFor();
  await ops.close();

  const texts = {
    "2fa_on": "Two-factor authentication is on: sign in again with your code.",
    "2fa_off": "Two-factor authentication is off: sign in again with your password alone.",
    password_changed: "Your password was changed: sign in again with the new one.",
  };
  for (const scheme of ["light", "dark"] as const) {
    const context = await kit.browser.newContext({ colorScheme: scheme });
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    assertEquals(await page.locator("#reason").isVisible(), false, "no reason, no notice");
    for (const [reason, text] of Object.entries(texts)) {
      await page.evaluate(
        `sessionStorage.setItem("waf.sign_in_reason", ${JSON.stringify(reason)})`,
      );
      await page.goto(`${base}/login`);
      assertEquals(await page.locator("#reason").textContent(), text);
    }
    await page.evaluate(`sessionStorage.setItem("waf.sign_in_reason", "<b>made up</b>")`);
    await page.goto(`${base}/login`);
    assertEquals(
      await page.locator("#reason").isVisible(),
      false,
      "an unknown reason says nothing",
    );
    // The recovery-code choice, shown once 2FA is in use, passes the contrast sweep.
    server.db.prepare("UPDATE users SET totp_enabled = 1 WHERE username = ?").run(OPS.username);
    await page.evaluate(`sessionStorage.setItem("waf.sign_in_reason", "2fa_on")`);
    await page.goto(`${base}/login`);
    await page.locator("#use-recovery").click();
    await page.locator("#recovery").waitFor();
    const report = await contrast(page);
    assertEquals(report.failures, [], `sign-in page, ${scheme}`);
    ok(report.checked.button > 1, JSON.stringify(report.checked));
    await page.screenshot({ path: `${kit.shots}/login-recovery-${scheme}.png`, fullPage: true });
    await context.close();
  }
});
