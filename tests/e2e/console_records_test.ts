/**
 * The rest of issue #21's page list in a real headless chromium: the attack log filtered by time,
 * site, client address, action, class and status, and a record's timings; the dashboard's block
 * rate, classes, top lists, charts, upstream health and pipeline; a site edited (mode, level,
 * limits, timeouts, a TLS certificate and key uploaded from files) with its certificate state
 * shown; the expiring certificate in the notifications inbox, marked read; and 2FA turned off by
 * its owner and reset by an administrator.
 */
import { Buffer } from "node:buffer";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { codeAt, enableTwoFactor } from "../_helpers/api_access.ts";
import {
  ADMIN,
  type ConsolePage,
  evaluateUntil,
  settle,
  startConsoleKit,
} from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const UNION = "/search?q=1%20union%20select%20password%20from%20users"; // sqli
const OPS = { username: "ops", password: "Juniper-Stone-71" };
const DEV = { username: "dev", password: "Harbor-Lantern-36" };

/** The attack log's rows as [site, client, action, class, status] (the empty note: none). */
const ROWS = `[...document.querySelectorAll("main table tbody tr")]
  .filter((tr) => tr.cells.length >= 7)
  .map((tr) => [1, 3, 4, 5, 6].map((i) => tr.cells[i].textContent.trim()))`;

function rowsWhen(
  p: ConsolePage,
  want: (rows: string[][]) => boolean,
): Promise<string[][]> {
  return evaluateUntil(p, ROWS, want, "the attack log");
}

