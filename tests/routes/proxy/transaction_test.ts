/**
 * The data-plane transaction without sockets: the order of the request-header checks, and the
 * response phase running on the policy snapshot the request started with. The upstream is an
 * in-process `UpstreamClient`, the access log a real queue with a writer that keeps rows.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { compileDocs, recordingChain } from "../../_helpers/compiled_protection.ts";
import { siteInput } from "../../_helpers/sites.ts";
import { parseIp } from "../../../engine/ip_address.ts";
import { RequestView } from "../../../engine/request_view.ts";
import { createAccessLogRepo } from "../../../db/access_log_repo.ts";
import { lineFormat } from "../../../mod/access_log/lines.ts";
import { openStore } from "../../../db/store.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createAccessLog } from "../../../mod/access_log/access_log.ts";
import { type CompiledPolicy, compilePolicy, type Policy } from "../../../mod/data_plane/policy.ts";
import { createEdgeCache } from "../../../mod/protection/edge_cache.ts";
import { KIND } from "../../../mod/protection/protection_compile.ts";
import { createProtectionRuntime } from "../../../mod/protection/protection_runtime.ts";
import { createEdgeResponder } from "../../../routes/proxy/edge_response.ts";
import { createProxy } from "../../../routes/proxy/proxy.ts";
import { headerChecks } from "../../../routes/proxy/transaction.ts";
import type { UpstreamClient } from "../../../net/upstream/upstream_client.ts";

const clock = new FakeClock(1_700_000_000_000);
const runtime = createProtectionRuntime({ clock, random: systemRandom });

function checkRequest(clientIp: string, path = "/") {
  const view = new RequestView({
    method: "GET",
    path,
    query: "",
    headers: [["user-agent", "curl/8.0"]],
  }, "shop.test");
  return { siteId: "s", clientIp, ip: parseIp(clientIp), view, now: clock.now() };
}

const allow = {
  action: "allow",
  cidr: "10.0.0.0/8",
  site_id: null,
  path_prefix: null,
  expires_at: null,
};
const aclBlockAdmin = {
  name: "admin",
  site_id: null,
  enabled: true,
  action: "block",
  conditions: { path: { prefix: "/admin" } },
};
const botAll = {
  site_id: null,
  path_prefix: "/",
  mode: "all",
  rate_threshold: null,
  verified_bots: false,
  difficulty: 8,
  clearance_minutes: 60,
};

Deno.test("headerChecks(): an IP allow entry skips threat intel, bot and rate limit", () => {
  const p = compileDocs({ [KIND.ip]: [allow], [KIND.bot]: [botAll] });
  const chain = recordingChain();
  assertEquals(headerChecks(runtime, p, checkRequest("10.1.2.3"), chain).kind, "pass");
  assertEquals(chain.entries, [`ip_list:allow:${KIND.ip}_0`]);
  const other = recordingChain();
  assertEquals(headerChecks(runtime, p, checkRequest("192.0.2.1"), other).kind, "challenge");
  assertEquals(other.entries, ["ip_list:pass", `bot:challenge:all:${KIND.bot}_0`]);
});

Deno.test("headerChecks(): an ACL block still stops an allow-listed address", () => {
  const p = compileDocs({ [KIND.ip]: [allow], [KIND.acl]: [aclBlockAdmin] });
  const chain = recordingChain();
  const v = headerChecks(runtime, p, checkRequest("10.1.2.3", "/admin/x"), chain);
  assertEquals(v.kind, "block");
  assertEquals(chain.entries, [`ip_list:allow:${KIND.ip}_0`, `acl:block:${KIND.acl}_0`]);
});

Deno.test("the response phase uses the policy the request started with, not a newer one", async () => {
  const dir = await Deno.makeTempDir();
  const db = openStore(`${dir}/waf.db`, { now: clock.now() });
  const site = { ...siteInput(), id: "s", tls: null, created_at: 0, updated_at: 0 };
  const withRule = (value: string): CompiledPolicy => ({
    ...compilePolicy([site], clock, 1),
    protection: compileDocs({
      [KIND.headerRule]: [{ site_id: null, path_prefix: "/", op: "set", name: "x-rule", value }],
    }),
  });
  let current = withRule("old");
  const policy: Policy = {
    get current() {
      return current;
    },
    rebuild: () => current,
    coalesce: (write) => write(),
  };
  const upstream: UpstreamClient = {
    send() {
      // A management change lands while the request is at the upstream.
      current = withRule("new");
      return Promise.resolve(new Response("ok", { headers: { "content-type": "text/plain" } }));
    },
    close() {},
  };
  const logger = createMemoryLogger();
  const accessLog = createAccessLog(
    { queueSize: 100, batchSize: 10, retentionDays: 1, maxRecords: 100 },
    { repo: createAccessLogRepo(db, lineFormat), clock, logger },
  );
  const proxy = createProxy({
    policy,
    accessLog,
    clock,
    logger,
    traceId: () => "0".repeat(32),
    upstream,
    protection: {
      runtime,
      clock,
      random: systemRandom,
      edge: createEdgeResponder({ cache: createEdgeCache(), clock }),
    },
  });
  const ruleHeader = async () => {
    const res = await proxy.handle(
      new Request("http://shop.test/", { headers: { host: "shop.test" } }),
      "192.0.2.1",
      "http",
    );
    await res.body?.cancel();
    return res.headers.get("x-rule");
  };
  try {
    assertEquals(await ruleHeader(), "old");
    assertEquals(await ruleHeader(), "new");
  } finally {
    proxy.close();
    await accessLog.stop();
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
