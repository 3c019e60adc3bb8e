/**
 * Notifications in a real headless chromium (issue #36): an ALAP block notice reads in the
 * console's language (made from the notice's kind and params, not the server's English), links to
 * the decision's page instead of naming an API call, and opening it lets the decision be approved
 * there; a kind the catalogues do not know shows the stored English text.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ADMIN, type ConsolePage, settle, startConsoleKit } from "../_helpers/console.ts";
import { addSite, apiFor, hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const UNION = "/search?q=1%20union%20select%20password%20from%20users";

/** The inbox's notifications as drawn: [title, body, link or ""]. */
const NOTES = `[...document.querySelectorAll("main .note")].map((n) => [
  n.querySelector(".note-title").textContent.trim(),
  n.querySelector(".note-body").textContent.trim(),
  n.querySelector("a.note-title")?.getAttribute("href") ?? "",
])`;

async function notes(p: ConsolePage, count: number): Promise<string[][]> {
  await p.open("notifications");
  for (let i = 0; i < 100; i++) {
    const drawn = await p.page.evaluate(NOTES) as string[][];
    if (drawn.length === count) return drawn;
    await p.page.waitForTimeout(100);
  }
  throw new Error(`the inbox never showed ${count} notifications`);
}

/**
 * The unknown kind's row, then the ALAP notice's: both are stored in the same millisecond of the
 * kit's clock, so the inbox may list them in either order.
 */
function byKind(rows: string[][]): [string[] | undefined, string[] | undefined] {
  const unknown = rows.find((r) => r[0] === "Stored English title");
  return [unknown, rows.find((r) => r !== unknown)];
}

Deno.test({
  name:
    "notifications read in the console's language and link to the page they are about (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  addSite(server, up.url);
  const api = apiFor(server);
  await api("PUT", "/api/alap/policy", { client_score_threshold: 150 }, "write:protection");
  for (let i = 0; i < 2; i++) {
    assertEquals((await hit(server, UNION, { ip: "192.0.2.66" })).status, 403);
  }
  server.dataPlane.protection.alap.flush();
  const [decision] = (await (await api("GET", "/api/alap/decisions")).json()).items;
  ok(decision);
  server.monitor.notifications.notifyAdmins({
    level: "info",
    kind: "test.unknown_kind",
    title: "Stored English title",
    body: "Stored English body",
  });

  await t.step(
    "in Chinese: the ALAP notice in Chinese, an unknown kind in its English",
    async () => {
      const zh = await kit.signIn(ADMIN, "zh-CN");
      const [unknown, alap] = byKind(await notes(zh, 2));
      assertEquals(unknown, ["Stored English title", "Stored English body", ""]);
      assertEquals(alap![0], "ALAP 建议封禁 192.0.2.66（60 分钟）");
      assertEquals(alap![1], "300 秒内攻击评分 190（站点 shop）。请在 ALAP 页面批准或拒绝。");
      assertEquals(alap![2], `/console/alap/${decision.id}`);
      await zh.screenshot("notifications-zh");

      // The notice is a link: it opens the decision, which can be approved right there.
      await zh.page.locator("a.note-title").click();
      await zh.page.waitForURL(`**/console/alap/${decision.id}`);
      const panel = zh.page.locator("#decision");
      await panel.locator("dd", { hasText: "192.0.2.66" }).waitFor();
      assertMatch((await panel.textContent())!, /300 秒内攻击评分 190/);
      await panel.locator("button.approve").click();
      await panel.locator(".badge", { hasText: "已生效" }).waitFor();
      assertEquals(
        (await (await api("GET", `/api/alap/decisions/${decision.id}`)).json()).status,
        "applied",
      );
      // Following it read it.
      await zh.open("notifications");
      await settle(zh);
      await zh.page.locator("main td", { hasText: "已读" }).first().waitFor();
      ok(zh.problems.length === 0, zh.problems.join("\n"));
      await zh.close();
    },
  );

  await t.step("in English, and the decision's link opens from outside the console", async () => {
    const en = await kit.signIn(ADMIN);
    const [, alap] = byKind(await notes(en, 2));
    assertEquals(alap![0], "ALAP proposes blocking 192.0.2.66 for 60 min");
    assertEquals(
      alap![1],
      "Attack score 190 within 300 s on site shop. Approve or reject it on the ALAP page.",
    );
    // What a channel's message links to: the page loads on its own, with the decision.
    await en.page.goto(`${server.managementUrl}/console/alap/${decision.id}`);
    await en.page.locator("#decision dd", { hasText: "192.0.2.66" }).waitFor();
    await en.page.locator("#decision .badge", { hasText: "applied" }).waitFor();
    ok(en.problems.length === 0, en.problems.join("\n"));
    await en.close();
  });
});
