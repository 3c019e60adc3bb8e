/**
 * The console's small layout frictions of issue #36, in a real headless chromium: the dashboard's
 * cards in balanced rows at 1440 and 390 px; "review.Review them" read with its space; on a phone
 * the navigation folds behind a keyboard-operable menu button; a permission list wraps between
 * words, not inside them; rule actions read one word each, translated; the audit log names its
 * targets and lists its details, the raw JSON behind a toggle.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { mintToken, TOKENS_ON } from "../_helpers/api_access.ts";
import { ADMIN, type ConsolePage, settle, startConsoleKit } from "../_helpers/console.ts";
import { createUser, login } from "../_helpers/identity.ts";
import { addSite, apiFor, hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };

/** The dashboard's cards per row (rows by their top edge), and whether each row fills the grid. */
const CARD_ROWS = `(() => {
  const grid = document.querySelector(".cards").getBoundingClientRect();
  const rows = new Map();
  for (const c of document.querySelectorAll(".cards .card")) {
    const r = c.getBoundingClientRect();
    const row = rows.get(Math.round(r.top)) ?? { count: 0, left: Infinity, right: 0 };
    row.count++;
    row.left = Math.min(row.left, r.left);
    row.right = Math.max(row.right, r.right);
    rows.set(Math.round(r.top), row);
  }
  return [...rows.values()].map((r) => ({
    count: r.count,
    full: Math.abs(r.left - grid.left) < 2 && Math.abs(r.right - grid.right) < 2,
  }));
})()`;

/** Words of `selector`'s text that the layout split over two lines. */
const SPLIT_WORDS = (selector: string) =>
  `(() => {
  const el = document.querySelector(${JSON.stringify(selector)});
  const split = [];
  // Every text node under it: the list may be plain text or one element per identifier.
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let text = walker.nextNode(); text; text = walker.nextNode()) {
    for (const m of text.textContent.matchAll(/[^\\s,]+/g)) {
      const range = document.createRange();
      range.setStart(text, m.index);
      range.setEnd(text, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (tops.size > 1) split.push(m[0]);
    }
  }
  return { split, lines: new Set([...el.getClientRects()].map((r) => r.height)).size,
    height: el.getBoundingClientRect().height };
})()`;

/** True while the menu button has the keyboard focus (page code: the CSP refuses eval). */
const TOGGLE_FOCUSED = `document.activeElement?.id === "menu-toggle"`;

async function cardRows(p: ConsolePage): Promise<{ count: number; full: boolean }[]> {
  await p.page.locator("#card-dropped").waitFor();
  return await p.page.evaluate(CARD_ROWS) as { count: number; full: boolean }[];
}

