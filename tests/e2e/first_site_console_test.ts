/**
 * The guided first site in real chromium, as a new administrator meets it: signing in with no site
 * lands on the flow; the upstream check says why a closed port is unreachable and that the real
 * upstream answers; the site is created with the mode and level chosen (each explained in one
 * line); the one-click test request is blocked before the upstream (the recording upstream is the
 * oracle), shows the block page and links its trace in the attack log. Problems the API finds
 * appear beside the flow's own fields. Screenshots at 1440 and 390 px in both colour schemes.
 * The dashboard's getting-started checklist: each step from the real state, gone when all are
 * done, dismissed per user.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { codeAt, enableTwoFactor } from "../_helpers/api_access.ts";
import { ADMIN, settle, startConsoleKit, textMatches, unlabelled } from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import { contrast, tabWalk, unnamed } from "../_helpers/accessibility.ts";
import type { Page } from "playwright-core";

/** Names, Tab order, focus rings and contrast (light and dark) of the page as it is now. */
async function accessible(page: Page, what: string): Promise<void> {
  assertEquals(await unnamed(page), [], `${what}: names`);
  const walk = await tabWalk(page);
  assertEquals([walk.unreached, walk.noRing, walk.positive], [[], [], []], `${what}: keyboard`);
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    assertEquals((await contrast(page)).failures, [], `${what}: contrast, ${scheme}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

const OPS = { username: "ops", password: "Juniper-Stone-71" };

/** A loopback port nothing listens on. */
function closedPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test({
  name:
    "the first sign-in with no site lands on the guided flow: upstream check, site created, test request blocked and traced (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  const admin = await kit.signIn(ADMIN);
  const { page } = admin;
  let traceId = "";

  await t.step("signing in with no site lands on the flow", async () => {
    assertEquals(new URL(page.url()).pathname, "/console/sites/first");
    await textMatches(admin, "#page-title", /Protect your first site/);
    assertEquals(await unlabelled(page), []);
  });

  await t.step("the API's problems show beside the flow's fields", async () => {
    await page.locator("#first-host").fill("bad host");
    await page.locator("#first-upstream").fill("ftp://files.example");
    await page.locator("#first-create").click();
    await textMatches(admin, "#first-host-problems", /expected a host name/);
    await textMatches(admin, "#first-upstream-problems", /http\(s\) origin/);
    const summary = await textMatches(admin, ".form-problems", /Check the fields marked below/);
    ok(!summary.includes("upstreams[0]"), summary);
    assertEquals(await page.locator("#first-host").getAttribute("aria-invalid"), "true");
    assertEquals(server.dataPlane.sites.list(), []);
    await accessible(page, "the flow with problems");
  });

  await t.step(
    "the upstream check says why a port is unreachable, then that it answers",
    async () => {
      await page.locator("#first-upstream").fill(`http://127.0.0.1:${closedPort()}`);
      await page.locator("#first-check").click();
      const refused = await textMatches(admin, "#first-check-result", /not reachable/);
      assertMatch(refused, /could not connect: .*(ECONNREFUSED|refused)/i);
      await page.locator("#first-upstream").fill(up.url);
      await page.locator("#first-check").click();
      await textMatches(admin, "#first-check-result", /reachable The upstream answered 200/);
      assertEquals(up.seen.length, 1, "the check sent one request to the upstream");
      for (const width of [1440, 390]) {
        await page.setViewportSize({ width, height: 900 });
        await admin.screenshot(`first-site-form.${width}`);
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    },
  );

  await t.step(
    "mode and level are explained in one line each and the site is created",
    async () => {
      await page.locator("#first-host").fill("shop.test");
      assertEquals(await page.locator("#first-host-problems").count(), 0, "edited: problem gone");
      assertEquals(await page.locator("#first-name").inputValue(), "shop.test");
      await textMatches(admin, "#first-mode-monitor-line", /only logged/);
      await textMatches(admin, "#first-level-strict-line", /more false positives/);
      await page.locator("#first-level-low").check();
      await page.locator("#first-create").click();
      await textMatches(admin, "#first-created", /protects shop\.test/);
      const [site] = server.dataPlane.sites.list();
      assertEquals([site?.name, site?.hosts, site?.upstreams, site?.mode, site?.level], [
        "shop.test",
        ["shop.test"],
        [up.url],
        "block",
        "low",
      ]);
      assertEquals(new URL(page.url()).search, `?site=${site!.id}`);
    },
  );

  await t.step(
    "the one-click test request is blocked, shows the block page and its trace",
    async () => {
      const before = up.seen.length;
      await page.locator("#first-test").click();
      await textMatches(admin, "#first-test-result", /blocked: 403/);
      traceId = (await page.locator("#first-trace").textContent())!;
      assertMatch(traceId, /^[0-9a-f]{32}$/);
      assertEquals(up.seen.length, before, "the attack never reached the upstream");
      await textMatches(
        admin,
        "#first-curl",
        /curl -s -i -H 'Host: shop\.test' 'http:\/\/127\.0\.0\.1:\d+\/\?waf_test=/,
      );
      const frame = page.frameLocator("#first-block-page");
      await frame.locator("body", { hasText: "Request blocked" }).waitFor();
      ok(
        (await frame.locator("body").textContent())!.includes(traceId),
        "the page shows the trace",
      );
      assertEquals(await unlabelled(page), []);
      await accessible(page, "the test request's result");
    },
  );

  await t.step("screenshots at 1440 and 390 px, light and dark", async () => {
    for (const width of [1440, 390]) {
      for (const scheme of ["light", "dark"] as const) {
        await page.setViewportSize({ width, height: 900 });
        await page.emulateMedia({ colorScheme: scheme });
        await admin.screenshot(`first-site.${width}.${scheme}`);
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.emulateMedia({ colorScheme: "light" });
  });

  await t.step("the trace opens in the attack log", async () => {
    await page.locator("a.first-log-link").click();
    await page.waitForURL(`${server.managementUrl}/console/logs/${traceId}`);
    await textMatches(admin, "#record .trace-id", new RegExp(traceId));
    // The same attack from outside is blocked too: the site protects real traffic.
    assertEquals(
      (await hit(server, "/?q=1%20union%20select%20password%20from%20users")).status,
      403,
    );
    assertEquals(admin.problems, []);
  });
  await admin.close();
});

Deno.test({
  name:
    "with a site, sign-in goes to the dashboard; the guided flow stays one click away on Sites (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  addSite(server, up.url);
  const admin = await kit.signIn(ADMIN);
  assertEquals(new URL(admin.page.url()).pathname, "/console");
  await admin.open("sites");
  await admin.page.locator("#sites-guided").click();
  await admin.page.waitForURL(`${server.managementUrl}/console/sites/first`);
  await admin.page.locator("#first-site-form").waitFor();
  assertEquals(admin.problems, []);
  await admin.close();
});

Deno.test({
  name:
    "the dashboard checklist reads each step from the real state, links to it, hides when all are done, and stays dismissed per user (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  const site = addSite(server, up.url);
  const admin = await kit.signIn(ADMIN);
  const { page } = admin;
  /** Each step's state as the dashboard shows it when opened (from another page). */
  const state = async () => {
    await admin.open("sites");
    await admin.open("dashboard");
    await settle(admin);
    return Object.fromEntries(
      await Promise.all(
        ["site", "blocked", "2fa", "channel"].map(async (id) => [
          id,
          await page.locator(`#check-${id}`).getAttribute("class"),
        ]),
      ),
    );
  };

  await t.step("each step is read from the real state and links where it is done", async () => {
    assertEquals(await state(), {
      site: "done-step",
      blocked: "open-step",
      "2fa": "open-step",
      channel: "open-step",
    });
    await textMatches(admin, "#checklist-progress", /^1 of 4 done$/);
    assertEquals(
      await page.locator("#check-blocked a").getAttribute("href"),
      `/console/sites/first?site=${site.id}`,
    );
    assertEquals(await page.locator("#check-2fa a").getAttribute("href"), "/console/account");
    assertEquals(await page.locator("#check-channel a").getAttribute("href"), "/console/channels");
    assertEquals(await unlabelled(page), []);
    await admin.screenshot("dashboard-checklist");

    assertEquals(
      (await hit(server, "/?q=1%20union%20select%20password%20from%20users")).status,
      403,
    );
    const channel = await callJson(server, "POST", "/api/notification-channels", {
      session: api,
      body: {
        name: "ops",
        type: "webhook",
        events: ["attack.spike"],
        settings: { url: "http://127.0.0.1:9/hook" },
      },
    });
    assertEquals(channel.status, 201, JSON.stringify(channel.body));
    assertEquals(await state(), {
      site: "done-step",
      blocked: "done-step",
      "2fa": "open-step",
      channel: "done-step",
    });
    await textMatches(admin, "#checklist-progress", /^3 of 4 done$/);
    // The link opens the guided flow's test step for that site.
    await page.locator("#check-blocked a").click();
    await page.locator("#first-test").waitFor();
  });

  await t.step("an administrator with every step done sees no checklist", async () => {
    await createUser(server, OPS.username, OPS.password, "admin");
    const id = (await server.identity.users.list()).find((u) => u.username === OPS.username)!.id;
    const secret = await enableTwoFactor(server, OPS, id);
    const context = await kit.browser.newContext();
    const p = await context.newPage();
    await p.goto(`${server.managementUrl}/login`);
    await p.locator("#username").fill(OPS.username);
    await p.locator("#password").fill(OPS.password);
    await p.locator("#submit").click();
    await p.locator("#totp").waitFor();
    await p.locator("#totp").fill(codeAt(server, secret, 1));
    await p.locator("#submit").click();
    await p.waitForURL(`${server.managementUrl}/console`);
    await p.locator("#card-requests").waitFor();
    await p.waitForLoadState("networkidle");
    assertEquals(await p.locator("#checklist").count(), 0);
    await context.close();
  });

  await t.step("dismissed, it stays hidden for this user only, after a reload", async () => {
    await admin.open("dashboard");
    await page.locator("#checklist-dismiss").click();
    await page.locator("#checklist").waitFor({ state: "detached" });
    const session = await callJson(server, "GET", "/api/auth/session", { session: api });
    assertEquals(
      (session.body.preferences as { checklist_dismissed: boolean }).checklist_dismissed,
      true,
    );
    await page.reload();
    await page.locator("#card-requests").waitFor();
    await settle(admin);
    assertEquals(await page.locator("#checklist").count(), 0);

    await createUser(server, "second", "Harbor-Quill-58", "admin");
    const second = await kit.signIn({ username: "second", password: "Harbor-Quill-58" });
    await second.open("dashboard");
    await second.page.locator("#checklist").waitFor();
    assertEquals(admin.problems, []);
    assertEquals(second.problems, []);
    await second.close();
  });
  await admin.close();
});
