/**
 * The scripted first-hour walk (scripts/first_hour_walk.ts) completes in real chromium against a
 * fresh server: from the setup link to the attack log's detail of the test request, in the
 * walk's own actions, with the detail showing the very attack the first-site flow sent. Its time
 * is measured by the script and reported in docs/bench/, never asserted here.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { HAS_CHROMIUM, launchBrowser } from "../_helpers/browser.ts";
import { startTestServer } from "../_helpers/server.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { firstHourWalk } from "../../scripts/first_hour_walk.ts";

Deno.test({
  name:
    "a new operator's walk from the setup link to reading the attack completes (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using up = startUpstream();
  await using server = await startTestServer();
  await using browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const setupLink = (await Deno.readTextFile(`${server.dir}/runtime/setup.url`)).trim();
  const report = await firstHourWalk(page, {
    setupLink,
    upstream: up.url,
    host: "shop.example",
    username: "admin",
    password: "Correct-Horse-9",
  });
  assertEquals(report.actions, 13, report.steps.map((s) => s.action).join("\n"));
  // The server's state is what the walk did: one administrator, one site in front of the upstream.
  assertEquals(server.identity.users.list().map((u) => u.username), ["admin"]);
  const sites = server.dataPlane.sites.list();
  assertEquals(sites.map((s) => [s.hosts, s.upstreams]), [[["shop.example"], [up.url]]]);
  // The detail on screen is the record of the test request the flow sent and showed blocked.
  assertMatch(report.trace, /^[0-9a-f]{32}$/);
  assertEquals(report.detail.trace, report.trace);
  const record = await server.dataPlane.accessLog.get(report.trace);
  ok(record, "the trace is in the attack log");
  const stored = JSON.parse(record!.record);
  assertEquals([stored.action, stored.status], ["block", 403]);
  assertEquals(report.detail.class, stored.finding.class);
  assertEquals(report.detail.evidence, stored.finding.evidence);
  assertEquals(up.seen.filter((r) => r.query.includes("waf_test")), [], "the attack never passed");
  assertEquals(errors, []);
});
