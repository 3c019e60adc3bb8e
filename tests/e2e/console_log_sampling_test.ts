/**
 * The dashboard's access-log pipeline in a real headless chromium, once the queue has sampled:
 * the passed records left out, per site, beside the verdicts dropped (none).
 */
import { assertEquals } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit } from "../_helpers/console.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import { record } from "../_helpers/records.ts";
import { waitFor } from "../_helpers/wait.ts";
import { rowLines } from "../../mod/access_log/lines.ts";
import { toRow } from "../../mod/access_log/record.ts";

Deno.test({
  name:
    "the dashboard shows the passed records sampled out by site, and the blocked ones spilled to disk rather than lost (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using kit = await startConsoleKit({ storage: { access_logs: { queue_size: 100 } } });
  const log = kit.server.dataPlane.accessLog;
  // A worker's batch of passed rows larger than the whole queue (a flood while the writer is
  // behind): left out whole and counted for its sites.
  const passed = (site: string, n: number) => ({
    lines: "",
    count: 0,
    passLines: "",
    passCount: n,
    passSites: [[site, n]] as Array<[string, number]>,
    observed: [],
  });
  assertEquals(log.pushRows(passed("shop", 1200)), false);
  assertEquals(log.pushRows(passed("", 300)), false);
  // A worker's batch of 500 blocked requests' rows, past the verdicts' ceiling (4 x 100) at
  // once: to the spill file, then written to the store from it (not lost).
  const blocked = Array.from({ length: 500 }, () => record({ action: "block", status: 403 }));
  assertEquals(
    log.pushRows({
      lines: blocked.map((r) => rowLines(toRow(r))).join(""),
      count: blocked.length,
      passLines: "",
      passCount: 0,
      passSites: [],
      observed: [],
    }),
    true,
  );
  await waitFor(() => log.stats().spill_rows === 0, "the spilled rows written");
  assertEquals((await log.get(blocked[499]!.trace_id))?.action, "block");
  const admin = await kit.signIn(ADMIN);
  await admin.open("dashboard");
  const page = admin.page;
  await page.locator("#sampled-sites tbody tr").first().waitFor();
  const rows = await Promise.all(
    (await page.locator("#sampled-sites tbody tr").all()).map(async (r) =>
      (await r.locator("td").allTextContents()).map((c) => c.trim())
    ),
  );
  assertEquals(rows, [["shop", "1,200"], ["(no site matched)", "300"]]);
  const facts = await page.locator("#pipeline dt").allTextContents();
  const values = await page.locator("#pipeline dd").allTextContents();
  const fact = (label: string) => values[facts.indexOf(label)];
  assertEquals(fact("Sampled passed records"), "1,500");
  assertEquals(fact("Dropped blocked/challenged records"), "0");
  assertEquals(fact("Spilled to disk (kept, written later)"), "500");
  assertEquals(fact("Waiting in the spill file"), "0");
  assertEquals(fact("Passed records kept now"), "all");
  assertEquals(await page.locator("#dropped-sites").count(), 0, "nothing lost, no table");
  // The dashboard's answer carries the same counts.
  const stats = await page.evaluate(`fetch("/api/logs/stats").then((r) => r.json())`) as {
    sampled_sites: Record<string, number>;
    spilled: number;
    dropped_verdicts: number;
    dropped_sites: Record<string, unknown>;
  };
  assertEquals(stats.sampled_sites, { shop: 1200, "": 300 });
  assertEquals([stats.spilled, stats.dropped_verdicts, stats.dropped_sites], [500, 0, {}]);
  assertEquals(admin.problems, []);
});
