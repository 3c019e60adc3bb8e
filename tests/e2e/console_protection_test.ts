/**
 * The protection pages' main paths in a real headless chromium (issue #21: "IP lists, ACL rules,
 * custom rules, rate limit, bot policies, threat feeds (with sync now), edge settings, block
 * pages (template choice, custom HTML upload, revert)"): each change is made through the page's
 * form and then checked where it matters, on a request through the data plane.
 */
import { Buffer } from "node:buffer";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ADMIN, type ConsolePage, settle, startConsoleKit } from "../_helpers/console.ts";
import { callJson, login } from "../_helpers/identity.ts";
import { localServer } from "../_helpers/local_server.ts";
import { hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { waitFor } from "../_helpers/wait.ts";
import type { FeedStatus } from "../../mod/protection/threat_feeds.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const UNION = "/search?q=1%20union%20select%20password%20from%20users";

/** Opens the page's "New" form, fills `fields` (`#edit-<id>`: text, or a select's value). */
async function create(p: ConsolePage, fields: Record<string, string>): Promise<void> {
  await p.page.locator("button.new").click();
  for (const [id, value] of Object.entries(fields)) {
    const control = p.page.locator(`#edit-${id}`);
    if (await control.evaluate((el) => el.tagName === "SELECT")) {
      await control.selectOption(value);
    } else await control.fill(value);
  }
  await p.page.locator(".panel form button[type=submit]").click();
  await p.page.locator(".done", { hasText: "Saved." }).waitFor();
}

/** The table cell that says exactly `text` (a row's hidden delete question names it too). */
const cell = (p: ConsolePage, text: string) =>
  p.page.getByRole("cell", { name: text, exact: true });

/** The last check of a request's chain, as `check:result`. */
const last = (h: { chain: { check: string; result: string }[] }) =>
  `${h.chain.at(-1)?.check}:${h.chain.at(-1)?.result}`;

Deno.test({
  name: "the protection pages change what the data plane does (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  let fetched = 0;
  await using feeds = localServer(() => (fetched++, new Response("# drop\n203.0.113.0/24\n")));
  await using kit = await startConsoleKit();
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  const site = await callJson(server, "POST", "/api/sites", {
    session: api,
    body: {
      name: "shop",
      hosts: ["shop.test"],
      upstreams: [up.url],
      trusted_proxies: ["127.0.0.1/32"],
    },
  });
  assertEquals(site.status, 201);
  const admin = await kit.signIn(ADMIN);

  await t.step("IP lists: an address blocked from the page, then deleted", async () => {
    await admin.open("ip-lists");
    await create(admin, { action: "block", cidr: "192.0.2.50", note: "from the console" });
    const row = admin.page.locator("tr", { hasText: "192.0.2.50" });
    await row.waitFor();
    assertEquals(last(await hit(server, "/", { ip: "192.0.2.50" })), "ip_list:block");
    assertEquals((await hit(server, "/", { ip: "192.0.2.51" })).status, 200);
    await row.locator(".confirm > button.danger").click();
    await row.locator("dialog[open] button.danger").click();
    await row.waitFor({ state: "detached" });
    assertEquals((await hit(server, "/", { ip: "192.0.2.50" })).status, 200);
  });

  await t.step("ACL rules: a path blocked for everyone", async () => {
    await admin.open("acl-rules");
    await create(admin, { name: "no-admin", action: "block", "conditions-path-prefix": "/admin" });
    await cell(admin, "no-admin").waitFor();
    const blocked = await hit(server, "/admin/users", { ip: "192.0.2.60" });
    assertEquals(blocked.status, 403);
    assertMatch(last(blocked), /^acl/);
    assertEquals((await hit(server, "/shop", { ip: "192.0.2.60" })).status, 200);
  });

  await t.step("custom rules: a regex on the path blocks", async () => {
    await admin.open("custom-rules");
    await create(admin, {
      name: "no-secret",
      "target-kind": "path",
      pattern: "^/secret",
      action: "block",
    });
    await cell(admin, "no-secret").waitFor();
    assertEquals((await hit(server, "/secret/plans", { ip: "192.0.2.61" })).status, 403);
    assertEquals((await hit(server, "/public", { ip: "192.0.2.61" })).status, 200);
  });

  await t.step("bot policies: a path where every client is challenged", async () => {
    await admin.open("bot-policies");
    await create(admin, { "path-prefix": "/bots", mode: "all" });
    await cell(admin, "/bots").waitFor();
    assertEquals((await hit(server, "/bots/x", { ip: "192.0.2.62" })).action, "challenge");
    assertEquals((await hit(server, "/", { ip: "192.0.2.62" })).status, 200);
  });

  await t.step("threat feeds: a feed by URL, synced now, looked up and enforced", async () => {
    await admin.open("threat-feeds");
    await create(admin, { name: "drop", url: `${feeds.url}/drop.txt`, action: "block" });
    const row = admin.page.locator("tr", { has: cell(admin, "drop") });
    await row.waitFor();
    // Creating a feed syncs it in the background, and a sync asked for while one runs joins it:
    // let that first sync finish, so the click below must fetch the feed again by itself.
    await waitFor(async () => {
      const list = await callJson(server, "GET", "/api/threat-intel/feeds", { session: api });
      const items = (list.body as { items: { name: string; status: FeedStatus }[] }).items;
      return items.find((f) => f.name === "drop")?.status.last_result === "ok";
    }, "the sync after creating the feed");
    const before = fetched;
    await row.locator("button", { hasText: "Sync now" }).click();
    await waitFor(() => fetched > before, "sync now to fetch the feed");
    await row.locator(".badge", { hasText: "ok" }).waitFor();
    await row.getByRole("cell", { name: "1", exact: true }).waitFor();
    await admin.page.locator("#lookup-ip").fill("203.0.113.9");
    await admin.page.locator("button", { hasText: "Check" }).click();
    await admin.page.locator("[role=status]", { hasText: "203.0.113.9 is listed by: drop" })
      .waitFor();
    assertEquals(last(await hit(server, "/", { ip: "203.0.113.9" })), "threat_intel:block");
  });

  await t.step("edge settings: a response header rule, and the cache purged", async () => {
    await admin.open("edge");
    await create(admin, { op: "set", name: "X-Console", value: "yes" });
    await cell(admin, "x-console").waitFor();
    const r = await hit(server, "/", { ip: "192.0.2.63" });
    assertEquals([r.status, r.headers.get("x-console")], [200, "yes"]);
    await admin.page.locator("button", { hasText: "Purge the cache" }).click();
    await admin.page.locator(".done", { hasText: "Cache purged." }).waitFor();
  });

  await t.step(
    "block pages: a template chosen, a custom page uploaded, then reverted",
    async () => {
      const templates = await callJson(server, "GET", "/api/block-pages/templates", {
        session: api,
      });
      const settings = () =>
        callJson(server, "GET", "/api/block-pages/settings", { session: api }).then((r) => r.body);
      const current = (await settings()).template_id as string;
      const other = (templates.body.items as { id: string }[]).find((x) => x.id !== current)!;
      ok(other, JSON.stringify(templates.body));
      await admin.open("block-pages");
      await settle(admin);
      await admin.page.locator("#template").selectOption(other.id);
      await admin.page.locator("button", { hasText: "Use this template" }).click();
      // The saved choice redraws the panel (keyed by the stored template).
      await admin.page.locator("#template").waitFor();
      await waitFor(
        async () => (await settings()).template_id === other.id,
        "the saved template",
        5_000,
      );
      assertEquals((await settings()).template_id, other.id);
      assertEquals(await admin.page.locator("#template").inputValue(), other.id);

      await admin.page.locator("#custom-file").setInputFiles({
        name: "blocked.html",
        mimeType: "text/html",
        buffer: Buffer.from(
          "<html><body><h1>Uploaded stop page</h1><p>{{trace_id}}</p></body></html>",
        ),
      });
      const customHtml = admin.page.locator("#custom-html");
      // Pasted HTML is code: the browser must not spell-check it (Preact sets the property, so
      // the string "false" would have turned it on).
      assertEquals(await customHtml.getAttribute("spellcheck"), "false");
      // The page reads the file asynchronously (File.text()), so the field fills a moment later.
      await waitFor(
        async () => /Uploaded stop page/.test(await customHtml.inputValue()),
        "the uploaded page in the field",
        10_000,
      );
      assertMatch(await customHtml.inputValue(), /Uploaded stop page/);
      await admin.page.locator("#publish-custom").click();
      await admin.page.locator("#custom-state", { hasText: "The custom page is in use." })
        .waitFor();
      const custom = await hit(server, UNION, { ip: "192.0.2.64" });
      assertEquals(custom.status, 403);
      assertMatch(custom.body, /Uploaded stop page/);
      ok(custom.body.includes(custom.traceId), "the trace id is filled in");

      await admin.page.locator("#revert-custom").click();
      await admin.page.locator("dialog[open] button.danger").click();
      await admin.page.locator("#custom-state", { hasText: "The template is in use." }).waitFor();
      const reverted = await hit(server, UNION, { ip: "192.0.2.64" });
      assertEquals(reverted.status, 403);
      ok(!reverted.body.includes("Uploaded stop page"), "the template is back");
    },
  );

  await t.step("rate limit: the global limit saved from the page answers 429", async () => {
    await admin.open("rate-limit");
    await settle(admin);
    await admin.page.locator("#setting-enabled").check();
    await admin.page.locator("#setting-requests").fill("3");
    await admin.page.locator("#setting-window-seconds").fill("60");
    await admin.page.locator("#setting-burst").fill("0");
    await admin.page.locator("#setting-key").selectOption("ip");
    await admin.page.locator(".setting form button[type=submit]").click();
    await admin.page.locator(".done", { hasText: "Saved." }).waitFor();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      statuses.push((await hit(server, "/", { ip: "192.0.2.65" })).status);
    }
    assertEquals(statuses, [200, 200, 200, 429]);
    assertEquals((await hit(server, "/", { ip: "192.0.2.66" })).status, 200, "per address");
  });

  ok(admin.problems.length === 0, admin.problems.join("\n"));
  await admin.close();
});
