/**
 * The site's certificate panel in a real chromium against a real server and a real ACME server
 * (pebble on free loopback ports; ignored when either is absent, unless
 * WAF_REQUIRE_SERVICES=1): an administrator orders a certificate from a custom directory and
 * sees its issuer, names, expiry and ACME state; a readonly user sees the state without the form.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit, textMatches, unlabelled } from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { HAS_PEBBLE, startPebble } from "../_helpers/pebble.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };

Deno.test({
  name:
    "the console orders an ACME certificate for a site and shows its state (needs chromium and pebble)",
  ignore: ignoreWithout(HAS_CHROMIUM && HAS_PEBBLE),
}, async () => {
  await using up = startUpstream();
  await using kit = await startConsoleKit({
    server: { data: { https_listen: "127.0.0.1:0" } },
  });
  const { server } = kit;
  await using pebble = await startPebble({ httpPort: Number(new URL(server.dataUrl).port) });
  const api = await login(server, ADMIN.username, ADMIN.password);
  const created = await callJson(server, "POST", "/api/sites", {
    session: api,
    body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url] },
  });
  const id = String((created.body.item as { id: string } | undefined)?.id ?? created.body.id);

  const admin = await kit.signIn(ADMIN);
  await admin.open("sites");
  await admin.page.locator(`#certificate-${id}`).click();
  await textMatches(admin, "#acme-state", /never had an ACME certificate/);
  await admin.page.locator("#acme-directory").selectOption("custom");
  await admin.page.locator("#acme-url").fill(pebble.directory);
  await admin.page.locator("#acme-ca").fill(pebble.ca);
  await admin.page.locator("#acme-email").fill("ops@shop.test");
  assertEquals(await unlabelled(admin.page), []);
  // The server's clock is a test clock: bring it to the CA's time (the certificate starts now).
  server.clock.set(Date.now() + 60_000);
  await admin.page.locator("#acme-request").click();
  await textMatches(admin, "#acme-state", /issued/);
  await textMatches(admin, "#cert-facts", /Pebble Intermediate.*shop\.test/s);
  await textMatches(admin, "main table", /(?<!yet )valid until/);
  await admin.screenshot("site-certificate-acme");
  assertEquals(admin.problems, []);
  await admin.close();

  await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await kit.signIn(VIEWER, "zh-CN");
  await viewer.open("sites");
  await viewer.page.locator(`#certificate-${id}`).click();
  await textMatches(viewer, "#acme-state", /已签发/);
  assertEquals(await viewer.page.locator("#acme-form").count(), 0);
  assertEquals(viewer.problems, []);
  await viewer.close();
});
