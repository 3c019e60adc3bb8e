/** IP lists, ACL rules, custom regex rules and the global rate limit: API → policy → traffic. */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { addSite, apiFor, hit, steps } from "../_helpers/protection.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

Deno.test("an IP block entry answers with the block page at once, and deleting it lets traffic through", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const created = await api("POST", "/api/protection/ip-lists", {
    action: "block",
    cidr: "203.0.113.0/24",
  });
  assertEquals(created.status, 201);
  const entry = await created.json();
  const blocked = await hit(s, "/", { ip: "203.0.113.7" });
  assertEquals(blocked.status, 403);
  ok(blocked.body.includes(blocked.traceId));
  assertEquals(steps(blocked), ["site:match", `ip_list:block:${entry.id}`]);
  assertEquals(blocked.action, "block");
  assertEquals((await hit(s, "/", { ip: "198.51.100.1" })).status, 200);
  assertEquals((await api("DELETE", `/api/protection/ip-lists/${entry.id}`)).status, 204);
  assertEquals((await hit(s, "/", { ip: "203.0.113.7" })).status, 200);
  assertEquals(up.seen.length, 2);
});

Deno.test("IP entries honour site scope, path prefix, expiry and IPv6, and allow wins over block", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const site = addSite(s, up.url);
  const api = apiFor(s);
  const post = (body: unknown) => api("POST", "/api/protection/ip-lists", body);
  const inAMinute = new Date(s.clock.now() + 60_000).toISOString();
  assertEquals(
    (await post({ action: "block", cidr: "2001:db8::/32", path_prefix: "/admin" })).status,
    201,
  );
  assertEquals(
    (await post({ action: "block", cidr: "192.0.2.0/24", site_id: site.id, expires_at: inAMinute }))
      .status,
    201,
  );
  const allow = await (await post({ action: "allow", cidr: "192.0.2.9" })).json();
  assertEquals((await hit(s, "/admin/x", { ip: "2001:db8::1" })).status, 403);
  assertEquals((await hit(s, "/public", { ip: "2001:db8::1" })).status, 200);
  assertEquals((await hit(s, "/", { ip: "192.0.2.1" })).status, 403);
  const allowed = await hit(s, "/", { ip: "192.0.2.9" });
  assertEquals(allowed.status, 200);
  ok(steps(allowed).includes(`ip_list:allow:${allow.id}`));
  s.clock.advance(61_000);
  assertEquals((await hit(s, "/", { ip: "192.0.2.1" })).status, 200, "the entry expired");
});

Deno.test("IP list writes are validated and audited", async () => {
  await using s = await startTestServer();
  const api = apiFor(s);
  const bad = await api("POST", "/api/protection/ip-lists", {
    action: "block",
    cidr: "10.0.0.0/33",
  });
  assertEquals(bad.status, 400);
  const err = await bad.json();
  assertEquals(err.error.code, "BAD_REQUEST");
  assertMatch(err.error.message, /"cidr"/);
  const noSite = await api("POST", "/api/protection/ip-lists", {
    action: "block",
    cidr: "10.0.0.1",
    site_id: "nope",
  });
  assertEquals(noSite.status, 400);
  const denied = await api("POST", "/api/protection/ip-lists", {
    action: "block",
    cidr: "10.0.0.1",
  }, "read:protection");
  assertEquals(denied.status, 403);
  assertEquals(
    (await api("GET", "/api/protection/ip-lists", undefined, "read:protection")).status,
    200,
  );
  const ok1 = await api(
    "POST",
    "/api/protection/ip-lists",
    { action: "block", cidr: "10.0.0.1" },
    "write:protection",
  );
  const id = (await ok1.json()).id;
  const audit = s.db.prepare(
    "SELECT action, target, result, actor_name FROM audit_log WHERE target = ?",
  ).all(id);
  assertEquals(audit.map((r) => ({ ...r })), [{
    action: "protection.ip_entry.create",
    target: id,
    result: "success",
    actor_name: "tester",
  }]);
});

