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

Deno.test("GET /api/audit names each record's target where a lookup or the record knows it", async () => {
  await using server = await createTestApp();
  await completeSetup(server);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const site = await callJson(server, "POST", "/api/sites", {
    session: admin,
    body: { name: "shop", hosts: ["shop.test"], upstreams: ["http://127.0.0.1:9"] },
  });
  assertEquals(site.status, 201);
  const opsId = await createUser(server, "ops", "Juniper-Stone-71", "readonly");
  const rule = await callJson(server, "POST", "/api/rules/custom", {
    session: admin,
    body: { name: "no admin", target: { kind: "path" }, pattern: "^/admin", action: "block" },
  });
  assertEquals(rule.status, 201);
  const gone = await callJson(server, "POST", "/api/rules/custom", {
    session: admin,
    body: { name: "short-lived", target: { kind: "path" }, pattern: "^/x", action: "log" },
  });
  const goneId = gone.body.id as string;
  assertEquals(
    (await callJson(server, "DELETE", `/api/rules/custom/${goneId}`, { session: admin })).status,
    204,
  );
  const policy = await callJson(server, "PUT", "/api/alap/policy", {
    session: admin,
    body: { enabled: true },
  });
  assertEquals(policy.status, 200);
  const r = await callJson(server, "GET", "/api/audit?limit=100", { session: admin });
  const items = r.body.items as {
    action: string;
    target: string | null;
    target_name: string | null;
    target_type: string | null;
  }[];
  const of = (action: string, target: string) => {
    const it = items.find((i) => i.action === action && i.target === target);
    ok(it, `${action} ${target} in ${JSON.stringify(items.map((i) => i.action))}`);
    return [it.target_name, it.target_type];
  };
  assertEquals(of("site.create", site.body.id as string), ["shop", "site"]);
  assertEquals(of("user.create", `user:${opsId}`), ["ops", "user"]);
  assertEquals(of("rules.custom.create", rule.body.id as string), ["no admin", "custom_rule"]);
  // Deleted since, and the record names nothing itself: no name, the id stays.
  assertEquals(of("rules.custom.delete", goneId), [null, null]);
  // A target that names no single thing has none.
  assertEquals(of("alap.policy.update", "alap_policy"), [null, null]);
});
