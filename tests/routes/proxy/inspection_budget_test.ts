/**
 * The inspection budget through the data plane (issue #37, items 4 and 5): an inspection that
 * ends short, because its deadline on the injected clock passed or the custom rules' budget ran
 * out, judges what it read, lets the request on, and flags its access-log record
 * (`inspection: budget`). No sockets: the upstream is an in-process client that records what
 * reached it.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { compileDocs } from "../../_helpers/compiled_protection.ts";
import { siteInput } from "../../_helpers/sites.ts";
import type { AccessRecord } from "../../../mod/access_log/record.ts";
import type { Clock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { compilePolicy, type Policy } from "../../../mod/data_plane/policy.ts";
import { createEdgeCache } from "../../../mod/protection/edge_cache.ts";
import { KIND } from "../../../mod/protection/protection_compile.ts";
import { createProtectionRuntime } from "../../../mod/protection/protection_runtime.ts";
import { createEdgeResponder } from "../../../routes/proxy/edge_response.ts";
import { createProxy } from "../../../routes/proxy/proxy.ts";
import type { UpstreamClient } from "../../../net/upstream/upstream_client.ts";

const MIB = 1 << 20;
const PROSE = "Our committee will select a venue for the meeting; members vote online. ";

/** A clock that moves `step` milliseconds every time it is read. */
class SteppingClock implements Clock {
  #now = 1_700_000_000_000;
  constructor(readonly step: number) {}
  now(): number {
    return this.#now += this.step;
  }
}

async function proxied(
  clock: Clock,
  docs: Record<string, unknown[]>,
  body: string,
): Promise<{ status: number; record: AccessRecord; reached: number }> {
  const site = { ...siteInput(), id: "s", tls: null, created_at: 0, updated_at: 0 };
  const current = { ...compilePolicy([site], clock, 1), protection: compileDocs(docs) };
  const policy: Policy = { current, rebuild: () => current, coalesce: (write) => write() };
  let reached = 0;
  const upstream: UpstreamClient = {
    send() {
      reached++;
      return Promise.resolve(new Response("ok", { headers: { "content-type": "text/plain" } }));
    },
    close() {},
  };
  const records: AccessRecord[] = [];
  const proxy = createProxy({
    policy,
    accessLog: { push: (r) => records.push(r) > 0 },
    clock,
    logger: createMemoryLogger(),
    traceId: () => "0".repeat(32),
    upstream,
    protection: {
      runtime: createProtectionRuntime({ clock, random: systemRandom }),
      clock,
      random: systemRandom,
      edge: createEdgeResponder({ cache: createEdgeCache(), clock }),
    },
  });
  try {
    const res = await proxy.handle(
      new Request("http://shop.test/comment", {
        method: "POST",
        headers: { host: "shop.test", "content-type": "text/plain" },
        body,
      }),
      "192.0.2.1",
      "http",
    );
    await res.body?.cancel();
    return { status: res.status, record: records[0]!, reached };
  } finally {
    proxy.close();
  }
}

const longBody = (tail: string) =>
  PROSE.repeat(Math.ceil(MIB / PROSE.length)).slice(0, MIB - 64) + tail;

Deno.test("an inspection past its deadline judges what it read, passes and is flagged", async () => {
  // Each read of this clock moves it a second: the 5 s deadline passes a few windows in.
  const late = await proxied(new SteppingClock(1000), {}, longBody(" ;cat /etc/passwd"));
  assertEquals([late.status, late.reached, late.record.inspection], [200, 1, "budget"]);
  assertEquals(late.record.chain.at(-2)?.check, "engine");
  assertEquals(late.record.chain.at(-2)?.result, "pass");
  const onTime = await proxied(new SteppingClock(0), {}, longBody(" ;cat /etc/passwd"));
  assertEquals([onTime.status, onTime.reached, onTime.record.inspection], [403, 0, undefined]);
});

/** A body rule of about 900 instructions: one match of it costs most of a 1 MiB request's budget. */
const heavyRule = (name: string, action: string) => ({
  name,
  site_id: null,
  target: { kind: "body" },
  pattern: `.{1,100}${name}`,
  ignore_case: false,
  action,
  priority: 100,
  enabled: true,
});

Deno.test("custom rules that run out of their budget are flagged like the engine's", async () => {
  const docs = { [KIND.custom]: [heavyRule("#", "log"), heavyRule("%", "block")] };
  const r = await proxied(new SteppingClock(0), docs, longBody("%"));
  assertEquals([r.status, r.reached, r.record.inspection], [200, 1, "budget"]);
  const custom = r.record.chain.find((e) => e.check === "custom_rule");
  assertEquals([custom?.result, custom?.rule], ["budget", undefined]);
  // A small request affords both: the second blocks.
  const small = await proxied(new SteppingClock(0), docs, "a short comment %");
  assertEquals([small.status, small.record.inspection], [403, undefined]);
});
