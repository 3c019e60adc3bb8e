/**
 * The console's main paths in a real headless chromium against a real server (one of each for
 * the whole file): create a site, send an attack through the data plane and find it on the
 * dashboard and by its trace id, block the address from the record, sign in from a bookmarked
 * page and come back to it (never to another origin), approve an ALAP decision,
 * preview and publish a custom block page, create and revoke a token, enable 2FA with a code
 * computed here, a readonly user who cannot change anything, every page in both languages
 * (labelled controls, no script error or CSP violation, screenshots), and the first page's
 * script weight.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { unnamed } from "../_helpers/accessibility.ts";
import { codeAt, TOKENS_ON } from "../_helpers/api_access.ts";
import {
  ADMIN,
  createShopInForm,
  startConsoleKit,
  textMatches,
  unlabelled,
} from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { PAGES } from "../../console/pages.js";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const UNION = "/search?q=1%20union%20select%20password%20from%20users"; // sqli, critical
const ATTACKER = "198.51.100.7";
const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };
const OPS = { username: "ops", password: "Juniper-Stone-71" };
// 210 KB: the production notices and overload figures (2026-12-02) took the console past 200.
const BUDGET = 210 * 1024;
/**
 * True in the page once no "Loading…" status is left (run by the browser; polled with evaluate,
 * since waitForFunction needs eval, which the console's CSP refuses).
 */
const LOADED = `![...document.querySelectorAll("main [role=status]")]
  .some((e) => /Loading|加载中/.test(e.textContent))`;

