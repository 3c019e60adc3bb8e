/**
 * The attack log as the operator's main tool, in a real headless chromium (issue #36): the
 * default view lists the attacks (passed traffic on request) with the request line and its query,
 * every kind of block carries the dashboard's class, the filters are pickers and free text, a
 * trace id opens in any copied form, the detail names what decided (the IP-list entry by its
 * network and note) with the payload marked and never injected, and only the actions that fit
 * are offered: an exception for an engine finding, disabling a custom rule, blocking an address
 * that is not blocked yet, with a warning first for a loopback one.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { BLOCK_KINDS, blockEveryKind } from "../_helpers/attack_log.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import {
  ADMIN,
  type ConsolePage,
  evaluateUntil,
  settle,
  startConsoleKit,
} from "../_helpers/console.ts";
import { callJson, login } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const UNION = "/search?q=1%20union%20select%20password%20from%20users";
const XSS = "/find?name=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E";

/** The list's rows as { trace, request, client, action, class } (none for the empty note). */
const ROWS = `[...document.querySelectorAll("main table tbody tr")]
  .filter((tr) => tr.cells.length >= 8)
  .map((tr) => ({
    trace: tr.cells[7].querySelector("a").getAttribute("href").split("/").pop(),
    request: tr.cells[2].textContent.trim(),
    client: tr.cells[3].textContent.trim(),
    action: tr.cells[4].textContent.trim(),
    class: tr.cells[5].textContent.trim(),
  }))`;

interface Row {
  trace: string;
  request: string;
  client: string;
  action: string;
  class: string;
}

function rowsWhen(p: ConsolePage, want: (rows: Row[]) => boolean): Promise<Row[]> {
  return evaluateUntil(p, ROWS, want, "the attack log");
}

