/**
 * API tokens across the running process: creation through the API drives the cleanup worker's
 * deadline, the worker's removals show up in the audit trail and the notifications API, and
 * tokens stop working when the management API is switched off in waf.yaml.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { auditItems, mintToken, TOKENS_ON, withToken } from "../_helpers/api_access.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { startTestServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp.ts";

const MIN = 60_000;
const DAY = 86_400_000;

Deno.test("each token created through the API slides the cleanup by 10 minutes, at most 60 minutes past the batch's first", async () => {
  await using server = await startTestServer({ config: TOKENS_ON });
  await completeSetup(server);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const { cleanup } = server.apiAccess;
  const start = server.clock.now();
  assertEquals(cleanup.schedule.deadline, undefined);
  await mintToken(server, admin, { note: "1", permissions: ["read:sites"] });
  assertEquals(cleanup.schedule.deadline, start + 10 * MIN);
  server.clock.advance(5 * MIN);
  await mintToken(server, admin, { note: "2", permissions: ["read:sites"] });
  assertEquals(cleanup.schedule.deadline, start + 15 * MIN);
  // Refused creations do not count.
  await callJson(server, "POST", "/api/system/api-tokens", {
    session: admin,
    body: { note: "x", permissions: ["read:sites"], non_expiring: true },
  });
  assertEquals(cleanup.schedule.deadline, start + 15 * MIN);
  for (let i = 0; i < 6; i++) {
    server.clock.advance(9 * MIN);
    assertEquals(cleanup.tick(), undefined, "never due while creations keep sliding it");
    await mintToken(server, admin, { note: `more ${i}`, permissions: ["read:sites"] });
  }
  assertEquals(server.clock.now(), start + 59 * MIN);
  assertEquals(cleanup.schedule.deadline, start + 60 * MIN, "bounded by the batch start");
  server.clock.advance(MIN - 1);
  assertEquals(cleanup.tick(), undefined);
  server.clock.advance(1);
  assertEquals(cleanup.tick(), [], "due at the bound although the last creation was 1 minute ago");
  assertEquals(cleanup.schedule.deadline, undefined, "the batch is closed after the run");
});

Deno.test("the cleanup removes expired and 180-day idle tokens; its audit entry and notification are visible through the API", async () => {
  await using server = await startTestServer({ config: TOKENS_ON });
  await completeSetup(server);
  const { cleanup } = server.apiAccess;
  const admin = () => login(server, ADMIN.username, ADMIN.password);
  const session = await admin();
  const expired = await mintToken(server, session, {
    note: "a day",
    permissions: ["read:sites"],
    expires_in_days: 1,
  });
  const idle = await mintToken(server, session, {
    note: "idle",
    permissions: ["read:sites"],
    expires_in_days: 365,
  });
  const used = await mintToken(server, session, {
    note: "used",
    permissions: ["read:sites"],
    expires_in_days: 365,
  });
  assertEquals(cleanup.tick(), undefined, "not due before the deadline");
  server.clock.advance(100 * DAY);
  assertEquals((await withToken(server, used.token, "GET", "/api/sites")).status, 200);
  server.clock.advance(81 * DAY);
  const removed = cleanup.tick();
  assertEquals(removed?.sort(), [expired.item.id, idle.item.id].sort());

  const fresh = await admin();
  const list = await callJson(server, "GET", "/api/system/api-tokens", { session: fresh });
  assertEquals((list.body.items as { id: string }[]).map((i) => i.id), [used.item.id]);
  const [record] = await auditItems(server, fresh, "action=api_token.cleanup");
  assertEquals(record!.actor, { type: "system", id: null, name: "token-cleanup" });
  assertEquals([record!.result, record!.detail.removed], ["success", 2]);
  assertEquals((record!.detail.ids as string[]).sort(), removed!.sort());
  const notes = await callJson(server, "GET", "/api/notifications?unread=true", {
    session: fresh,
  });
  const note = (notes.body.items as { kind: string; title: string; body: string }[])[0]!;
  assertEquals([note.kind, note.title], ["api_token.cleanup", "2 API token(s) removed"]);
  ok(note.body.includes(expired.item.id) && note.body.includes(idle.item.id));
  assertEquals(cleanup.tick(), undefined, "the next run waits for the next deadline");
});

Deno.test("tokens stop working while apisec.management_api.enabled is false, and work again when it is back", async () => {
  await using dir = await tempDir();
  let token: string;
  {
    await using server = await startTestServer({ config: TOKENS_ON, dir });
    await completeSetup(server);
    const admin = await login(server, ADMIN.username, ADMIN.password);
    token = (await mintToken(server, admin, { note: "n", permissions: ["read:sites"] })).token;
    assertEquals((await withToken(server, token, "GET", "/api/sites")).status, 200);
  }
  {
    await using server = await startTestServer({ dir });
    const r = await withToken(server, token, "GET", "/api/sites");
    assertEquals(r.status, 401);
  }
  {
    await using server = await startTestServer({ config: TOKENS_ON, dir });
    assertEquals((await withToken(server, token, "GET", "/api/sites")).status, 200);
  }
});