Deno.test({
  name: "the console's main paths work in a real browser (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit(TOKENS_ON);
  const { server } = kit;
  const admin = await kit.signIn(ADMIN);
  const api = await login(server, ADMIN.username, ADMIN.password);

  await t.step("the first page loads under 210 KB of script", async () => {
    const context = await kit.browser.newContext();
    const page = await context.newPage();
    const bodies: Promise<number>[] = [];
    page.on("response", (r) => {
      if (r.request().resourceType() === "script") bodies.push(r.body().then((b) => b.length));
    });
    await context.addCookies(
      api.cookie.split("; ").map((c) => {
        const [name, value] = c.split("=");
        return { name: name!, value: value!, url: server.managementUrl };
      }),
    );
    await page.goto(`${server.managementUrl}/console`);
    await page.locator("#card-requests").waitFor();
    await page.waitForLoadState("networkidle");
    const sizes = await Promise.all(bodies);
    const total = sizes.reduce((a, b) => a + b, 0);
    console.log(`first page: ${sizes.length} scripts, ${total} bytes of script`);
    ok(total > 0 && total < BUDGET, `${total} bytes`);
    await context.close();
  });

  await t.step("/ redirects to the console and client routes answer the shell", async () => {
    const root = await fetch(`${server.managementUrl}/`, { redirect: "manual" });
    await root.body?.cancel();
    assertEquals([root.status, root.headers.get("location")], [302, "/console"]);
    const deep = await fetch(`${server.managementUrl}/console/logs/${"a".repeat(32)}`);
    assertMatch(await deep.text(), /app\.js/);
    const csp = deep.headers.get("content-security-policy") ?? "";
    ok(csp.includes("script-src 'self'") && csp.includes("frame-ancestors 'none'"), csp);
    ok(!csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"), csp);
  });

  let siteId = "";
  await t.step("an administrator creates a site", async () => {
    await createShopInForm(admin, up.url);
    const sites = server.dataPlane.sites.list();
    assertEquals(sites.map((s) => [s.name, s.hosts, s.trusted_proxies]), [
      ["shop", ["shop.test"], ["127.0.0.1/32"]],
    ]);
    siteId = sites[0]!.id;
    assertEquals((await hit(server, "/", { ip: "192.0.2.1" })).status, 200);
  });

  await t.step("a failed call shows the API's message and trace id", async () => {
    await admin.page.locator("button.new").click();
    await admin.page.locator("#edit-name").fill("broken");
    await admin.page.locator("#edit-hosts").fill("broken.test");
    await admin.page.locator("#edit-upstreams").fill("ftp://nowhere");
    await admin.page.locator("form button[type=submit]").click();
    // The problem is beside its field; the summary names the field by its label.
    const box = admin.page.locator(".error-box");
    await box.waitFor();
    assertMatch((await box.textContent())!, /Check the fields marked below: Upstreams/);
    assertMatch(
      (await admin.page.locator("#edit-upstreams-problems").textContent())!,
      /Line 1: expected an http\(s\) origin/,
    );
    assertMatch((await box.locator(".trace-id").textContent())!, /^[0-9a-f]{32}$/);
  });

  let traceId = "";
  await t.step("an attack shows on the dashboard and opens by its trace id", async () => {
    const attack = await hit(server, UNION, { ip: ATTACKER });
    assertEquals(attack.status, 403);
    traceId = attack.traceId;
    await admin.open("dashboard");
    await textMatches(admin, "#card-blocked .value", /^1$/);
    await textMatches(admin, "#card-requests .value", /^2$/);
    await admin.page.locator("td", { hasText: ATTACKER }).waitFor();
    await admin.page.locator("td", { hasText: "sqli" }).first().waitFor();
    await admin.screenshot("flow-dashboard-after-attack");

    await admin.open("logs");
    await admin.page.locator("#trace-search").fill(traceId);
    await admin.page.locator("#trace-open").click();
    await admin.page.locator("#record").waitFor();
    assertEquals(admin.page.url(), `${server.managementUrl}/console/logs/${traceId}`);
    assertEquals(await admin.page.locator("#record .trace-id").textContent(), traceId);
    assertMatch((await admin.page.locator("#finding").textContent())!, /sqli/);
    assertMatch((await admin.page.locator("#evidence").textContent())!, /union/i);
    const chain = await admin.page.locator("#record table tbody tr td:nth-child(2)")
      .allTextContents();
    assertEquals(chain, attack.chain.map((c) => c.check), "the whole chain is listed");
    await admin.screenshot("flow-record");
  });

  await t.step("one click blocks the address from the record", async () => {
    await admin.page.locator("#block-ip").click();
    await admin.page.locator(".done", { hasText: ATTACKER }).waitFor();
    const list = await callJson(server, "GET", "/api/protection/ip-lists", { session: api });
    assertEquals(
      (list.body.items as { cidr: string; action: string }[]).map((e) => [e.action, e.cidr]),
      [["block", ATTACKER]],
    );
    const benign = await hit(server, "/", { ip: ATTACKER });
    assertEquals([benign.status, benign.chain.at(-1)?.check], [403, "ip_list"]);
  });

  await t.step("signing in returns to the page asked for, and only to this console", async () => {
    const context = await kit.browser.newContext();
    await context.route("https://evil.example/**", (r) => r.fulfill({ body: "evil" }));
    const page = await context.newPage();
    const base = server.managementUrl;
    /** Signs in on the sign-in page that is open; resolves with where the browser went. */
    const signIn = async () => {
      await page.locator("#username").fill(ADMIN.username);
      await page.locator("#password").fill(ADMIN.password);
      await page.locator("#submit").click();
      await page.waitForURL((u) => !u.pathname.startsWith("/login"), { timeout: 10_000 });
      return page.url().startsWith(base) ? page.url().slice(base.length) : page.url();
    };

    const record = `/console/logs/${traceId}`;
    await page.goto(base + record);
    await page.waitForURL(`${base}/login?next=${encodeURIComponent(record)}`);
    assertEquals(await signIn(), record);
    assertEquals(await page.locator("#record .trace-id").textContent(), traceId);

    await page.locator("#logout").click();
    await page.waitForURL(`${base}/login`, { timeout: 10_000 });
    const filtered = `/console/logs?client_ip=${ATTACKER}&action=block`;
    await page.goto(base + filtered);
    await page.waitForURL(/\/login\?next=/);
    assertEquals(await signIn(), filtered);
    assertEquals(await page.locator("#filter-client_ip").inputValue(), ATTACKER);
    await page.locator("td", { hasText: ATTACKER }).first().waitFor();

    for (
      const next of [
        "https://evil.example/console",
        "//evil.example/console",
        "/\\evil.example/console",
        "/%5Cevil.example/console",
        "javascript:alert(1)",
        "/console/../api/auth/session",
        "/api/auth/session",
        "/consoles",
        "/console/assets/app.js",
      ]
    ) {
      await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
      assertEquals(await signIn(), "/console", next);
    }
    await context.close();
  });

  await t.step(
    "a pending ALAP decision shows on the dashboard, is approved and revoked",
    async () => {
      const policy = await callJson(server, "PUT", "/api/alap/policy", {
        session: api,
        body: { client_score_threshold: 150 },
      });
      assertEquals(policy.status, 200);
      for (let i = 0; i < 2; i++) await hit(server, UNION, { ip: "192.0.2.66" });
      server.dataPlane.protection.alap.flush();
      await admin.open("dashboard");
      await textMatches(admin, "#pending-alap", /^1 /);
      await admin.open("alap");
      await admin.page.locator("button.approve").click();
      await admin.page.locator("button.approve").waitFor({ state: "detached" });
      const decisions = await callJson(server, "GET", "/api/alap/decisions", { session: api });
      const items = decisions.body.items as { status: string; target: { client_ip?: string } }[];
      assertEquals(items.map((d) => [d.status, d.target.client_ip]), [["applied", "192.0.2.66"]]);
      assertEquals((await hit(server, "/", { ip: "192.0.2.66" })).status, 403);
      // Revoked from the applied list, it reads "revoked" and the address passes again.
      await admin.page.locator("#alap-status").selectOption("applied");
      await admin.page.locator("button", { hasText: "Revoke" }).click();
      await admin.page.locator("button", { hasText: "Revoke" }).waitFor({ state: "detached" });
      const after = await callJson(server, "GET", "/api/alap/decisions", { session: api });
      assertEquals((after.body.items as { status: string }[]).map((d) => d.status), ["revoked"]);
      assertEquals((await hit(server, "/", { ip: "192.0.2.66" })).status, 200);
      await admin.page.locator("#alap-status").selectOption("revoked");
      await admin.page.locator("tbody .badge", { hasText: "revoked" }).waitFor();
    },
  );

  await t.step("a custom block page is previewed in a sandboxed frame and published", async () => {
    await admin.open("block-pages");
    const iframe = admin.page.locator("iframe.preview").first();
    await iframe.waitFor();
    assertEquals(await iframe.getAttribute("sandbox"), "");
    const draft =
      `<html><head><style>h1{color:rgb(200, 0, 0)}</style></head><body><h1>Stopped</h1><script>parent.document.title="pwned"</script><p>{{trace_id}}</p></body></html>`;
    await admin.page.locator("#custom-html").fill(draft);
    await admin.page.locator("#preview-custom").click();
    const frame = admin.page.frameLocator("iframe.preview").last();
    await frame.locator("h1", { hasText: "Stopped" }).waitFor();
    assertEquals(
      await frame.locator("h1").evaluate((el) =>
        (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } })
          .getComputedStyle(el).color
      ),
      "rgb(200, 0, 0)",
      "the page's own styles apply inside the preview",
    );
    assertEquals(await frame.locator("script").count(), 0);
    await admin.page.locator("#publish-custom").click();
    await admin.page.locator("#custom-state", { hasText: "custom page is in use" }).waitFor();
    const blocked = await hit(server, UNION, { ip: "203.0.113.9" });
    assertMatch(blocked.body, /Stopped/);
    ok(!blocked.body.includes("<script"), "the published page carries no script");
    ok(!(await admin.page.title()).includes("pwned"));
  });

  await t.step("a token is created (secret shown once) and revoked", async () => {
    await admin.open("tokens");
    await admin.page.locator("#token-note").fill("deploy script");
    await admin.page.locator("#scope-read-sites").check();
    await admin.page.locator("#token-days").fill("30");
    assertEquals(await admin.page.locator("#token-never").isDisabled(), true);
    await admin.page.locator("#token-create").click();
    const secret = (await admin.page.locator("#token-secret").textContent())!;
    assertMatch(secret, /^waf_/);
    await admin.page.locator("#copy-token-secret").click();
    await admin.page.locator(".done", { hasText: "Copied" }).waitFor();
    const tokens = await callJson(server, "GET", "/api/system/api-tokens", { session: api });
    const made = (tokens.body.items as { note: string; expires_at: string; scopes: string[] }[])
      .find((x) => x.note === "deploy script")!;
    const days = (Date.parse(made.expires_at) - server.clock.now()) / 86_400_000;
    ok(days > 29.9 && days <= 30.01, `expires in ${days} days`);
    const bearer = { headers: { authorization: `Bearer ${secret}` } };
    assertEquals((await callJson(server, "GET", "/api/sites", bearer)).status, 200);
    await admin.page.getByRole("cell", { name: "deploy script", exact: true }).waitFor();
    await admin.page.locator("button.danger", { hasText: "Revoke" }).first().click();
    await admin.page.locator("dialog[open] button.danger").click();
    await admin.page.locator(".badge", { hasText: "revoked" }).waitFor();
    assertEquals((await callJson(server, "GET", "/api/sites", bearer)).status, 401);
  });

  await t.step("a user enables 2FA with a code from the authenticator", async () => {
    await createUser(server, OPS.username, OPS.password, "admin");
    const ops = await kit.signIn(OPS);
    await ops.open("account");
    await ops.page.locator("#tfa-setup").click();
    await ops.page.locator("#tfa-qr").waitFor();
    assertMatch((await ops.page.locator("#tfa-qr").getAttribute("src"))!, /^data:image\/svg/);
    const secret = (await ops.page.locator("#tfa-secret").textContent())!;
    await ops.page.locator("#tfa-code").fill(codeAt(server, secret));
    await ops.page.locator("#tfa-enable").click();
    // Enabling keeps this session (it has just proved both factors) and shows the recovery codes.
    await ops.page.locator("#recovery-codes").waitFor();
    assertEquals(ops.page.url(), `${server.managementUrl}/console/account`);
    const user = (await server.identity.users.list()).find((u) => u.username === OPS.username);
    assertEquals(user?.totp_enabled, true);
    const again = await callJson(server, "POST", "/api/auth/login", {
      body: { ...OPS, totp_code: codeAt(server, secret, 1) },
    });
    assertEquals(again.status, 200);
    ok(ops.problems.length === 0, ops.problems.join("\n"));
    await ops.close();
  });

  await t.step("the language follows the stored preference, else the browser", async () => {
    const zh = await kit.signIn(ADMIN, "zh-CN");
    assertEquals(await zh.page.locator("#nav-dashboard").textContent(), "仪表盘");
    await zh.page.locator("#language").selectOption("en");
    await zh.page.locator("#nav-dashboard", { hasText: "Dashboard" }).waitFor();
    await zh.close();
    const again = await kit.signIn(ADMIN, "zh-CN");
    assertEquals(await again.page.locator("#nav-dashboard").textContent(), "Dashboard");
    await again.page.locator("#language").selectOption("zh-CN");
    await again.page.locator("#nav-dashboard", { hasText: "仪表盘" }).waitFor();
    await again.close();
    const session = await callJson(server, "GET", "/api/auth/session", { session: api });
    assertEquals(session.body.preferences, { language: "zh-CN", checklist_dismissed: false });
    await callJson(server, "PUT", "/api/auth/session/preferences", {
      session: api,
      body: { language: null },
    });
  });

  await t.step("a readonly user sees everything and can change nothing", async () => {
    await createUser(server, VIEWER.username, VIEWER.password, "readonly");
    const viewer = await kit.signIn(VIEWER);
    assertEquals(await viewer.page.locator("#nav-tokens").count(), 0, "no manage:api_tokens");
    for (const id of ["sites", "ip-lists", "acl-rules", "custom-rules", "users", "edge"]) {
      await viewer.open(id);
      await viewer.page.locator(".readonly-note").first().waitFor();
      assertEquals(await viewer.page.locator("button.new").count(), 0, id);
      assertEquals(await viewer.page.locator("button.danger").count(), 0, id);
    }
    await viewer.open("rate-limit");
    await viewer.page.locator(".setting form").waitFor();
    assertEquals(await viewer.page.locator(".setting input").first().isDisabled(), true);
    assertEquals(await viewer.page.locator(".setting button[type=submit]").count(), 0);
    await viewer.open(`logs/${traceId}`);
    await viewer.page.locator("#record").waitFor();
    assertEquals(await viewer.page.locator("#block-ip").count(), 0);
    await viewer.open("sites");
    await viewer.page.locator("button", { hasText: "View" }).first().click();
    assertEquals(await viewer.page.locator("#edit-name").isDisabled(), true);
    ok(viewer.problems.length === 0, viewer.problems.join("\n"));
    await viewer.close();
    assertEquals(server.dataPlane.sites.list().map((s) => s.id), [siteId]);
  });

  await t.step(
    "every page in both languages: labelled controls, no errors, screenshots",
    async () => {
      for (const language of ["en-US", "zh-CN"]) {
        const p = await kit.signIn(ADMIN, language);
        for (const page of PAGES) {
          await p.open(page.id);
          await p.page.locator("main .page").waitFor();
          for (let i = 0; i < 300 && !(await p.page.evaluate(LOADED)); i++) {
            await p.page.waitForTimeout(50);
          }
          await p.page.waitForTimeout(200);
          assertEquals(await unlabelled(p.page), [], `${page.id} in ${language}`);
          assertEquals(await unnamed(p.page), [], `${page.id} in ${language}: names`);
          await p.screenshot(`${page.id}.${language}`);
        }
        ok(p.problems.length === 0, p.problems.join("\n"));
        await p.close();
      }
      ok(admin.problems.length === 0, admin.problems.join("\n"));
    },
  );
});
