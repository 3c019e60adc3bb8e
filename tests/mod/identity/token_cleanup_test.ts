import { assertEquals, ok } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createApiTokensRepo } from "../../../db/api_tokens_repo.ts";
import { createAuditRepo } from "../../../db/audit_repo.ts";
import { createNotificationsRepo } from "../../../db/notifications_repo.ts";
import { createAudit } from "../../../mod/core/audit.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { createNotifications } from "../../../mod/core/notifications.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import {
  BATCH_BOUND_MS,
  CleanupSchedule,
  createTokenCleanup,
  IDLE_LIMIT_MS,
  PERIODIC_MS,
  SLIDE_MS,
} from "../../../mod/identity/token_cleanup.ts";

const MIN = 60_000;
const DAY = 86_400_000;

Deno.test("each creation slides the cleanup deadline by 10 minutes", () => {
  const s = new CleanupSchedule(0);
  s.tokenCreated(1000);
  assertEquals(s.deadline, 1000 + SLIDE_MS);
  s.tokenCreated(1000 + 5 * MIN);
  assertEquals(s.deadline, 1000 + 15 * MIN);
  ok(!s.due(1000 + 14 * MIN));
  ok(s.due(1000 + 15 * MIN));
});

Deno.test("the deadline never passes the batch's first creation plus 60 minutes", () => {
  const s = new CleanupSchedule(0);
  const start = 10 * MIN;
  for (let t = start; t <= start + 70 * MIN; t += 5 * MIN) s.tokenCreated(t);
  assertEquals(s.deadline, start + BATCH_BOUND_MS);
  ok(s.due(start + BATCH_BOUND_MS));
  s.ran(start + BATCH_BOUND_MS);
  assertEquals(s.deadline, undefined);
  s.tokenCreated(start + 80 * MIN);
  assertEquals(s.deadline, start + 90 * MIN, "a new batch starts after a run");
});

Deno.test("without creations the cleanup still runs periodically", () => {
  const s = new CleanupSchedule(0);
  ok(!s.due(PERIODIC_MS - 1));
  ok(s.due(PERIODIC_MS));
});

async function setup() {
  const store = await testStore();
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const repo = createApiTokensRepo(store.db);
  const audit = createAudit({ repo: createAuditRepo(store.db), clock });
  const notifications = createNotifications({
    repo: createNotificationsRepo(store.db),
    clock,
    random: systemRandom,
  });
  const logger = createMemoryLogger();
  const insert = (id: string, created: number, expires: number | null, lastUsed?: number) => {
    repo.insert({
      id,
      secret_hash: `hash-${id}`,
      note: id,
      permissions: "[]",
      created_by: "u1",
      created_at: created,
      expires_at: expires,
    });
    if (lastUsed !== undefined) repo.touch(id, lastUsed, "127.0.0.1");
  };
  return { store, clock, repo, audit, notifications, logger, insert };
}

Deno.test("the cleanup removes expired and 180-day idle tokens, then audits and notifies", async () => {
  const t = await setup();
  await using _ = t.store;
  const now = t.clock.now();
  t.insert("expired", now - 10 * MIN, now - MIN);
  t.insert("idle", now - IDLE_LIMIT_MS - MIN, now + DAY);
  t.insert("used", now - IDLE_LIMIT_MS - MIN, now + DAY, now - MIN);
  t.insert("fresh", now, now + DAY);
  const cleanup = createTokenCleanup({
    repo: t.repo,
    audit: t.audit,
    notifications: t.notifications,
    clock: t.clock,
    logger: t.logger,
    transaction: t.store.transaction,
  });
  cleanup.tokenCreated();
  assertEquals(cleanup.tick(), undefined, "not due yet");
  t.clock.advance(SLIDE_MS);
  const removed = cleanup.tick()!;
  assertEquals(removed.sort(), ["expired", "idle"]);
  assertEquals(t.repo.list().map((r) => r.id).sort(), ["fresh", "used"]);
  const audit = t.audit.list({ limit: 10, action: "api_token.cleanup" }).items;
  assertEquals(audit.length, 1);
  assertEquals((audit[0]!.detail as { removed: number }).removed, 2);
  const notes = t.notifications.list("user:admin", { unread: true, limit: 10 }).items;
  assertEquals(notes.length, 1);
  assertEquals(notes[0]!.kind, "api_token.cleanup");
});

Deno.test("a failing audit or notification does not undo the cleanup", async () => {
  const t = await setup();
  await using _ = t.store;
  const now = t.clock.now();
  t.insert("expired", now - 10 * MIN, now - MIN);
  const cleanup = createTokenCleanup({
    repo: t.repo,
    audit: {
      ...t.audit,
      record: () => {
        throw new Error("audit store unavailable");
      },
    },
    notifications: {
      ...t.notifications,
      notifyAdmins: () => {
        throw new Error("notification store unavailable");
      },
    },
    clock: t.clock,
    logger: t.logger,
    transaction: t.store.transaction,
  });
  assertEquals(cleanup.run(), ["expired"]);
  assertEquals(t.repo.list().length, 0);
  ok(t.logger.lines.some((l) => l.includes("token cleanup audit failed")));
  ok(t.logger.lines.some((l) => l.includes("token cleanup notification failed")));
});
