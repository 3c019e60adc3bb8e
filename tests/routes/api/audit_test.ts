import { assertEquals, ok } from "../../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, createUser, login } from "../../_helpers/identity.ts";
import { createTestApp } from "../../_helpers/server.ts";

type Item = { id: number; action: string; result: string; actor: { name: string }; time: string };

Deno.test("GET /api/audit filters by action, result, actor and time and pages with a cursor", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  await completeSetup(server);
  const t0 = server.clock.now();
  server.clock.advance(1000);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  for (let i = 0; i < 5; i++) {
    server.clock.advance(1000);
    // Refused logins aggregate per client and username: five usernames, five records.
    await callJson(server, "POST", "/api/auth/login", {
      body: { username: i === 0 ? "admin" : `nobody${i}`, password: `Wrong-Pass-${i}x` },
    });
  }
  const get = (q: string) => callJson(server, "GET", `/api/audit?${q}`, { session: admin });

  const failures = await get("action=auth.login&result=failure");
  assertEquals(failures.status, 200);
  const items = failures.body.items as Item[];
  ok(items.length >= 3);
  for (const it of items) assertEquals([it.action, it.result], ["auth.login", "failure"]);
  for (let i = 1; i < items.length; i++) ok(items[i - 1]!.id > items[i]!.id, "newest first");

  const byActor = (await get("actor=admin&action=auth.login")).body.items as Item[];
  ok(byActor.length >= 1);
  for (const it of byActor) assertEquals(it.actor.name, "admin");

  const early = (await get(`to=${t0}`)).body.items as Item[];
  assertEquals(early.map((i) => i.action), ["setup.complete"]);
  const late = (await get(`from=${new Date(t0 + 1).toISOString()}`)).body.items as Item[];
  ok(late.every((i) => Date.parse(i.time) > t0));

  const all: number[] = [];
  let cursor: string | null = null;
  do {
    const page: { body: Record<string, unknown> } = await get(
      `limit=2${cursor ? `&cursor=${cursor}` : ""}`,
    );
    const pageItems = page.body.items as Item[];
    ok(pageItems.length <= 2);
    all.push(...pageItems.map((i) => i.id));
    cursor = page.body.next_cursor as string | null;
  } while (cursor);
  const full = ((await get("limit=500")).body.items as Item[]).map((i) => i.id);
  assertEquals(all, full);

  assertEquals((await get("result=maybe")).status, 400);
  assertEquals((await get("from=yesterday")).status, 400);
  assertEquals((await get("limit=0")).status, 400);
});

Deno.test("GET /api/audit needs read:audit", async () => {
  await using server = await createTestApp({
    areas: ["identity"],
    config: { apisec: { permissions: { admin: ["*"], sites: ["read:sites"] } } },
  });
  await completeSetup(server);
  await createUser(server, "siteops", "Glacier-Moth-42", "sites");
  const s = await login(server, "siteops", "Glacier-Moth-42");
  assertEquals((await callJson(server, "GET", "/api/audit", { session: s })).status, 403);
  const denied = server.identity.audit.list({ action: "auth.denied", limit: 10 }).items;
  assertEquals(denied.length, 1);
  assertEquals(denied[0]!.actor.name, "siteops");
  assertEquals(denied[0]!.result, "denied");
});
