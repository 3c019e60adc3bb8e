/**
 * The sites and logs routes in-process, behind a test guard that grants the permissions named
 * in `x-test-permissions` (the real guard with a real login is covered in
 * tests/e2e/data_plane_test.ts).
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { AppError } from "../../mod/errors.ts";
import { grants } from "../../mod/permissions.ts";
import { createMemoryLogger } from "../../mod/logger.ts";
import { systemRandom } from "../../mod/random.ts";
import { createManagementApp } from "../../routes/management.ts";
import type { Guard } from "../../routes/route.ts";

const testGuard: Guard = (c, access) => {
  if (access.kind !== "permission") return Promise.resolve();
  const held = (c.req.header("x-test-permissions") ?? "").split(",").filter((p) => p !== "");
  if (!grants(held, access.permission)) {
    return Promise.reject(
      new AppError(403, "FORBIDDEN", `Permission "${access.permission}" is required`),
    );
  }
  c.set("principal", { kind: "user", id: "u1", name: "tester", permissions: held });
  return Promise.resolve();
};

async function setup() {
  const s = await startTestServer();
  const app = createManagementApp({
    logger: createMemoryLogger(),
    random: systemRandom,
    routes: s.dataPlane.routes,
    guard: testGuard,
  });
  const call = (method: string, path: string, body?: unknown, permissions = "*") =>
    app.request(path, {
      method,
      headers: { "content-type": "application/json", "x-test-permissions": permissions },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { s, call };
}

Deno.test("POST /api/sites creates a site that serves traffic at once; GET lists it", async () => {
  await using up = startUpstream();
  const { s, call } = await setup();
  await using _ = s;
  const r = await call("POST", "/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: [up.url],
  });
  assertEquals(r.status, 201);
  const site = await r.json();
  assertMatch(site.id, /^[0-9a-f]{24}$/);
  assertEquals(site.mode, "block");
  assertEquals(site.level, "balanced");
  const proxied = await hostFetch(`${s.dataUrl}/`, "shop.test");
  assertEquals(proxied.status, 200);
  await proxied.body?.cancel();
  const list = await (await call("GET", "/api/sites", undefined, "read:sites")).json();
  assertEquals(list.items.map((i: { id: string }) => i.id), [site.id]);
  const one = await call("GET", `/api/sites/${site.id}`, undefined, "read:sites");
  assertEquals((await one.json()).name, "shop");
});

Deno.test("PUT and DELETE /api/sites/{id} change the running data plane without restart", async () => {
  await using up = startUpstream();
  const { s, call } = await setup();
  await using _ = s;
  const site = await (await call("POST", "/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: [up.url],
  })).json();
  const put = await call("PUT", `/api/sites/${site.id}`, {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: [up.url],
    mode: "monitor",
  });
  assertEquals(put.status, 200);
  assertEquals((await put.json()).mode, "monitor");
  const logged = await hostFetch(`${s.dataUrl}/?id=1%27%20or%201=1--`, "shop.test");
  assertEquals(logged.status, 200);
  await logged.body?.cancel();
  const del = await call("DELETE", `/api/sites/${site.id}`);
  assertEquals(del.status, 204);
  const gone = await hostFetch(`${s.dataUrl}/`, "shop.test");
  assertEquals(gone.status, 404);
  await gone.body?.cancel();
  assertEquals((await call("GET", `/api/sites/${site.id}`)).status, 404);
});

Deno.test("a bad site is refused with 400 naming the field", async () => {
  const { s, call } = await setup();
  await using _ = s;
  for (
    const [body, field] of [
      [{ name: "a", hosts: ["a.test"], upstreams: ["not a url"] }, "upstreams[0]"],
      [{ name: "a", hosts: [], upstreams: ["http://127.0.0.1:1"] }, "hosts"],
      [{ name: "a", hosts: ["a.test"], upstreams: ["http://127.0.0.1:1"], mode: "x" }, "mode"],
      [{ hosts: ["a.test"], upstreams: ["http://127.0.0.1:1"] }, "name"],
    ] as const
  ) {
    const r = await call("POST", "/api/sites", body);
    assertEquals(r.status, 400, field);
    const { error } = await r.json();
    assertEquals(error.code, "BAD_REQUEST");
    assertEquals(error.field, field);
  }
});

Deno.test("the site routes declare read:sites and write:sites", async () => {
  const { s, call } = await setup();
  await using _ = s;
  assertEquals((await call("GET", "/api/sites", undefined, "read:logs")).status, 403);
  assertEquals(
    (await call("POST", "/api/sites", { name: "a" }, "read:sites")).status,
    403,
  );
  assertEquals((await call("GET", "/api/sites", undefined, "read:*")).status, 200);
  assertEquals((await call("GET", "/api/logs", undefined, "read:sites")).status, 403);
});

Deno.test("GET /api/logs filters, pages with next_cursor, and finds a block by trace id", async () => {
  await using up = startUpstream();
  const { s, call } = await setup();
  await using _ = s;
  const site = await (await call("POST", "/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: [up.url],
  })).json();
  for (let i = 0; i < 3; i++) {
    const r = await hostFetch(`${s.dataUrl}/page/${i}`, "shop.test");
    await r.body?.cancel();
  }
  const blocked = await hostFetch(`${s.dataUrl}/?q=%3Cscript%3Ealert(1)%3C/script%3E`, "shop.test");
  await blocked.body?.cancel();
  const trace = blocked.headers.get("x-waf-trace-id")!;

  const blocks = await (await call("GET", "/api/logs?action=block", undefined, "read:logs")).json();
  assertEquals(blocks.items.length, 1);
  assertEquals(blocks.items[0].trace_id, trace);
  assertEquals(blocks.next_cursor, null);
  const byClass = await (await call("GET", "/api/logs?class=xss&status=403")).json();
  assertEquals(byClass.items.map((i: { trace_id: string }) => i.trace_id), [trace]);
  const bySite = await (await call("GET", `/api/logs?site=${site.id}&limit=2`)).json();
  assertEquals(bySite.items.length, 2);
  ok(bySite.next_cursor);
  const next =
    await (await call("GET", `/api/logs?site=${site.id}&limit=2&cursor=${bySite.next_cursor}`))
      .json();
  assertEquals(next.items.length, 2);
  assertEquals(next.next_cursor, null);
  const from = new Date(s.clock.now() - 60_000).toISOString();
  const ranged =
    await (await call("GET", `/api/logs?from=${from}&client_ip=127.0.0.1&trace_id=${trace}`))
      .json();
  assertEquals(ranged.items.length, 1);

  const one = await call("GET", `/api/logs/${trace}`, undefined, "read:logs");
  assertEquals(one.status, 200);
  const record = await one.json();
  assertEquals(record.action, "block");
  assertEquals(record.chain.map((c: { check: string }) => c.check), ["site", "engine"]);
  assertEquals(record.chain[1].result, "block");
  assertEquals(record.finding.class, "xss");
  assertEquals((await call("GET", `/api/logs/${"0".repeat(32)}`)).status, 404);
  assertEquals((await call("GET", "/api/logs/nothex")).status, 400);
  const bad = await call("GET", "/api/logs?status=abc");
  assertEquals((await bad.json()).error.field, "status");
  const stats = await (await call("GET", "/api/logs/stats")).json();
  assertEquals(stats.dropped, 0);
  ok(stats.written >= 4);
});
