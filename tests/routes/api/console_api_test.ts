/**
 * The API the console needs, over HTTP on a real server: the session's effective permissions
 * and the user's own preferences, the dashboard summary, upstream health and certificate state,
 * disabling users, the regex tester, the update check, and block-page previews by link.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { errorCode } from "../../_helpers/api_access.ts";
import { ADMIN, callJson, completeSetup, createUser, login } from "../../_helpers/identity.ts";
import { addSite, hit } from "../../_helpers/protection.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { startUpstream } from "../../_helpers/upstream.ts";
import { createCa, createLeaf } from "../../../mod/tls/x509.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { PERMISSIONS } from "../../../mod/identity/permissions.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };
const UNION = "/search?q=1%20union%20select%20password%20from%20users";

async function setup() {
  const s = await startTestServer();
  await completeSetup(s);
  const viewerId = await createUser(s, VIEWER.username, VIEWER.password, "readonly");
  const admin = await login(s, ADMIN.username, ADMIN.password);
  const viewer = await login(s, VIEWER.username, VIEWER.password);
  return Object.assign(s, { admin, viewer, viewerId });
}

Deno.test("GET /api/auth/session lists the effective permissions and the preferences", async () => {
  await using s = await setup();
  const admin = await callJson(s, "GET", "/api/auth/session", { session: s.admin });
  assertEquals(admin.body.effective_permissions, [...PERMISSIONS]);
  assertEquals(admin.body.preferences, { language: null, checklist_dismissed: false });
  const viewer = await callJson(s, "GET", "/api/auth/session", { session: s.viewer });
  const granted = viewer.body.effective_permissions as string[];
  ok(granted.includes("read:sites") && granted.includes("read:logs"));
  ok(!granted.some((p) => !p.startsWith("read:")), granted.join(","));
});

Deno.test("PUT /api/auth/session/preferences stores the user's own language, audited", async () => {
  await using s = await setup();
  const put = (session: typeof s.admin, body: unknown) =>
    callJson(s, "PUT", "/api/auth/session/preferences", { session, body });
  const zh = { language: "zh-CN", checklist_dismissed: false };
  assertEquals((await put(s.viewer, { language: "zh-CN" })).body, zh);
  const again = await callJson(s, "GET", "/api/auth/session", { session: s.viewer });
  assertEquals(again.body.preferences, zh);
  const admin = await callJson(s, "GET", "/api/auth/session", { session: s.admin });
  assertEquals(admin.body.preferences, { language: null, checklist_dismissed: false }, "per user");
  assertEquals(errorCode(await put(s.viewer, { language: "de" })), "BAD_REQUEST");
  assertEquals((await put(s.viewer, { language: null })).body, {
    language: null,
    checklist_dismissed: false,
  });
  const csrf = await callJson(s, "PUT", "/api/auth/session/preferences", {
    session: s.viewer,
    body: { language: "en" },
    csrf: false,
  });
  assertEquals([csrf.status, errorCode(csrf)], [403, "CSRF_INVALID"]);
  const audit = await callJson(s, "GET", "/api/audit?action=user.preferences.update", {
    session: s.admin,
  });
  assertEquals((audit.body.items as unknown[]).length, 2);
});

Deno.test("PUT /api/auth/session/preferences remembers a dismissed checklist per user, keeping the language", async () => {
  await using s = await setup();
  const put = (body: unknown) =>
    callJson(s, "PUT", "/api/auth/session/preferences", { session: s.viewer, body });
  await put({ language: "zh-CN" });
  assertEquals((await put({ checklist_dismissed: true })).body, {
    language: "zh-CN",
    checklist_dismissed: true,
  });
  const again = await callJson(s, "GET", "/api/auth/session", { session: s.viewer });
  assertEquals(again.body.preferences, { language: "zh-CN", checklist_dismissed: true });
  const admin = await callJson(s, "GET", "/api/auth/session", { session: s.admin });
  assertEquals(
    (admin.body.preferences as { checklist_dismissed: boolean }).checklist_dismissed,
    false,
  );
  assertEquals(errorCode(await put({ checklist_dismissed: "yes" })), "BAD_REQUEST");
});

Deno.test("GET /api/logs/summary counts requests, blocks, classes and top targets", async () => {
  await using up = startUpstream();
  await using s = await setup();
  const site = addSite(s, up.url);
  assertEquals((await hit(s, "/", { ip: "192.0.2.1" })).status, 200);
  assertEquals((await hit(s, UNION, { ip: "198.51.100.7" })).status, 403);
  assertEquals((await hit(s, UNION, { ip: "198.51.100.7" })).status, 403);
  const r = await callJson(s, "GET", "/api/logs/summary?buckets=6", { session: s.viewer });
  assertEquals(r.status, 200);
  assertEquals(r.body.totals, { requests: 3, blocked: 2, challenged: 0, logged: 0 });
  const series = r.body.series as { requests: number; blocked: number }[];
  assertEquals(series.length, 6);
  assertEquals(series.reduce((n, p) => n + p.blocked, 0), 2);
  assertEquals(r.body.bucket_ms, 600_000);
  assertEquals(r.body.blocked_by_class, [{ class: "sqli", count: 2 }]);
  assertEquals(r.body.top_sites, [{ site_id: site.id, count: 2 }]);
  assertEquals(r.body.top_paths, [{ path: "/search", count: 2 }]);
  assertEquals(r.body.top_clients, [{ client_ip: "198.51.100.7", count: 2 }]);
  const old = await callJson(s, "GET", "/api/logs/summary?to=2000-01-01T00:00:00Z", {
    session: s.viewer,
  });
  assertEquals((old.body.totals as { requests: number }).requests, 0);
  const wide = await callJson(s, "GET", "/api/logs/summary?minutes=50000", { session: s.viewer });
  assertEquals([wide.status, errorCode(wide)], [400, "BAD_REQUEST"]);
});

Deno.test("GET /api/sites/health and a site's certificate state", async () => {
  await using up = startUpstream();
  await using s = await setup();
  const now = s.clock.now();
  const ca = await createCa("test CA", now, systemRandom);
  const leaf = await createLeaf(
    ca,
    { commonName: "shop.test", dnsNames: ["shop.test"] },
    now,
    systemRandom,
  );
  const created = await callJson(s, "POST", "/api/sites", {
    session: s.admin,
    body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url], tls: leaf },
  });
  assertEquals(created.status, 201);
  const cert = (created.body.tls as { certificate: Record<string, unknown> }).certificate;
  assertEquals([cert.state, cert.names], ["valid", ["shop.test"]]);
  ok(!("key" in (created.body.tls as object)), "the key is never returned");
  const health = await callJson(s, "GET", "/api/sites/health", { session: s.viewer });
  assertEquals(health.status, 200);
  const [item] = health.body.items as {
    name: string;
    upstreams: { origin: string; healthy: boolean }[];
  }[];
  assertEquals([item?.name, item?.upstreams.map((u) => [u.origin, u.healthy])], [
    "shop",
    [[up.url, true]],
  ]);
});

Deno.test("PUT /api/users/{id} disables and enables an account; not oneself", async () => {
  await using s = await setup();
  const me = (await callJson(s, "GET", "/api/auth/session", { session: s.admin })).body
    .user as { id: string };
  const off = await callJson(s, "PUT", `/api/users/${s.viewerId}`, {
    session: s.admin,
    body: { disabled: true },
  });
  assertEquals([off.status, off.body.disabled], [200, true]);
  const ended = await callJson(s, "GET", "/api/sites", { session: s.viewer });
  assertEquals(ended.status, 401, "the disabled account's session ends");
  const relogin = await callJson(s, "POST", "/api/auth/login", { body: VIEWER });
  assertEquals([relogin.status, errorCode(relogin)], [403, "ACCOUNT_DISABLED"]);
  const self = await callJson(s, "PUT", `/api/users/${me.id}`, {
    session: s.admin,
    body: { disabled: true },
  });
  assertEquals([self.status, errorCode(self)], [409, "SELF_DISABLE"]);
  const on = await callJson(s, "PUT", `/api/users/${s.viewerId}`, {
    session: s.admin,
    body: { disabled: false },
  });
  assertEquals([on.status, on.body.disabled], [200, false]);
  assertEquals((await callJson(s, "POST", "/api/auth/login", { body: VIEWER })).status, 200);
});

Deno.test("POST /api/rules/custom/test compiles with RE2 and tries each sample", async () => {
  await using s = await setup();
  const test = (body: unknown) =>
    callJson(s, "POST", "/api/rules/custom/test", { session: s.viewer, body });
  const r = await test({ pattern: "^/admin", samples: ["/admin/x", "/shop"] });
  assertEquals(r.body, {
    valid: true,
    error: null,
    results: [{ sample: "/admin/x", matched: true }, { sample: "/shop", matched: false }],
  });
  const bad = await test({ pattern: "(a)\\1", samples: ["aa"] });
  assertEquals([bad.status, bad.body.valid], [200, false]);
  assertMatch(bad.body.error as string, /./);
});

Deno.test("GET /api/system/updates answers NOT_IMPLEMENTED", async () => {
  await using s = await setup();
  const r = await callJson(s, "GET", "/api/system/updates", { session: s.viewer });
  assertEquals([r.status, errorCode(r)], [501, "NOT_IMPLEMENTED"]);
});

Deno.test("block-page previews by link: sandboxed, script-free, for their maker only", async () => {
  await using s = await setup();
  const html = "<h1>Hi</h1><script>alert(1)</script><p>{{trace_id}}</p>";
  const link = await callJson(s, "POST", "/api/block-pages/preview?as=link", {
    session: s.viewer,
    body: { html },
  });
  assertEquals(link.status, 201);
  const url = link.body.url as string;
  assertMatch(url, /^\/api\/block-pages\/preview\/[0-9a-f]{32}$/);
  const res = await fetch(`${s.managementUrl}${url}`, { headers: { cookie: s.viewer.cookie } });
  const text = await res.text();
  assertEquals(res.status, 200);
  ok(text.includes("<h1>Hi</h1>") && !text.includes("<script"), text);
  assertMatch(res.headers.get("content-security-policy")!, /sandbox/);
  const other = await fetch(`${s.managementUrl}${url}`, { headers: { cookie: s.admin.cookie } });
  await other.body?.cancel();
  assertEquals(other.status, 404, "another user cannot open it");
  const tpl = await fetch(`${s.managementUrl}/api/block-pages/templates/friendly/preview`, {
    headers: { cookie: s.viewer.cookie },
  });
  assertMatch(await tpl.text(), /0123456789abcdef0123456789abcdef/);
  assertMatch(tpl.headers.get("content-security-policy")!, /frame-ancestors 'self'/);
});
