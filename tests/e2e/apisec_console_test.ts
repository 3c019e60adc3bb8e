/**
 * The API-security page in real chromium: an administrator imports an OpenAPI document, turns
 * discovery and validation on in the settings, sees traffic in the inventory with its coverage
 * and a shadow endpoint, and tests a request against the imported schema; the data plane blocks
 * the same request; `auth.require_exp` is validated as the settings are saved. A readonly user
 * sees the inventory and cannot change anything.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit, textMatches, unlabelled } from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };
const OPENAPI = `openapi: 3.1.0
info: { title: shop, version: "1" }
paths:
  /api/orders:
    post:
      operationId: createOrder
      requestBody:
        content:
          application/json:
            schema: { type: object, required: [sku], properties: { sku: { type: string } } }
`;

Deno.test({
  name:
    "the API-security page: OpenAPI import, settings, inventory with shadow endpoints, the tester; readonly sees and cannot change (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  addSite(server, up.url);
  await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const admin = await kit.signIn(ADMIN);

  await t.step(
    "an administrator imports a document and enables discovery and validation",
    async () => {
      await admin.open("api-security");
      await textMatches(admin, "#apisec-inventory", /No endpoints discovered yet/);
      await admin.page.locator("#apisec-openapi-text").fill(OPENAPI);
      await admin.page.locator("#apisec-import").click();
      await textMatches(admin, "#apisec-import-result", /createOrder/);
      await textMatches(admin, "#apisec-settings", /Settings/);
      // The whole document is the settings' advanced view.
      await admin.page.locator("#apisec-view-json").click();
      const settings = admin.page.locator("#apisec-config");
      for (let i = 0; i < 50 && !(await settings.inputValue()).includes("createOrder"); i++) {
        await admin.page.waitForTimeout(100);
      }
      const doc = JSON.parse(await settings.inputValue());
      doc.discovery.enabled = true;
      doc.validation.enabled = true;
      await settings.fill(JSON.stringify(doc, null, 2));
      await admin.page.locator("#apisec-save").click();
      await textMatches(admin, "#apisec-settings .done", /Saved/);
      assertEquals(await unlabelled(admin.page), []);
    },
  );

  await t.step("traffic shows in the inventory with coverage and a shadow endpoint", async () => {
    const json = { "content-type": "application/json" };
    const blocked = await hit(server, "/api/orders", {
      init: { method: "POST", headers: json, body: '{"sku": 5}' },
    });
    assertEquals(blocked.status, 403);
    assertEquals(
      (await hit(server, "/api/orders", {
        init: { method: "POST", headers: json, body: '{"sku":"A"}' },
      })).status,
      200,
    );
    await hit(server, "/api/internal/debug");
    await admin.open("dashboard");
    await admin.open("api-security");
    const inventory = await textMatches(admin, "#apisec-inventory", /\/api\/internal\/debug/);
    ok(/schema: createOrder/.test(inventory), inventory);
    ok(/shadow/.test(inventory), inventory);
    await admin.page.locator("#apisec-shadow-only").check();
    await textMatches(admin, "#apisec-inventory", /^(?![\s\S]*\/api\/orders)[\s\S]*1 endpoints/);
    await admin.screenshot("api-security.inventory");
  });

  await t.step("the tester names the schema and the violation", async () => {
    await admin.page.locator("#apisec-test-path").fill("/api/orders");
    await admin.page.locator("#apisec-test-headers").fill('{"content-type": "application/json"}');
    await admin.page.locator("#apisec-test-body").fill('{"sku": 5}');
    await admin.page.locator("#apisec-test").click();
    const result = await textMatches(admin, "#apisec-test-result", /createOrder/);
    ok(/invalid/.test(result) && /body\/sku must be string/.test(result), result);
    assertEquals(admin.problems, []);
  });

  await t.step(
    "the settings carry auth.require_exp, refuse a non-boolean and save false",
    async () => {
      await admin.page.locator("#apisec-view-json").click();
      const settings = admin.page.locator("#apisec-config");
      const doc = JSON.parse(await settings.inputValue());
      assertEquals(doc.auth.require_exp, true, "the default");
      doc.auth.require_exp = "no";
      await settings.fill(JSON.stringify(doc, null, 2));
      await admin.page.locator("#apisec-save").click();
      await textMatches(admin, "#apisec-settings .error-box", /auth\.require_exp/);
      doc.auth.require_exp = false;
      await settings.fill(JSON.stringify(doc, null, 2));
      await admin.page.locator("#apisec-save").click();
      await textMatches(admin, "#apisec-settings .done", /Saved/);
      const stored = await callJson(server, "GET", "/api/apisec/config", {
        session: await login(server, ADMIN.username, ADMIN.password),
      });
      assertEquals((stored.body.auth as { require_exp: boolean }).require_exp, false);
    },
  );

  await t.step("a readonly user sees the inventory and no write control", async () => {
    const viewer = await kit.signIn(VIEWER);
    await viewer.open("api-security");
    await textMatches(viewer, "#apisec-inventory", /\/api\/orders/);
    await textMatches(viewer, "#apisec-settings", /write:protection/);
    assertEquals(await viewer.page.locator("#apisec-save").count(), 0);
    assertEquals(await viewer.page.locator("#apisec-openapi").count(), 0);
    assertEquals(viewer.problems, []);
    await viewer.close();
  });
  await admin.close();
});
