import { assertEquals, ok } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createEventLog } from "../../../mod/core/event_log.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import type { AccessRecord } from "../../../mod/access_log/record.ts";
import { isEventRecord, recordEvents } from "../../../mod/data_plane/record_events.ts";

const base = {
  trace_id: "a".repeat(32),
  time: 0,
  site_id: "s1",
  site: "shop",
  client_ip: "203.0.113.9",
  peer_ip: "203.0.113.9",
  proto: "http",
  method: "GET",
  host: "shop.test",
  path: "/x",
  query: "",
  user_agent: null,
  status: 200,
  action: "pass",
  chain: [{ check: "site", result: "shop", us: 1 }],
  finding: null,
  findings: 0,
  upstream: "http://127.0.0.1:1",
  bytes_in: null,
  bytes_out: null,
  latency_us: { total: 1, waf: 1, upstream: null },
} as unknown as AccessRecord;

Deno.test("blocks and upstream failures become runtime-log lines; passes do not", () => {
  const logger = createMemoryLogger();
  const observe = recordEvents(createEventLog({ logger, clock: new FakeClock(0) }));
  observe(base);
  assertEquals(logger.lines.length, 0);
  observe({
    ...base,
    action: "block",
    status: 403,
    chain: [...base.chain, { check: "ip_list", result: "block", us: 1, rule: "ip_7" }],
  } as AccessRecord);
  observe({
    ...base,
    status: 504,
    chain: [...base.chain, { check: "upstream", result: "timeout", us: 1 }],
  } as AccessRecord);
  assertEquals(logger.lines.length, 2);
  ok(logger.lines[0]!.includes("INFO  request blocked"), logger.lines[0]);
  ok(logger.lines[0]!.includes("check=ip_list") && logger.lines[0]!.includes("rule=ip_7"));
  ok(
    logger.lines[1]!.includes("INFO  upstream failed") &&
      logger.lines[1]!.includes("result=timeout"),
  );
});

Deno.test("a worker passes whole only the records the events and the realtime feed look at", () => {
  const upstream = (result: string) =>
    ({ ...base, chain: [...base.chain, { check: "upstream", result, us: 9 }] }) as AccessRecord;
  assertEquals(isEventRecord(base), false);
  assertEquals(isEventRecord(upstream("ok")), false);
  assertEquals(isEventRecord({ ...base, action: "log" }), false);
  assertEquals(isEventRecord({ ...base, action: "block", status: 403 }), true);
  assertEquals(isEventRecord({ ...base, action: "challenge" }), true);
  for (const r of ["timeout", "unreachable", "invalid"]) {
    assertEquals(isEventRecord(upstream(r)), true);
  }
});
