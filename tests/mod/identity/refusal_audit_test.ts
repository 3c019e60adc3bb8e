/**
 * The aggregated audit of refused authentications on a real store: one record per client,
 * username and window with a growing count, caps per client and overall, flushes, window
 * roll-over and retention that never touches other records.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createAuditRepo } from "../../../db/audit_repo.ts";
import { createAudit } from "../../../mod/core/audit.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import {
  createRefusalAudit,
  type Refusal,
  REFUSAL_LIMITS,
} from "../../../mod/identity/refusal_audit.ts";

const WINDOW = REFUSAL_LIMITS.windowMs;

async function setup() {
  const store = await testStore();
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const audit = createAudit({ repo: createAuditRepo(store.db), clock });
  const refusals = createRefusalAudit({ audit, clock, transaction: store.transaction });
  const rows = () =>
    store.db.prepare(
      "SELECT action, client_ip, count, retention, detail, trace_id FROM audit_log ORDER BY id",
    ).all().map((r) => ({ ...r, detail: JSON.parse(String(r.detail)) })) as {
      action: string;
      client_ip: string;
      count: number;
      retention: string;
      trace_id: string;
      detail: { username: string; reasons: Record<string, number>; overflow?: string };
    }[];
  return { store, clock, audit, refusals, rows };
}

const login = (clientIp: string, username: string, reason = "wrong_password"): Refusal => ({
  action: "auth.login",
  actor: { type: "anonymous" },
  clientIp,
  username,
  reason,
  traceId: `t-${clientIp}-${username}-${reason}`,
});

Deno.test("refusals of one client and username make one record whose count grows at each flush", async () => {
  const { store, refusals, rows } = await setup();
  await using _ = store;
  refusals.record(login("10.0.0.1", "admin"));
  assertEquals(rows().map((r) => [r.count, r.retention]), [[1, "auth_failure"]], "visible at once");
  for (let i = 0; i < 499; i++) {
    refusals.record(login("10.0.0.1", "admin", i % 2 ? "locked_out" : "wrong_password"));
  }
  assertEquals(rows().length, 1, "no write per refusal");
  assertEquals(rows()[0]!.count, 1, "counted in memory until the flush");
  refusals.flush();
  const [r] = rows();
  assertEquals(r!.count, 500);
  assertEquals(r!.detail.reasons, { wrong_password: 251, locked_out: 249 });
  assertEquals(r!.trace_id, "t-10.0.0.1-admin-wrong_password", "the latest trace id");
  assertEquals(refusals.refusals("10.0.0.1"), 500);
  assertEquals(refusals.refusals("10.0.0.2"), 0);
});

Deno.test("a client's usernames beyond the per-client cap fold into one record with username *", async () => {
  const { store, refusals, rows } = await setup();
  await using _ = store;
  for (let i = 0; i < 1000; i++) refusals.record(login("10.0.0.1", `user${i}`));
  refusals.flush();
  const all = rows();
  assertEquals(all.length, REFUSAL_LIMITS.perClient + 1);
  const overflow = all[all.length - 1]!;
  assertEquals([overflow.detail.username, overflow.detail.overflow], ["*", "client"]);
  assertEquals(all.reduce((n, r) => n + r.count, 0), 1000, "every refusal is counted");
});

Deno.test("clients beyond the total cap fold into one record with client *", async () => {
  const { store, refusals, rows } = await setup();
  await using _ = store;
  for (let i = 0; i < 2000; i++) {
    refusals.record(login(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, "admin"));
  }
  refusals.flush();
  const all = rows();
  assertEquals(all.length, REFUSAL_LIMITS.total + 1);
  const last = all[all.length - 1]!;
  assertEquals([last.client_ip, last.detail.overflow, last.count], ["*", "all_clients", 1500]);
});

Deno.test("a new window starts a new record, after writing the old one's count", async () => {
  const { store, clock, refusals, rows } = await setup();
  await using _ = store;
  for (let i = 0; i < 3; i++) refusals.record(login("10.0.0.1", "admin"));
  clock.advance(WINDOW);
  refusals.record(login("10.0.0.1", "admin"));
  assertEquals(rows().map((r) => r.count), [3, 1]);
  assertEquals(refusals.refusals("10.0.0.1"), 1);
});

Deno.test("retention deletes old authentication failures and never another audit record", async () => {
  const { store, clock, audit, refusals, rows } = await setup();
  await using _ = store;
  store.transaction(() =>
    audit.record({ actor: { type: "cli" }, action: "user.create", result: "success" })
  );
  refusals.record(login("10.0.0.1", "admin"));
  clock.advance(REFUSAL_LIMITS.retentionMs - 1);
  assertEquals(refusals.sweep(), 0);
  clock.advance(2);
  assertEquals(refusals.sweep(), 1);
  assertEquals(rows().map((r) => r.action), ["user.create"]);
  ok(store.db.prepare("SELECT COUNT(*) AS n FROM audit_log").get()!.n === 1);
});
