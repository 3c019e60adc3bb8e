/**
 * The smaller findings of the hostile-load run (issue #22, item 7): secrets in evidence, what
 * marks an upstream unhealthy, and the login's content type.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, call, completeSetup } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { bytes, rawSend } from "../_helpers/raw_socket.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const storedFinding = async (
  s: { dataPlane: { accessLog: { get(t: string): Promise<{ record: string } | undefined> } } },
  trace: string,
) => {
  const row = await s.dataPlane.accessLog.get(trace);
  return row ? JSON.parse(row.record) : undefined;
};

Deno.test("a secret in a query parameter or a JSON field never reaches the finding's evidence", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { level: "strict" });
  const secret = "s3cr3t-VALUE-9f8e7d";
  const attack = `<script>alert(1)</script>${secret}`;
  const viaQuery = await hit(s, `/?token=${encodeURIComponent(attack)}`);
  assertEquals(viaQuery.status, 403);
  const q = await storedFinding(s, viaQuery.traceId);
  ok(q.finding, "the attack is the finding");
  ok(!JSON.stringify(q).includes(secret), `evidence kept the secret: ${q.finding.evidence}`);
  const viaBody = await hit(s, "/api", {
    init: {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: { api_key: attack } }),
    },
  });
  assertEquals(viaBody.status, 403);
  const b = await storedFinding(s, viaBody.traceId);
  ok(!JSON.stringify(b).includes(secret), `evidence kept the secret: ${b.finding?.evidence}`);
  const rawQuery = await hit(s, `/?q=${encodeURIComponent(`' or 1=1-- access_token=${secret}`)}`);
  const r = await storedFinding(s, rawQuery.traceId);
  ok(!r.finding.evidence.includes(secret), `evidence kept the secret: ${r.finding?.evidence}`);
});

Deno.test("an anonymous TRACE does not mark the upstream failed; a 5xx and a refused connection do", async () => {
  let status = 200;
  const ac = new AbortController();
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: ac.signal },
    () => new Response("x", { status }),
  );
  await using s = await startTestServer();
  addSite(s, `http://127.0.0.1:${upstream.addr.port}`);
  const health = () => s.dataPlane.policy.current.sites[0]!.pool.upstreams[0]!.failures;
  const port = Number(new URL(s.dataUrl).port);
  const trace = await rawSend(
    port,
    bytes("TRACE / HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n"),
    false,
  );
  ok(trace.status >= 400, `TRACE answered ${trace.status}`);
  assertEquals(health(), 0, "a TRACE is the client's doing, not the upstream's");
  assertEquals((await hit(s, "/")).status, 200);
  status = 503;
  assertEquals((await hit(s, "/")).status, 503);
  assertEquals(health(), 1, "a 5xx answer counts against the upstream");
  status = 200;
  assertEquals((await hit(s, "/")).status, 200);
  assertEquals(health(), 0);
  ac.abort();
  await upstream.finished;
  assertEquals((await hit(s, "/")).status, 502);
  assertEquals(health(), 1, "a refused connection counts");
});

Deno.test("POST /api/auth/login takes only application/json: a cross-site form's types get 415", async () => {
  await using s = await startTestServer();
  await completeSetup(s);
  const body = JSON.stringify(ADMIN);
  for (
    const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ]
  ) {
    const r = await s.api("/api/auth/login", {
      method: "POST",
      headers: { "content-type": type },
      body,
    });
    assertEquals(r.status, 415, type);
    const err = (await r.json()).error;
    assertEquals(err.code, "UNSUPPORTED_MEDIA_TYPE");
    ok(err.trace_id && err.event_id, "the error object");
    assertEquals(r.headers.get("set-cookie"), null);
  }
  const none = await s.api("/api/auth/login", { method: "POST", body });
  assertEquals(none.status, 415);
  await none.body?.cancel();
  const ok200 = await call(s, "POST", "/api/auth/login", { body: ADMIN });
  assertEquals(ok200.status, 200);
  await ok200.body?.cancel();
});
