/**
 * The console's forms in real chromium: every problem the API finds is shown at once beside its
 * field, in the user's language, with the form field's label in the summary instead of the API's
 * path (`upstreams[0]`); an IP-list entry's expiry is a date-time picker whose local time reaches
 * the API as ISO 8601; the API-security settings are a form for the common settings (discovery,
 * a schema's switch, token checks with a route, a route limit), enforced by the data plane, with
 * the JSON one click away.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit, textMatches, unlabelled } from "../_helpers/console.ts";
import { callJson, login } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import type { ConsolePage } from "../_helpers/console.ts";

/** Opens a new site form and submits four bad fields at once. */
async function submitBadSite(p: ConsolePage): Promise<void> {
  await p.open("sites");
  await p.page.locator("button.new").click();
  await p.page.locator("#edit-name").fill("bad name!");
  await p.page.locator("#edit-hosts").fill("ok.test\nbad host");
  await p.page.locator("#edit-upstreams").fill("ftp://files.example");
  await p.page.locator("#edit-timeouts-connect-ms").fill("0");
  await p.page.locator("form button[type=submit]").click();
  await p.page.locator(".form-problems").waitFor();
}

Deno.test({
  name:
    "the site form shows every problem beside its field, in English and Chinese, and focuses the first (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using kit = await startConsoleKit();
  const { server } = kit;

  await t.step("English: each problem beside its field, the summary names the labels", async () => {
    const admin = await kit.signIn(ADMIN);
    await submitBadSite(admin);
    const { page } = admin;
    assertMatch(
      await textMatches(admin, ".form-problems .error-message", /Check the fields/),
      /Name, Hosts, Upstreams, Upstream connect timeout \(ms\)/,
    );
    await textMatches(admin, "#edit-name-problems", /letters, digits/);
    await textMatches(admin, "#edit-hosts-problems", /^⚠?.*Line 2: expected a host name/);
    await textMatches(admin, "#edit-upstreams-problems", /Line 1: expected an http\(s\) origin/);
    await textMatches(admin, "#edit-timeouts-connect-ms-problems", /At least 1\./);
    const alert = (await page.locator("[role=alert]").allTextContents()).join(" ");
    ok(!/upstreams\[0\]|timeouts\.connect_ms/.test(alert), alert);
    for (const id of ["name", "hosts", "upstreams", "timeouts-connect-ms"]) {
      assertEquals(await page.locator(`#edit-${id}`).getAttribute("aria-invalid"), "true", id);
      assertMatch(
        (await page.locator(`#edit-${id}`).getAttribute("aria-describedby"))!,
        new RegExp(`edit-${id}-problems`),
      );
    }
    assertEquals(await page.evaluate("document.activeElement.id"), "edit-name");
    // Editing a field takes its problem away; the others stay until the next answer.
    await page.locator("#edit-name").fill("shop");
    assertEquals(await page.locator("#edit-name-problems").count(), 0);
    assertEquals(await page.locator("#edit-hosts-problems").count(), 1);
    assertEquals(await unlabelled(page), []);
    await admin.screenshot("site-form-problems.en");
    await page.locator("#edit-hosts").fill("shop.test");
    await page.locator("#edit-upstreams").fill("http://127.0.0.1:9");
    await page.locator("#edit-timeouts-connect-ms").fill("5000");
    await page.locator("form button[type=submit]").click();
    await page.locator("td", { hasText: "shop.test" }).waitFor();
    assertEquals(server.dataPlane.sites.list().map((s) => s.name), ["shop"]);
    assertEquals(admin.problems, []);
    await admin.close();
  });

  await t.step("Chinese: the same problems in Chinese", async () => {
    const zh = await kit.signIn(ADMIN, "zh-CN");
    await submitBadSite(zh);
    await textMatches(zh, ".form-problems .error-message", /请检查下方标出的字段/);
    await textMatches(zh, "#edit-hosts-problems", /第 2 行：应为主机名/);
    await textMatches(zh, "#edit-upstreams-problems", /第 1 行：应为 http\(s\) 源地址/);
    await textMatches(zh, "#edit-timeouts-connect-ms-problems", /至少为 1。/);
    await zh.screenshot("site-form-problems.zh");
    assertEquals(zh.problems, []);
    await zh.close();
  });
});

Deno.test({
  name:
    "an IP-list entry's expiry is a date-time picker; its local time reaches the API as ISO 8601 (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using kit = await startConsoleKit();
  const { server } = kit;
  const admin = await kit.signIn(ADMIN);
  const { page } = admin;
  await admin.open("ip-lists");
  await page.locator("button.new").click();
  assertEquals(await page.locator("#edit-expires-at").getAttribute("type"), "datetime-local");
  await page.locator("#edit-cidr").fill("192.0.2.50");
  await page.locator("#edit-expires-at").fill("2030-01-02T03:04");
  await page.locator("form button[type=submit]").click();
  await page.locator("td.mono", { hasText: "192.0.2.50" }).waitFor();
  const expected = await page.evaluate(`new Date("2030-01-02T03:04").toISOString()`);
  const api = await login(server, ADMIN.username, ADMIN.password);
  const list = await callJson(server, "GET", "/api/protection/ip-lists", { session: api });
  const items = list.body.items as { cidr: string; expires_at: string }[];
  assertEquals(items.map((e) => [e.cidr, e.expires_at]), [["192.0.2.50", expected]]);
  // Editing shows the same local time in the picker.
  await page.locator("tr", { hasText: "192.0.2.50" }).getByRole("button", { name: "Edit" }).click();
  assertEquals(await page.locator("#edit-expires-at").inputValue(), "2030-01-02T03:04");
  assertEquals(await unlabelled(page), []);
  assertEquals(admin.problems, []);
  await admin.close();
});

