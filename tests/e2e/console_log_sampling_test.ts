/**
 * The dashboard's access-log pipeline in a real headless chromium, once the queue has sampled:
 * the passed records left out, per site, beside the verdicts dropped (none).
 */
import { assertEquals } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit } from "../_helpers/console.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

Deno.test({
  name: "the dashboard shows the passed records sampled out, by site (needs chromium)",
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
  assertEquals(admin.problems, []);
});