Deno.test("ACL rules run in order with allow, block, challenge and log, and reach traffic at once", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const post = async (body: unknown) =>
    (await (await api("POST", "/api/protection/acl-rules", body)).json()).id as string;
  const log = await post({ name: "log posts", action: "log", conditions: { methods: ["POST"] } });
  const allow = await post({
    name: "health",
    action: "allow",
    conditions: { path: { prefix: "/health" } },
  });
  const block = await post({
    name: "no exports",
    action: "block",
    conditions: { path: { regex: "\\.(csv|xlsx)$" }, hosts: ["shop.test"] },
  });
  const challenge = await post({
    name: "debug header",
    action: "challenge",
    conditions: { header: { name: "X-Debug" } },
  });
  const countries = await api("POST", "/api/protection/acl-rules", {
    name: "geo",
    action: "block",
    conditions: { countries: ["FR"] },
  });
  assertEquals(countries.status, 400, "no GeoIP database is configured");

  const b = await hit(s, "/db.csv");
  assertEquals([b.status, steps(b).at(-1)], [403, `acl:block:${block}`]);
  const c = await hit(s, "/x", { init: { headers: { "x-debug": "1" } } });
  assertEquals([c.status, c.headers.get("x-waf-challenge"), steps(c).at(-1)], [
    403,
    "1",
    `acl:challenge:${challenge}`,
  ]);
  assertEquals(c.action, "challenge");
  const a = await hit(s, "/health/db.csv", { init: { method: "POST", body: "x" } });
  assertEquals(a.status, 200);
  assertEquals(steps(a).slice(1, 3), [`acl:log:${log}`, `acl:allow:${allow}`]);
  assertEquals((await hit(s, "/index.html")).status, 200);

  const put = await api("PUT", `/api/protection/acl-rules/${block}`, {
    name: "no exports",
    action: "block",
    enabled: false,
    conditions: { path: { regex: "\\.(csv|xlsx)$" } },
  });
  assertEquals(put.status, 200);
  const after = await hit(s, "/db.csv");
  assertEquals(after.status, 200, `the disabled rule stopped blocking at once: ${steps(after)}`);
  const badRe = await api("POST", "/api/protection/acl-rules", {
    name: "x",
    action: "block",
    conditions: { path: { regex: "(?<=a)" } },
  });
  assertEquals(badRe.status, 400);
  assertMatch((await badRe.json()).error.message, /conditions\.path\.regex.*invalid perl operator/);
});

Deno.test("custom regex rules block, log and challenge by priority, and the chain names every match", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const site = addSite(s, up.url);
  const api = apiFor(s);
  const post = async (body: unknown) => {
    const r = await api("POST", "/api/rules/custom", body, "write:rules");
    assertEquals(r.status, 201);
    return (await r.json()).id as string;
  };
  const logRule = await post({
    name: "log token",
    target: { kind: "param", name: "token" },
    pattern: "^[a-f0-9]{8}$",
    action: "log",
    priority: 1,
  });
  const blockRule = await post({
    name: "legacy",
    site_id: site.id,
    target: { kind: "path" },
    pattern: "^/legacy/",
    action: "block",
    priority: 5,
  });
  await post({
    name: "scanner",
    target: { kind: "header", name: "User-Agent" },
    pattern: "(?i)zgrab",
    action: "challenge",
  });
  const bodyRule = await post({
    name: "body marker",
    target: { kind: "body" },
    pattern: "EVIL-MARKER",
    action: "block",
  });

  const r = await hit(s, "/legacy/page?token=deadbeef");
  assertEquals(r.status, 403);
  assertEquals(steps(r).filter((x) => x.startsWith("custom_rule")), [
    `custom_rule:log:${logRule}`,
    `custom_rule:block:${blockRule}`,
  ]);
  const logged = await hit(s, "/ok?token=deadbeef");
  assertEquals(logged.status, 200);
  ok(steps(logged).includes(`custom_rule:log:${logRule}`));
  const posted = await hit(s, "/form", { init: { method: "POST", body: "a=1&b=EVIL-MARKER" } });
  assertEquals([posted.status, steps(posted).at(-1)], [403, `custom_rule:block:${bodyRule}`]);
  const ch = await hit(s, "/", { init: { headers: { "user-agent": "Mozilla/5.0 ZGrab/0.x" } } });
  assertEquals(ch.status, 403);
  assertEquals(ch.action, "challenge");

  const bad = await api("POST", "/api/rules/custom", {
    name: "bad",
    target: { kind: "path" },
    pattern: "(a",
    action: "block",
  }, "write:rules");
  assertEquals(bad.status, 400);
  const err = (await bad.json()).error;
  assertEquals(err.field, "pattern");
  assertEquals(
    err.message,
    'Invalid field "pattern": Invalid regular expression: /(a/u: missing ): (a',
  );
  assertEquals(
    (await api("POST", "/api/rules/custom", { name: "x" }, "write:protection")).status,
    403,
  );
});