Deno.test({
  name: "the console's layout holds at 1440 and 390 px wide (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit(TOKENS_ON);
  const { server } = kit;
  const session = await login(server, ADMIN.username, ADMIN.password);
  const site = addSite(server, up.url);
  const api = apiFor(server);
  await api("PUT", "/api/alap/policy", { client_score_threshold: 150 });
  for (let i = 0; i < 2; i++) {
    await hit(server, "/search?q=1%20union%20select%20password%20from%20users", {
      ip: "192.0.2.66",
    });
  }
  server.dataPlane.protection.alap.flush();
  const admin = await kit.signIn(ADMIN);

  await t.step("the dashboard's cards fill balanced rows at 1440, 1024 and 390 px", async () => {
    for (const [width, height] of [[1440, 900], [1024, 800], [390, 844]]) {
      await admin.page.setViewportSize({ width: width!, height: height! });
      await admin.open("dashboard");
      await settle(admin);
      const rows = await cardRows(admin);
      const counts = rows.map((r) => r.count);
      assertEquals(counts.reduce((a, b) => a + b), 7, `${width}: ${JSON.stringify(rows)}`);
      ok(Math.max(...counts) - Math.min(...counts) <= 1, `${width}: rows ${counts}`);
      ok(rows.every((r) => r.full), `${width}: a row leaves a gap: ${JSON.stringify(rows)}`);
      await admin.screenshot(`dashboard-${width}`);
    }
    assertEquals(
      (await admin.page.locator("#pending-alap").textContent())?.trim(),
      "1 waiting for review. Review them",
    );
  });

  await t.step(
    "on a phone the navigation folds behind a menu button the keyboard opens",
    async () => {
      await admin.page.setViewportSize(PHONE);
      await admin.open("dashboard");
      const nav = admin.page.locator("nav#nav");
      const toggle = admin.page.locator("#menu-toggle");
      assertEquals(await nav.isVisible(), false, "folded away at first");
      // The page's heading is near the top, not below 27 links.
      const heading = await admin.page.locator("#page-title").boundingBox();
      ok(heading && heading.y < 200, JSON.stringify(heading));
      // Keyboard only: Tab reaches the button (past the dashboard's own controls and checklist,
      // round to the top), Enter opens the menu, grouped as on wide screens.
      for (let i = 0; i < 30; i++) {
        await admin.page.keyboard.press("Tab");
        if (await admin.page.evaluate(TOGGLE_FOCUSED)) break;
      }
      ok(await admin.page.evaluate(TOGGLE_FOCUSED), "Tab reaches the menu button");
      assertEquals(await toggle.getAttribute("aria-expanded"), "false");
      await admin.page.keyboard.press("Enter");
      await nav.waitFor({ state: "visible" });
      assertEquals(await toggle.getAttribute("aria-expanded"), "true");
      assertEquals(await nav.locator(".nav-title").count(), 5);
      await admin.screenshot("menu-open-390");
      // Escape folds it and gives the focus back to the button.
      await admin.page.keyboard.press("Escape");
      await nav.waitFor({ state: "hidden" });
      ok(await admin.page.evaluate(TOGGLE_FOCUSED), "focus back on the button");
      // Choosing a page from the menu opens it and folds the menu.
      await admin.page.keyboard.press("Enter");
      await nav.waitFor({ state: "visible" });
      await admin.page.locator("#nav-audit").focus();
      await admin.page.keyboard.press("Enter");
      await admin.page.waitForURL("**/console/audit");
      await nav.waitFor({ state: "hidden" });
      assertEquals(await toggle.getAttribute("aria-expanded"), "false");
      // On a wide screen there is no button and the navigation stays.
      await admin.page.setViewportSize(DESKTOP);
      assertEquals([await toggle.isVisible(), await nav.isVisible()], [false, true]);
    },
  );

  await t.step("a permission list wraps between words on a phone", async () => {
    await admin.page.setViewportSize(PHONE);
    await admin.open("account");
    const dd = "main dl.facts dd:last-of-type";
    await admin.page.locator(dd, { hasText: "read:" }).waitFor();
    const { split } = await admin.page.evaluate(SPLIT_WORDS(dd)) as { split: string[] };
    assertEquals(split, []);
    await admin.screenshot("account-390");
  });

  await t.step("rule actions read one word each, in the console's language", async () => {
    await admin.page.setViewportSize(DESKTOP);
    const rule = await api("POST", "/api/rules/custom", {
      name: "log tokens",
      target: { kind: "param", name: "token" },
      pattern: "^[a-f0-9]{8}$",
      action: "log",
    }, "write:rules");
    assertEquals(rule.status, 201);
    const acl = await api("POST", "/api/protection/acl-rules", {
      name: "challenge admin",
      action: "challenge",
      conditions: { path: { prefix: "/admin" } },
    }, "write:protection");
    assertEquals(acl.status, 201);
    await admin.open("custom-rules");
    const row = admin.page.locator("tbody tr", { hasText: "log tokens" });
    await row.waitFor();
    assertEquals((await row.locator("td").nth(3).textContent())?.trim(), "Log");
    await admin.page.locator("button.new").click();
    const options = await admin.page.locator("#edit-action option").allTextContents();
    assertEquals(options.map((o) => o.trim()), ["Block", "Log", "Challenge"]);
    await admin.open("acl-rules");
    await admin.page.locator("tr", { hasText: "challenge admin" }).locator(".badge", {
      hasText: /^Challenge$/,
    }).waitFor();

    const zh = await kit.signIn(ADMIN, "zh-CN");
    await zh.open("custom-rules");
    const zhRow = zh.page.locator("tbody tr", { hasText: "log tokens" });
    await zhRow.waitFor();
    assertEquals((await zhRow.locator("td").nth(3).textContent())?.trim(), "记录");
    ok(zh.problems.length === 0, zh.problems.join("\n"));
    await zh.close();
  });

  await t.step("the audit log names its targets and lists a record's detail", async () => {
    const opsId = await createUser(server, "ops", "Juniper-Stone-71", "readonly");
    const minted = await mintToken(server, session, {
      note: "deploy bot",
      permissions: ["read:sites"],
    });
    await admin.open("audit");
    await settle(admin);
    const targets = await admin.page.locator("main td .target-name").allTextContents();
    for (const name of [site.name, "ops", "deploy bot", "log tokens", "challenge admin"]) {
      ok(targets.includes(name), `${name} in ${JSON.stringify(targets)}`);
    }
    // The id stays beside the name.
    const opsRow = admin.page.locator("tr", {
      has: admin.page.locator(".target-name", { hasText: /^ops$/ }),
    }).first();
    assertMatch((await opsRow.locator(".target-id").textContent())!, new RegExp(`user:${opsId}`));
    const tokenRow = admin.page.locator("tr", { hasText: "api_token.create" }).first();
    const facts = await tokenRow.locator("dl.kv").textContent();
    assertMatch(facts!, /permissions\s*read:sites/);
    // The raw JSON waits behind its toggle.
    const raw = tokenRow.locator("details.raw pre");
    assertEquals(await raw.isVisible(), false);
    await tokenRow.locator("details.raw summary").click();
    await raw.waitFor({ state: "visible" });
    assertEquals(JSON.parse((await raw.textContent())!).permissions, ["read:sites"]);
    ok(minted.item.id, "minted");
    await admin.screenshot("audit-1440");
    ok(admin.problems.length === 0, admin.problems.join("\n"));
  });
});