Deno.test({
  name:
    "sites, the attack log's filters, the inbox and 2FA recovery work in a real browser (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  const ids: Record<string, string> = {};
  for (const name of ["shop", "blog"]) {
    const r = await callJson(server, "POST", "/api/sites", {
      session: api,
      body: {
        name,
        hosts: [`${name}.test`],
        upstreams: [up.url],
        trusted_proxies: ["127.0.0.1/32"],
      },
    });
    assertEquals(r.status, 201);
    ids[name] = r.body.id as string;
  }
  const admin = await kit.signIn(ADMIN);

  let attackTrace = "";
  await t.step(
    "the attack log filters by time, site, client, action, class and status",
    async () => {
      assertEquals((await hit(server, "/", { ip: "192.0.2.1" })).status, 200);
      const attack = await hit(server, UNION, { ip: "198.51.100.7" });
      assertEquals(attack.status, 403);
      attackTrace = attack.traceId;
      assertEquals((await hit(server, "/", { ip: "192.0.2.2", host: "blog.test" })).status, 200);
      assertEquals(
        (await hit(server, UNION, { ip: "198.51.100.8", host: "blog.test" })).status,
        403,
      );
      await admin.open("logs");
      const apply = () => admin.page.locator("#apply-filters").click();
      const reset = () => admin.page.locator("button", { hasText: "Reset" }).click();
      const allTraffic = () => admin.page.locator("#filter-action").selectOption("all");
      // By default the attacks only; "All traffic" adds the passed requests.
      await rowsWhen(admin, (rows) => rows.length === 2 && rows.every((r) => r[2] === "blocked"));
      await allTraffic();
      await apply();
      await rowsWhen(admin, (rows) => rows.length === 4);

      await admin.page.locator("#filter-site").selectOption(ids.blog!);
      await apply();
      let rows = await rowsWhen(admin, (r) => r.length === 2 && r.every((x) => x[0] === "blog"));
      assertEquals(rows.map((r) => r[1]).sort(), ["192.0.2.2", "198.51.100.8"]);
      assertMatch(admin.page.url(), new RegExp(`site=${ids.blog}`), "the URL carries the filter");

      // Reset empties the fields as well as the list's filters (back to the attacks).
      await reset();
      await rowsWhen(admin, (r) => r.length === 2);
      assertEquals(await admin.page.locator("#filter-site").inputValue(), "");
      assertEquals(await admin.page.locator("#filter-action").inputValue(), "");
      await admin.page.locator("#filter-action").selectOption("block");
      await admin.page.locator("#filter-class").selectOption("sqli");
      await apply();
      rows = await rowsWhen(admin, (r) => r.length === 2 && r.every((x) => x[2] === "blocked"));
      assertEquals(rows.map((r) => [r[3], r[4]]), [["sqli", "403"], ["sqli", "403"]]);

      await reset();
      await admin.page.locator("#filter-client_ip").fill("198.51.100.7");
      await admin.page.locator("#filter-status").fill("403");
      await apply();
      rows = await rowsWhen(admin, (r) => r.length === 1);
      assertEquals(rows, [["shop", "198.51.100.7", "blocked", "sqli", "403"]]);

      await reset();
      await allTraffic();
      await admin.page.locator("#filter-status").fill("200");
      await apply();
      rows = await rowsWhen(admin, (r) => r.length === 2 && r.every((x) => x[4] === "200"));

      // Time: nothing before 2020, everything since.
      await reset();
      await allTraffic();
      await admin.page.locator("#filter-to").fill("2020-01-01T00:00");
      await apply();
      await admin.page.locator(".empty", { hasText: "No records match." }).waitFor();
      await reset();
      await allTraffic();
      await admin.page.locator("#filter-from").fill("2020-01-01T00:00");
      await apply();
      await rowsWhen(admin, (r) => r.length === 4);
      ok(admin.problems.length === 0, admin.problems.join("\n"));
    },
  );

  await t.step(
    "the dashboard: block rate, classes, top sites, paths and clients, upstreams, pipeline",
    async () => {
      // Four requests, two blocked (one sqli on each site), from the step above.
      server.monitor.rollups.sample();
      await admin.open("dashboard");
      const page = admin.page;
      await page.locator("#card-requests .value", { hasText: /^4$/ }).waitFor();
      await page.locator("#card-blocked .value", { hasText: /^2$/ }).waitFor();
      assertEquals(await page.locator("#card-block_rate .value").textContent(), "50.0%");
      /** The rows (cell texts) of the table under the heading `title`. */
      const table = async (title: string) => {
        const part = page.locator(".grid2 > div", { has: page.locator("h2", { hasText: title }) });
        await part.locator("tbody tr").first().waitFor();
        const rows = await part.locator("tbody tr").all();
        return await Promise.all(
          rows.map(async (r) => (await r.locator("td").allTextContents()).map((c) => c.trim())),
        );
      };
      assertEquals(await table("Blocked by attack class"), [["sqli", "2"]]);
      assertEquals(
        (await table("Top attacked sites")).map((r) => r.slice(0, 2)).sort(),
        [["blog", "1"], ["shop", "1"]],
      );
      assertEquals(
        (await table("Top attacked paths")).map((r) => r.slice(1)),
        [["/search", "1"], ["/search", "1"]],
      );
      assertEquals(
        (await table("Top attacking addresses")).sort(),
        [["198.51.100.7", "1"], ["198.51.100.8", "1"]],
      );
      // Both charts are drawn (uPlot canvases), and every site's upstream is listed as up.
      assertEquals(await page.locator(".chart[role=img] canvas").count() >= 2, true);
      const upstreams = page.locator("h2", { hasText: "Upstream health" })
        .locator("xpath=following-sibling::*[1]");
      const health = await upstreams.locator("tbody tr").allTextContents();
      assertEquals(health.length, 2, JSON.stringify(health));
      ok(health.every((h) => h.includes(up.url.replace(/\/$/, "")) && h.includes("up")), health[0]);
      const pipeline = await page.locator("#pipeline dd").allTextContents();
      // Queued, written, dropped, dropped verdicts, sampled, the sampling rate now ("all" while
      // nothing is sampled), spilled, spilled rows waiting, pruned.
      assertEquals(pipeline.length, 9, JSON.stringify(pipeline));
      assertEquals(pipeline[5], "all");
      ok(pipeline.every((v, i) => i === 5 || /^\d/.test(v)), JSON.stringify(pipeline));
      await page.locator("#card-dropped .value", { hasText: /^0$/ }).waitFor();
      ok(admin.problems.length === 0, admin.problems.join("\n"));
    },
  );

  await t.step("a record shows its timings", async () => {
    await admin.open(`logs/${attackTrace}`);
    await admin.page.locator("#record").waitFor();
    const timings = admin.page.locator("#record div", {
      has: admin.page.locator("h2", { hasText: "Timings" }),
    }).last();
    const values = await timings.locator("dd").allTextContents();
    ok(values.length >= 3, JSON.stringify(values));
    assertMatch(values[0]!, /\d/, "the total time is shown");
  });

  await t.step("a site is edited and gets a certificate uploaded from files", async () => {
    const ca = await createCa("console CA", server.clock.now(), systemRandom);
    const leaf = await createLeaf(
      ca,
      { commonName: "shop.test", dnsNames: ["shop.test"], days: 10 },
      server.clock.now(),
      systemRandom,
    );
    await admin.open("sites");
    const row = admin.page.locator("tr", {
      has: admin.page.getByRole("cell", { name: "shop", exact: true }),
    });
    await row.locator("button", { hasText: "Edit" }).click();
    assertEquals(await admin.page.locator("#edit-name").inputValue(), "shop");
    await admin.page.locator("#edit-mode").selectOption("monitor");
    await admin.page.locator("#edit-level").selectOption("strict");
    await admin.page.locator("#edit-max-body-bytes").fill("2048");
    await admin.page.locator("#edit-timeouts-connect-ms").fill("1500");
    await admin.page.locator("#edit-timeouts-response-ms").fill("9000");
    for (const [part, pem] of [["cert", leaf.cert], ["key", leaf.key]] as const) {
      await admin.page.locator(`#edit-tls-${part}-file`).setInputFiles({
        name: `shop.${part}.pem`,
        mimeType: "application/x-pem-file",
        buffer: Buffer.from(pem),
      });
    }
    for (let i = 0; i < 50; i++) {
      if ((await admin.page.locator("#edit-tls-key").inputValue()).includes("PRIVATE KEY")) break;
      await admin.page.waitForTimeout(50);
    }
    assertMatch(await admin.page.locator("#edit-tls-cert").inputValue(), /BEGIN CERTIFICATE/);
    await admin.page.locator(".panel form button[type=submit]").click();
    await admin.page.locator(".done", { hasText: "Saved." }).waitFor();
    await row.locator(".badge", { hasText: "expiring soon" }).waitFor();
    assertMatch((await row.textContent())!, /monitor/);

    const site = server.dataPlane.sites.list().find((s) => s.name === "shop")!;
    assertEquals(
      [site.mode, site.level, site.max_body_bytes, site.timeouts.connect_ms],
      ["monitor", "strict", 2048, 1500],
    );
    assertEquals(site.timeouts.response_ms, 9000);
    assertEquals(site.tls?.cert.trim(), leaf.cert.trim());
    // Monitor mode: the attack is logged, not blocked.
    const logged = await hit(server, UNION, { ip: "198.51.100.9" });
    assertEquals([logged.status, logged.action], [200, "log"]);
  });

  await t.step("the expiring certificate reaches the inbox and is marked read", async () => {
    const run = await server.ops.scheduler.runNow("certificate-check", "test");
    assertEquals((await run.done).detail, { expiring: 1 });
    await admin.open("notifications");
    const row = admin.page.locator("tr", { hasText: "The certificate of shop expires in" });
    await row.locator(".badge", { hasText: "unread" }).waitFor();
    await row.locator("button", { hasText: "Mark read" }).click();
    await row.locator("td", { hasText: /^read$/ }).waitFor();
    await admin.page.locator("#only-unread").check();
    await admin.page.locator(".empty", { hasText: "No notifications." }).waitFor();
    const unread = await callJson(server, "GET", "/api/notifications?unread=true", {
      session: api,
    });
    assertEquals(unread.body.items, []);
  });

  await t.step("its owner turns 2FA off; an administrator resets another's", async () => {
    // ops turns 2FA on (the API), signs in with a code, and turns it off in "My account".
    await createUser(server, OPS.username, OPS.password, "admin");
    await createUser(server, DEV.username, DEV.password, "admin");
    const enable = async (user: { username: string; password: string }) => {
      const id = (await server.identity.users.list()).find((u) => u.username === user.username)!
        .id;
      return await enableTwoFactor(server, user, id);
    };
    const opsSecret = await enable(OPS);
    await enable(DEV);

    const context = await kit.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${server.managementUrl}/login?next=%2Fconsole%2Faccount`);
    await page.locator("#username").fill(OPS.username);
    await page.locator("#password").fill(OPS.password);
    await page.locator("#submit").click();
    await page.locator("#totp").waitFor(); // the page asks for the code
    await page.locator("#totp").fill(codeAt(server, opsSecret, 1));
    await page.locator("#submit").click();
    await page.waitForURL(`${server.managementUrl}/console/account`);
    await page.locator("#disable-password").fill(OPS.password);
    // A code of the next time step (the sign-in used this one's).
    server.clock.advance(30_000);
    await page.locator("#disable-code").fill(codeAt(server, opsSecret, 1));
    await page.locator("#two-factor button.danger").click();
    const off = async (username: string) => {
      for (let i = 0; i < 200; i++) {
        const u = (await server.identity.users.list()).find((x) => x.username === username);
        if (u?.totp_enabled === false) return true;
        await new Promise((r) => setTimeout(r, 50));
      }
      return false;
    };
    ok(
      await off(OPS.username),
      `ops could not turn 2FA off: ${page.url()} ${await page.locator("body").textContent()}`,
    );
    // Turning it off ends the account's sessions: the console goes back to the sign-in page.
    await page.waitForURL(`${server.managementUrl}/login?next=%2Fconsole%2Faccount`);
    await context.close();

    // The administrator resets dev's 2FA from the Users page with their own password.
    await admin.open("users");
    await settle(admin);
    const row = admin.page.locator("tr", {
      has: admin.page.getByRole("cell", { name: DEV.username, exact: true }),
    });
    await row.locator("button", { hasText: "Reset 2FA" }).click();
    await admin.page.locator("#recover-password").fill(ADMIN.password);
    await admin.page.locator("form.panel button.danger").click();
    ok(await off(DEV.username), "the administrator reset dev's 2FA");
    const plain = await callJson(server, "POST", "/api/auth/login", { body: DEV });
    assertEquals(plain.status, 200, "dev signs in without a code");
    ok(admin.problems.length === 0, admin.problems.join("\n"));
  });
  await admin.close();
});
