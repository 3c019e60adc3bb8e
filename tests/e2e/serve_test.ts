import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { startTestServer } from "../_helpers/server.ts";
import { SCHEMA_VERSION } from "../../db/migrations.ts";

const HEX32 = /^[0-9a-f]{32}$/;

Deno.test("serve answers health probes on the management listener", async () => {
  await using s = await startTestServer();
  const health = await fetch(`${s.managementUrl}/health`);
  assertEquals(health.status, 200);
  const body = await health.json();
  assertEquals(body.status, "ok");
  ok(typeof body.version === "string");
  for (
    const [path, key, value] of [
      ["/health/live", "status", "alive"],
      ["/health/ready", "status", "ready"],
      ["/health/cluster", "mode", "standalone"],
    ] as const
  ) {
    const r = await fetch(`${s.managementUrl}${path}`);
    assertEquals(r.status, 200, path);
    assertEquals((await r.json())[key], value, path);
  }
  const cluster = await (await fetch(`${s.managementUrl}/health/cluster`)).json();
  assertEquals(cluster.status, "healthy");
});

Deno.test("the data plane never answers management routes", async () => {
  await using s = await startTestServer();
  for (const path of ["/health", "/health/ready", "/api/setup/status", "/api/users"]) {
    const r = await fetch(`${s.dataUrl}${path}`);
    assertEquals(r.status, 404, path);
    const text = await r.text();
    assertMatch(text, /No site is configured for this host/, path);
    ok(!text.includes('"status"'), path);
  }
});

Deno.test("the data plane shows the no-site page with a trace id", async () => {
  await using s = await startTestServer();
  const r = await fetch(`${s.dataUrl}/anything?x=1`, { headers: { host: "unknown.example" } });
  assertEquals(r.status, 404);
  const trace = r.headers.get("x-waf-trace-id") ?? "";
  assertMatch(trace, HEX32);
  assertEquals(r.headers.get("cache-control"), "no-store");
  assertMatch(await r.text(), new RegExp(`traceId: <code>${trace}</code>`));
  const j = await fetch(`${s.dataUrl}/`, { headers: { accept: "application/json" } });
  const body = await j.json();
  assertEquals(body.code, "NO_SITE");
  assertEquals(body.traceId, j.headers.get("x-waf-trace-id"));
});

Deno.test("serve creates the SQLite store in the data directory", async () => {
  await using s = await startTestServer();
  const info = await Deno.stat(`${s.dir}/waf.db`);
  ok(info.isFile);
  assertEquals(
    (s.db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number }).v,
    SCHEMA_VERSION,
  );
});

Deno.test("an unknown /api path answers 404 with the error object", async () => {
  await using s = await startTestServer();
  const r = await fetch(`${s.managementUrl}/api/nope`);
  assertEquals(r.status, 404);
  const { error } = await r.json();
  assertEquals(error.code, "NOT_FOUND");
  assertMatch(error.trace_id, HEX32);
  assertMatch(error.event_id, HEX32);
  assertEquals(r.headers.get("x-waf-trace-id"), error.trace_id);
  assertEquals(r.headers.get("x-waf-event-id"), error.event_id);
});

Deno.test("a wrong method answers 405 with the error object and Allow", async () => {
  await using s = await startTestServer();
  const r = await fetch(`${s.managementUrl}/health/ready`, { method: "POST" });
  assertEquals(r.status, 405);
  assertEquals(r.headers.get("allow"), "GET");
  const { error } = await r.json();
  assertEquals(error.code, "METHOD_NOT_ALLOWED");
  assertMatch(error.event_id, HEX32);
});

Deno.test("a trailing slash redirects GET and HEAD (308) to the path without it; other methods get a 404 naming it", async () => {
  await using s = await startTestServer();
  for (
    const [path, target] of [
      ["/console/", "/console"],
      ["/health/", "/health"],
      ["/api/logs/?limit=5", "/api/logs?limit=5"],
      ["/login//", "/login"],
    ]
  ) {
    for (const method of ["GET", "HEAD"]) {
      const r = await fetch(`${s.managementUrl}${path}`, { method, redirect: "manual" });
      assertEquals([r.status, r.headers.get("location")], [308, target], `${method} ${path}`);
      await r.body?.cancel();
    }
  }
  const post = await fetch(`${s.managementUrl}/api/sites/`, { method: "POST" });
  assertEquals(post.status, 404);
  const { error } = await post.json();
  assertEquals(error.code, "NOT_FOUND");
  assertMatch(error.message, /"\/api\/sites", without the trailing slash/);
  // Never an off-site redirect, never the old 405 that named the method it refused.
  for (const path of ["//evil.example/", "/nope/"]) {
    const r = await fetch(`${s.managementUrl}${path}`, { redirect: "manual" });
    assertEquals(r.status, 404, path);
    await r.body?.cancel();
  }
  const followed = await fetch(`${s.managementUrl}/health/`);
  assertEquals(followed.status, 200);
  await followed.body?.cancel();
});

Deno.test("ids are fresh per request", async () => {
  await using s = await startTestServer();
  const a = await (await fetch(`${s.managementUrl}/api/x`)).json();
  const b = await (await fetch(`${s.managementUrl}/api/x`)).json();
  ok(a.error.trace_id !== b.error.trace_id);
  ok(a.error.event_id !== b.error.event_id);
});

Deno.test("readiness is 503 while shutting down and in-flight requests finish", async () => {
  const gate = Promise.withResolvers<void>();
  const entered = Promise.withResolvers<void>();
  await using s = await startTestServer({
    deps: {
      dataHandler: async () => {
        entered.resolve();
        await gate.promise;
        return new Response("finished");
      },
    },
  });
  assertEquals((await fetch(`${s.managementUrl}/health/ready`)).status, 200);
  const inflight = fetch(`${s.dataUrl}/slow`);
  await entered.promise;
  const stopping = s.shutdown();
  const ready = await fetch(`${s.managementUrl}/health/ready`);
  assertEquals(ready.status, 503);
  assertEquals((await ready.json()).status, "shutting_down");
  gate.resolve();
  const response = await inflight;
  assertEquals(await response.text(), "finished");
  await stopping;
  let refused = false;
  try {
    await fetch(`${s.dataUrl}/after`);
  } catch {
    refused = true;
  }
  ok(refused, "the data plane stops accepting after shutdown");
});

Deno.test("tls auto serves the management plane over HTTPS with a local CA", async () => {
  await using s = await startTestServer({ config: { server: { management: { tls: "auto" } } } });
  ok(s.managementUrl.startsWith("https://"));
  const ca = await Deno.readTextFile(`${s.dir}/tls/ca.crt`);
  for (const key of ["ca.key", "server.key"]) {
    assertEquals((await Deno.stat(`${s.dir}/tls/${key}`)).mode! & 0o777, 0o600, key);
  }
  const client = Deno.createHttpClient({ caCerts: [ca] });
  const url = s.managementUrl.replace("127.0.0.1", "localhost");
  const r = await fetch(`${url}/health/live`, { client });
  assertEquals(r.status, 200);
  await r.body?.cancel();
  client.close();
});