Deno.test({
  name:
    "the attack log shows, filters and explains every kind of block in a real browser (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  addSite(server, up.url);
  const api = await login(server, ADMIN.username, ADMIN.password);
  const every = await blockEveryKind(server);
  const passed = await hit(server, "/catalogue?page=2", { ip: "192.0.2.1" });
  const xss = await hit(server, XSS, { ip: "192.0.2.70" });
  const local = await hit(server, UNION, { ip: "127.0.0.1" });
  assertEquals([passed.status, xss.status, local.status], [200, 403, 403]);
  const admin = await kit.signIn(ADMIN);
  const page = admin.page;
  const apply = () => page.locator("#apply-filters").click();

  await t.step(
    "the default view lists attacks with their query; All traffic adds the passed",
    async () => {
      await admin.open("logs");
      const rows = await rowsWhen(admin, (r) => r.some((x) => x.trace === local.traceId));
      ok(rows.every((r) => r.action !== "passed"), JSON.stringify(rows.map((r) => r.action)));
      const engine = rows.find((r) => r.trace === every.blocked.engine.traceId)!;
      assertEquals(engine.request, `GET shop.test${UNION}`, "the request line keeps its query");
      assertEquals(
        rows.find((r) => r.trace === every.blocked.rate_limit.traceId)?.action,
        "rate-limited",
      );
      assertEquals(rows.find((r) => r.trace === every.challenged.traceId)?.action, "challenged");
      await page.locator("#filter-action").selectOption("all");
      await apply();
      const all = await rowsWhen(admin, (r) => r.some((x) => x.trace === passed.traceId));
      assertEquals(
        all.find((r) => r.trace === passed.traceId)?.request,
        "GET shop.test/catalogue?page=2",
      );
      assertMatch(page.url(), /action=all/);
      await admin.screenshot("attack-log-all-traffic");
    },
  );

  await t.step(
    "every kind of block has the dashboard's class; the class picker filters by it",
    async () => {
      await page.locator("button", { hasText: "Reset" }).click();
      const rows = await rowsWhen(
        admin,
        (r) => r.some((x) => x.trace === every.blocked.ip_list.traceId),
      );
      for (const [kind, h] of Object.entries(every.blocked)) {
        const cls = BLOCK_KINDS[kind as keyof typeof BLOCK_KINDS];
        assertEquals(
          rows.find((r) => r.trace === h.traceId)?.class,
          cls,
          kind,
        );
      }
      server.monitor.rollups.sample();
      const dash = await callJson(server, "GET", "/api/monitor/summary?period=1h", {
        session: api,
      });
      const classes = dash.body.blocked_classes as Record<string, number>;
      for (const cls of Object.values(BLOCK_KINDS)) ok((classes[cls] ?? 0) > 0, cls);

      // The picker offers the known classes, grouped; choosing one lists only its records.
      const options = await page.locator("#filter-class option").allTextContents();
      ok(options.includes("sqli") && options.includes("IP list (ip_list)"), options.join("|"));
      await page.locator("#filter-class").selectOption("ip_list");
      await apply();
      const ip = await rowsWhen(admin, (r) => r.length === 1);
      assertEquals([ip[0]!.trace, ip[0]!.class], [every.blocked.ip_list.traceId, "ip_list"]);
      // A link with the class in another case (as typed somewhere) answers, not a 400.
      await page.goto(`${server.managementUrl}/console/logs?class=SQLi`);
      const sqli = await rowsWhen(admin, (r) => r.length === 2);
      ok(sqli.every((r) => r.class === "sqli"), JSON.stringify(sqli));
      assertEquals(await page.locator(".error-box").count(), 0);
      assertEquals(await page.locator("#filter-class").inputValue(), "sqli", "the picker shows it");
      await page.locator("button", { hasText: "Reset" }).click();
    },
  );

  await t.step(
    "free text finds a request by its decoded query, and the site picker by site",
    async () => {
      await admin.open("logs");
      await page.locator("#filter-q").fill("union SELECT password");
      await apply();
      const found = await rowsWhen(admin, (r) => r.length === 2);
      assertEquals(
        found.map((r) => r.trace).sort(),
        [every.blocked.engine.traceId, local.traceId].sort(),
      );
      assertMatch(page.url(), /q=union/);
      await page.locator("#filter-q").fill("203.0.113.9");
      await apply();
      const byClient = await rowsWhen(admin, (r) => r.length === 1);
      assertEquals(byClient[0]!.class, "threat_intel");
      const sites = await page.locator("#filter-site option").allTextContents();
      ok(sites.includes("shop"), sites.join("|"));
    },
  );

  await t.step("a trace id opens in whatever form it was copied in", async () => {
    const id = every.blocked.engine.traceId;
    for (
      const form of [
        `traceId: ${id}`,
        `  "${id.toUpperCase()}" `,
        `trace_id=${id}`,
        `https://waf.example/console/logs?trace=${id}`,
      ]
    ) {
      await admin.open("logs");
      await page.locator("#trace-search").fill(form);
      await page.locator("#trace-open").click();
      await page.locator("#record").waitFor();
      assertEquals(page.url(), `${server.managementUrl}/console/logs/${id}`, form);
    }
    await admin.open("logs");
    await page.locator("#trace-search").fill("trace: not-a-trace");
    await page.locator("#trace-open").click();
    await page.locator("#trace-search-hint", { hasText: "No trace id in that text" }).waitFor();
    await page.locator("#trace-search").fill(`traceId: ${"0".repeat(32)}`);
    await page.locator("#trace-open").click();
    await page.locator("#trace-search-hint", { hasText: "No record has this trace id" }).waitFor();
    // A link carrying the id as `?trace=` opens its record too.
    await page.goto(`${server.managementUrl}/console/logs?trace=${id.toUpperCase()}`);
    await page.waitForURL(`${server.managementUrl}/console/logs/${id}`);
    await page.locator("#record").waitFor();
  });

  await t.step(
    "an IP-list block names its entry and offers neither an exception nor a block",
    async () => {
      await admin.open(`logs/${every.blocked.ip_list.traceId}`);
      const decision = page.locator("#decision");
      await decision.locator("#decision-rule").waitFor();
      const text = (await decision.textContent())!;
      assertMatch(text, /Blocked by the IP list/);
      assertMatch(text, /198\.51\.100\.10\/32 on the block list/);
      assertMatch(text, /known scanner/);
      ok(!(await page.locator("#record").textContent())!.includes("No finding"), "no 'No finding'");
      await settle(admin);
      assertEquals(await page.locator("#block-ip").count(), 0);
      assertEquals(await page.locator("#alap-exception").count(), 0);
      await admin.screenshot("attack-log-ip-list-block");
    },
  );

  await t.step("an engine block marks the payload in the request, as text only", async () => {
    await admin.open(`logs/${xss.traceId}`);
    const mark = page.locator("#request-line mark.payload");
    await mark.waitFor();
    assertMatch((await mark.textContent())!, /<img/i);
    assertMatch(
      (await page.locator("#request-line").textContent())!,
      /^GET shop\.test\/find\?name=<img src=x onerror=alert\(1\)>$/,
    );
    assertEquals(await page.locator("#record img").count(), 0, "the payload is not markup");
    assertMatch((await page.locator("#decision").textContent())!, /semantic engine: it found xss/);
    await page.locator("#alap-exception").waitFor();
    await page.locator("#block-ip").waitFor();
    ok(admin.problems.length === 0, admin.problems.join("\n"));
    await admin.screenshot("attack-log-xss-record");
  });

  await t.step("a custom-rule block offers to disable the rule, not an exception", async () => {
    await admin.open(`logs/${every.blocked.custom_rule.traceId}`);
    await page.locator("#decision-rule", { hasText: "no wp-admin" }).waitFor();
    await page.locator("#disable-rule").waitFor();
    assertEquals(await page.locator("#alap-exception").count(), 0);
    const edit = await page.locator("#record-actions a", { hasText: "Edit the rule" })
      .getAttribute("href");
    assertEquals(edit, `/console/custom-rules?edit=${every.ids.customRule}`);
    await page.locator("#disable-rule").click();
    await page.locator(".done", { hasText: 'Rule "no wp-admin" disabled.' }).waitFor();
    const rule = await callJson(server, "GET", `/api/rules/custom/${every.ids.customRule}`, {
      session: api,
    });
    assertEquals([rule.body.enabled, rule.body.pattern], [false, "^/wp-admin"]);
    assertEquals((await hit(server, "/wp-admin/setup.php", { ip: "192.0.2.80" })).status, 200);
    // "Edit the rule" opens that rule's form on the custom-rules page.
    await admin.open(`custom-rules?edit=${every.ids.customRule}`);
    await page.locator("#edit-name").waitFor();
    assertEquals(await page.locator("#edit-name").inputValue(), "no wp-admin");
  });

  await t.step(
    "blocking is offered only for an address not yet blocked; a loopback one warns",
    async () => {
      const feedHit = every.blocked.threat_intel;
      await admin.open(`logs/${feedHit.traceId}`);
      await page.locator("#block-ip").click();
      await page.locator(".done", { hasText: "203.0.113.9 is now on the block list." }).waitFor();
      await page.locator("#already-blocked", { hasText: "already blocked" }).waitFor();
      assertEquals(await page.locator("#block-ip").count(), 0);

      await admin.open(`logs/${local.traceId}`);
      await page.locator("#local-warning", { hasText: "127.0.0.1 is a loopback address" })
        .waitFor();
      await page.locator("#block-ip").click();
      const dialog = page.locator("dialog[open]");
      await dialog.waitFor();
      await dialog.locator("button.danger").click();
      await page.locator("#already-blocked").waitFor();
      const list = await callJson(server, "GET", "/api/protection/ip-lists", { session: api });
      const cidrs = (list.body.items as { cidr: string }[]).map((e) => e.cidr).sort();
      assertEquals(cidrs, ["127.0.0.1", "198.51.100.10/32", "203.0.113.9"]);
      ok(admin.problems.length === 0, admin.problems.join("\n"));
    },
  );

  await t.step("the pickers and the record read in Chinese", async () => {
    const zh = await kit.signIn(ADMIN, "zh-CN");
    await zh.open("logs");
    await settle(zh);
    const actions = await zh.page.locator("#filter-action option").allTextContents();
    assertEquals(actions[0], "攻击：已拦截、已质询、已限速、已记录");
    ok(
      (await zh.page.locator("#filter-class option").allTextContents()).includes(
        "IP 名单 (ip_list)",
      ),
    );
    await zh.open(`logs/${every.blocked.ip_list.traceId}`);
    await zh.page.locator("#decision-rule").waitFor();
    assertMatch(
      (await zh.page.locator("#decision").textContent())!,
      /封禁名单中的 198\.51\.100\.10\/32/,
    );
    await zh.screenshot("attack-log-ip-list-block.zh-CN");
    ok(zh.problems.length === 0, zh.problems.join("\n"));
    await zh.close();
  });
  await admin.close();
});