Deno.test("a catastrophic custom pattern against a 100 KB parameter cannot stall the proxy", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { inspect_body_bytes: 256 * 1024 });
  const api = apiFor(s);
  await api("POST", "/api/rules/custom", {
    name: "redos",
    target: { kind: "any_param" },
    pattern: "(a+)+$",
    action: "log",
  });
  const r = await hit(s, "/search", {
    init: {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `q=${"a".repeat(100_000)}!`,
    },
  });
  assertEquals(r.status, 200);
  ok(steps(r).includes("custom_rule:pass"), steps(r).join(" "));
});

Deno.test("the global rate limit answers 429 with Retry-After and the trace id, per client", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const put = await api("PUT", "/api/protection/rate-limit", {
    enabled: true,
    requests: 3,
    window_seconds: 10,
    burst: 1,
  });
  assertEquals(put.status, 200);
  assertEquals((await (await api("GET", "/api/protection/rate-limit")).json()).requests, 3);
  for (let i = 0; i < 4; i++) {
    assertEquals((await hit(s, "/", { ip: "192.0.2.50" })).status, 200, `request ${i}`);
  }
  const limited = await hit(s, "/", { ip: "192.0.2.50" });
  assertEquals(limited.status, 429);
  ok(Number(limited.headers.get("retry-after")) >= 1);
  ok(limited.body.includes(limited.traceId));
  assertEquals(steps(limited).at(-1), "rate_limit:limited");
  assertEquals(
    (await hit(s, "/", { ip: "192.0.2.51" })).status,
    200,
    "another client is not limited",
  );
  s.clock.advance(20_000);
  assertEquals((await hit(s, "/", { ip: "192.0.2.50" })).status, 200, "the window slid past");
  await api("PUT", "/api/protection/rate-limit", { enabled: false });
  for (let i = 0; i < 10; i++) assertEquals((await hit(s, "/", { ip: "192.0.2.50" })).status, 200);
});

Deno.test("an ACL country condition matches through the configured GeoIP file", async () => {
  await using up = startUpstream();
  const dir = await Deno.makeTempDir({ prefix: "waf-geo-" });
  await Deno.writeTextFile(
    `${dir}/geo.csv`,
    "# network,country\n203.0.113.0/24,AU\n2001:db8::/32,de\n",
  );
  await using s = await startTestServer({
    config: { protection: { geoip: { file: `${dir}/geo.csv` } } },
  });
  addSite(s, up.url);
  const api = apiFor(s);
  const r = await api("POST", "/api/protection/acl-rules", {
    name: "geo",
    action: "block",
    conditions: { countries: ["au", "DE"] },
  });
  assertEquals(r.status, 201);
  const id = (await r.json()).id;
  assertEquals(steps(await hit(s, "/", { ip: "203.0.113.5" })).at(-1), `acl:block:${id}`);
  assertEquals((await hit(s, "/", { ip: "2001:db8::5" })).status, 403);
  assertEquals((await hit(s, "/", { ip: "198.51.100.5" })).status, 200);
  await Deno.remove(dir, { recursive: true });
});
