/**
 * The guided first site's API on a real server: the upstream check answers reachable or the step
 * that failed and why, within its bounded timeout, and refuses the WAF's own listeners without a
 * connection; the test request goes through the data listener, is blocked before the upstream (the
 * recording upstream is the oracle), is found in the access log by its trace id, and its block page
 * is served to its requester only; in monitor mode it reaches the upstream and is logged.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import {
  ADMIN,
  callJson,
  completeSetup,
  createUser,
  login,
  type Session,
} from "../../_helpers/identity.ts";
import { addSite } from "../../_helpers/protection.ts";
import { startTestServer, type TestServer } from "../../_helpers/server.ts";
import { startUpstream } from "../../_helpers/upstream.ts";
import { TEST_PATH } from "../../../mod/data_plane/onboarding.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };

async function setup(): Promise<{ s: TestServer; admin: Session; viewer: Session }> {
  const s = await startTestServer();
  await completeSetup(s);
  await createUser(s, VIEWER.username, VIEWER.password, "readonly");
  return {
    s,
    admin: await login(s, ADMIN.username, ADMIN.password),
    viewer: await login(s, VIEWER.username, VIEWER.password),
  };
}

/** A port that accepts connections and never answers (closed by the caller). */
function silentListener(): Deno.Listener & { port: number } {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  (async () => {
    for await (const c of l) held.push(c);
  })().catch(() => {});
  const close = l.close.bind(l);
  return Object.assign(l, {
    port: (l.addr as Deno.NetAddr).port,
    close: () => {
      for (const c of held) c.close();
      close();
    },
  });
}

Deno.test("POST /api/onboarding/upstream-check says reachable, or which step failed and why", async () => {
  await using up = startUpstream();
  const { s, admin, viewer } = await setup();
  await using _ = s;
  const check = (body: unknown, session = admin) =>
    callJson(s, "POST", "/api/onboarding/upstream-check", { session, body });

  const ok200 = await check({ upstream: up.url });
  assertEquals(ok200.status, 200);
  assertEquals([ok200.body.reachable, ok200.body.status, ok200.body.upstream], [
    true,
    200,
    up.url,
  ]);
  ok(typeof ok200.body.ms === "number");

  const closed = silentListener();
  const port = closed.port;
  closed.close();
  const refused = await check({ upstream: `http://127.0.0.1:${port}` });
  assertEquals([refused.body.reachable, refused.body.step], [false, "tcp"]);
  assertMatch(String(refused.body.reason), /ECONNREFUSED|refused/i);

  // The WAF's own listeners are refused before any connection (a site in front of itself).
  for (const own of [s.dataUrl, s.managementUrl]) {
    const self = await check({ upstream: own });
    assertEquals([self.body.reachable, self.body.step, self.body.reason], [
      false,
      "policy",
      "own_listener",
    ], own);
  }

  // What a site's upstreams refuse is refused here too, each problem named.
  const bad = await check({ upstream: "ftp://files.example", timeout_ms: 60_000 });
  assertEquals(bad.status, 400);
  const problems = (bad.body.error as { problems: { field: string; code: string }[] }).problems;
  assertEquals(problems.map((p) => [p.field, p.code]), [
    ["upstream", "custom"],
    ["timeout_ms", "too_big"],
  ]);

  assertEquals((await check({ upstream: up.url }, viewer)).status, 403);
});

Deno.test("the upstream check is bounded: a port that never answers fails at its timeout", async () => {
  const { s, admin } = await setup();
  await using _ = s;
  const silent = silentListener();
  try {
    const started = performance.now();
    const r = await callJson(s, "POST", "/api/onboarding/upstream-check", {
      session: admin,
      body: { upstream: `http://127.0.0.1:${silent.port}`, timeout_ms: 300 },
    });
    assertEquals([r.body.reachable, r.body.step], [false, "http"]);
    assertMatch(String(r.body.reason), /timed out after 300 ms/);
    ok(performance.now() - started < 5_000, "answered long before the default timeouts");
  } finally {
    silent.close();
  }
});

Deno.test("POST /api/onboarding/test-request is blocked before the upstream, logged and its page kept for its requester", async () => {
  await using up = startUpstream();
  const { s, admin, viewer } = await setup();
  await using _ = s;
  await createUser(s, "second", "Harbor-Quill-58", "admin");
  const second = await login(s, "second", "Harbor-Quill-58");
  const site = addSite(s, up.url, { hosts: ["*.shop.test"] });

  const r = await callJson(s, "POST", "/api/onboarding/test-request", {
    session: admin,
    body: { site_id: site.id },
  });
  assertEquals(r.status, 200);
  const b = r.body as Record<string, unknown>;
  assertEquals([b.status, b.blocked, b.action, b.attack_class], [403, true, "block", "sqli"]);
  assertEquals([b.host, b.method, b.path], ["waf-test.shop.test", "GET", TEST_PATH]);
  assertMatch(String(b.trace_id), /^[0-9a-f]{32}$/);
  assertEquals(b.url, s.dataUrl + TEST_PATH);
  assertEquals(b.curl, `curl -s -i -H 'Host: waf-test.shop.test' '${s.dataUrl}${TEST_PATH}'`);
  assertEquals(up.seen.length, 0, "the upstream never saw the test attack");

  const record = await callJson(s, "GET", `/api/logs/${b.trace_id}`, { session: admin });
  assertEquals(record.status, 200);

  const pagePath = `/api/onboarding/pages/${b.page_id}`;
  const page = await s.api(pagePath, { headers: { cookie: admin.cookie } });
  assertEquals(page.status, 200);
  assertMatch(page.headers.get("content-security-policy") ?? "", /sandbox/);
  const text = await page.text();
  ok(text.includes(String(b.trace_id)), "the block page shows the trace id");
  const other = await s.api(pagePath, { headers: { cookie: second.cookie } });
  await other.body?.cancel();
  assertEquals(other.status, 404, "another principal's page is not served");

  const refused = await callJson(s, "POST", "/api/onboarding/test-request", {
    session: viewer,
    body: { site_id: site.id },
  });
  assertEquals(refused.status, 403);
  const missing = await callJson(s, "POST", "/api/onboarding/test-request", {
    session: admin,
    body: { site_id: "no-such-site" },
  });
  assertEquals(missing.status, 404);
});

Deno.test("in monitor mode the test request reaches the upstream and is logged, not blocked", async () => {
  await using up = startUpstream();
  const { s, admin } = await setup();
  await using _ = s;
  const site = addSite(s, up.url, { mode: "monitor" });
  const r = await callJson(s, "POST", "/api/onboarding/test-request", {
    session: admin,
    body: { site_id: site.id },
  });
  const b = r.body as Record<string, unknown>;
  assertEquals([b.status, b.blocked, b.action, b.page_id], [200, false, "log", null]);
  assertEquals(up.seen.map((e) => [e.path, e.query, e.headers["host"]]), [
    ["/", "?waf_test=1%20union%20select%20password%20from%20users", "shop.test"],
  ]);
});