Deno.test({
  name:
    "API-security settings as a form: discovery, a schema switch, a token route and a route limit, enforced; the JSON stays one click away (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  addSite(server, up.url);
  const api = await login(server, ADMIN.username, ADMIN.password);
  const imported = await callJson(server, "POST", "/api/apisec/openapi?mode=merge", {
    session: api,
    body: JSON.stringify({
      openapi: "3.1.0",
      info: { title: "shop", version: "1" },
      paths: { "/api/orders": { post: { operationId: "createOrder" } } },
    }),
  });
  assertEquals(imported.status, 200, JSON.stringify(imported.body));
  const admin = await kit.signIn(ADMIN);
  const { page } = admin;
  await admin.open("api-security");
  await page.locator("#apisec-form").waitFor();
  const stored = async () =>
    (await callJson(server, "GET", "/api/apisec/config", { session: api })).body as {
      discovery: { enabled: boolean; sample_limit: number };
      validation: { enabled: boolean; schemas: { id: string; enabled: boolean }[] };
      auth: { enabled: boolean; algorithms: string[]; secret_set: boolean; routes: unknown[] };
      rate_limits: { id: string; requests: number; window: string }[];
    };

  await t.step("a bad window is shown beside its field, then the form saves", async () => {
    await page.locator("#apisec-discovery-enabled").check();
    await page.locator("#apisec-discovery-sample-limit").fill("200");
    await page.locator("#apisec-validation-enabled").check();
    await page.locator("#apisec-validation-schemas-0-enabled").uncheck();
    await page.locator("#apisec-rate-limits-add").click();
    await page.locator("#apisec-rate-limits-0-path-pattern").fill("^/login$");
    await page.locator("#apisec-rate-limits-0-requests").fill("2");
    await page.locator("#apisec-rate-limits-0-window").fill("1 minute");
    await page.locator("#apisec-save").click();
    await textMatches(admin, "#apisec-rate-limits-0-window-problems", /expected a duration/);
    assertEquals(
      await page.locator("#apisec-rate-limits-0-window").getAttribute("aria-invalid"),
      "true",
    );
    await textMatches(admin, "#apisec-settings .form-problems", /Check the settings marked below/);
    assertEquals(await unlabelled(page), []);
    await admin.screenshot("api-security-form-problem");
    await page.locator("#apisec-rate-limits-0-window").fill("1m");
    await page.locator("#apisec-save").click();
    await textMatches(admin, "#apisec-settings .done", /Saved/);
    const doc = await stored();
    assertEquals([doc.discovery.enabled, doc.discovery.sample_limit], [true, 200]);
    assertEquals(doc.validation.enabled, true);
    assertEquals(doc.validation.schemas.map((s) => s.enabled), [false]);
    assertEquals(doc.rate_limits.map((l) => [l.id, l.requests, l.window]), [["limit-1", 2, "1m"]]);
  });

  await t.step("the route limit holds on the data plane", async () => {
    const post = { init: { method: "POST" } };
    assertEquals((await hit(server, "/login", post)).status, 200);
    assertEquals((await hit(server, "/login", post)).status, 200);
    assertEquals((await hit(server, "/login", post)).status, 429);
  });

  await t.step("token checks with a route and a write-only secret", async () => {
    await page.locator("#apisec-auth-enabled").check();
    for (const alg of ["RS256", "ES256", "EdDSA"]) {
      await page.locator(`#apisec-auth-algorithms-${alg}`).uncheck();
    }
    await page.locator("#apisec-auth-algorithms-HS256").check();
    await page.locator("#apisec-auth-routes-add").click();
    await page.locator("#apisec-auth-routes-0-path-pattern").fill("^/api/private");
    await page.locator("#apisec-save").click();
    // HS256 without a secret: refused, and said beside the secret.
    await textMatches(admin, "#apisec-auth-secret-problems", /no shared secret is set/);
    await page.locator("#apisec-auth-secret").fill("a-test-secret-of-32-characters-x");
    await page.locator("#apisec-save").click();
    await textMatches(admin, "#apisec-settings .done", /Saved/);
    const doc = await stored();
    assertEquals([doc.auth.enabled, doc.auth.algorithms, doc.auth.secret_set], [
      true,
      ["HS256"],
      true,
    ]);
    assertEquals((await hit(server, "/api/private/x")).status, 401);
    assertEquals((await hit(server, "/public")).status, 200);
  });

  await t.step("the JSON is the advanced view of the same document", async () => {
    await page.locator("#apisec-view-json").click();
    const json = JSON.parse(await page.locator("#apisec-config").inputValue());
    assertEquals(json.rate_limits[0].window, "1m");
    assertEquals(json.auth.routes[0].path_pattern, "^/api/private");
    assertEquals(json.validation.schemas[0].id, "createOrder");
    json.discovery.sample_limit = 300;
    await page.locator("#apisec-config").fill(JSON.stringify(json, null, 2));
    await page.locator("#apisec-view-form").click();
    assertEquals(await page.locator("#apisec-discovery-sample-limit").inputValue(), "300");
    await admin.screenshot("api-security-form");
    assertEquals(admin.problems, []);
  });
  await admin.close();
});
