/**
 * The sites and logs routes over HTTP on a real server, behind the real guard: first-install
 * setup, a real login (session cookie and CSRF token), and a read-only account for the
 * permission checks.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { hostFetch } from "../../_helpers/data_client.ts";
import {
  ADMIN,
  call,
  completeSetup,
  createUser,
  login,
  type Session,
} from "../../_helpers/identity.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { startUpstream } from "../../_helpers/upstream.ts";

const VIEWER = { username: "viewer", password: "Quiet-Lantern-42" } as const;

/** A server with an admin and a read-only user signed in; `call` uses the admin by default. */
async function setup() {
  const s = await startTestServer();
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  await createUser(s, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(s, VIEWER.username, VIEWER.password);
  const sessions: Record<string, Session> = { admin, viewer };
  const api = (method: string, path: string, body?: unknown, who: "admin" | "viewer" = "admin") =>
    call(s, method, path, { session: sessions[who], body });
  return { s, call: api, admin, viewer };
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
  assertEquals(site.upstream_kind, "generic");
  const proxied = await hostFetch(`${s.dataUrl}/`, "shop.test");
  assertEquals(proxied.status, 200);
  await proxied.body?.cancel();
  const list = await (await call("GET", "/api/sites", undefined, "viewer")).json();
  assertEquals(list.items.map((i: { id: string }) => i.id), [site.id]);
  const one = await call("GET", `/api/sites/${site.id}`, undefined, "viewer");
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
    upstream_kind: "iis",
  });
  assertEquals(put.status, 200);
  const changed = await put.json();
  assertEquals([changed.mode, changed.upstream_kind], ["monitor", "iis"]);
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
      [
        {
          name: "a",
          hosts: ["a.test"],
          upstreams: ["http://127.0.0.1:1"],
          upstream_kind: "tomcat",
        },
        "upstream_kind",
      ],
      [
        {
          name: "a",
          hosts: ["a.test"],
          upstreams: ["http://127.0.0.1:1"],
          oversize_action: "drop",
        },
        "oversize_action",
      ],
    ] as const
  ) {
    const r = await call("POST", "/api/sites", body);
    assertEquals(r.status, 400, field);
    const { error } = await r.json();
    assertEquals(error.code, "BAD_REQUEST");
    assertEquals(error.field, field);
  }
});

Deno.test("oversize_action is stored as sent, and a site without one takes its level's default", async () => {
  const { s, call } = await setup();
  await using _ = s;
  const base = { hosts: ["a.test"], upstreams: ["http://127.0.0.1:1"] };
  const none = await (await call("POST", "/api/sites", { name: "a", ...base })).json();
  assertEquals(none.oversize_action, null);
  const r = await call("PUT", `/api/sites/${none.id}`, {
    name: "a",
    ...base,
    oversize_action: "pass",
  });
  assertEquals(r.status, 200);
  assertEquals((await r.json()).oversize_action, "pass");
  assertEquals(s.dataPlane.sites.get(none.id).oversize_action, "pass");
});

Deno.test("the site and log routes need a session, the permission and the CSRF token", async () => {
  const { s, call: api, admin } = await setup();
  await using _ = s;
  const anonymous = await call(s, "GET", "/api/sites");
  assertEquals(anonymous.status, 401);
  await anonymous.body?.cancel();
  const read = await api("GET", "/api/sites", undefined, "viewer");
  assertEquals(read.status, 200);
  await read.body?.cancel();
  const logs = await api("GET", "/api/logs", undefined, "viewer");
  assertEquals(logs.status, 200);
  await logs.body?.cancel();
  const body = { name: "a", hosts: ["a.test"], upstreams: ["http://127.0.0.1:1"] };
  const denied = await api("POST", "/api/sites", body, "viewer");
  assertEquals(denied.status, 403);
  assertEquals((await denied.json()).error.code, "FORBIDDEN");
  const noCsrf = await call(s, "POST", "/api/sites", { session: admin, body, csrf: false });
  assertEquals(noCsrf.status, 403);
  assertEquals((await noCsrf.json()).error.code, "CSRF_INVALID");
  const list = await (await api("GET", "/api/sites")).json();
  assertEquals(list.items, []);
});

Deno.test("a site change is audited with the signed-in user as the actor", async () => {
  const { s, call: api } = await setup();
  await using _ = s;
  const created = await api("POST", "/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: ["http://127.0.0.1:1"],
  });
  const site = await created.json();
  const audit = await (await api("GET", "/api/audit?action=site.create")).json();
  const entry = audit.items.find((i: { target: string }) => i.target === site.id);
  ok(entry, "an audit record for the new site");
  assertEquals(entry.actor.name, ADMIN.username);
  assertEquals(entry.result, "success");
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

  const blocks = await (await call("GET", "/api/logs?action=block", undefined, "viewer")).json();
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

  const one = await call("GET", `/api/logs/${trace}`, undefined, "viewer");
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

Deno.test("GET /api/logs takes a site's name as well as its id; /api/logs/stats counts per action and class over a period", async () => {
  await using up = startUpstream();
  const { s, call } = await setup();
  await using _ = s;
  const shop = await (await call("POST", "/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: [up.url],
  })).json();
  await call("POST", "/api/sites", { name: "blog", hosts: ["blog.test"], upstreams: [up.url] });
  const t0 = s.clock.now();
  const send = async (host: string, path: string) =>
    await (await hostFetch(`${s.dataUrl}${path}`, host)).body?.cancel();
  await send("shop.test", "/a");
  await send("shop.test", "/?q=%3Cscript%3Ealert(1)%3C/script%3E");
  await send("shop.test", "/?id=1%27%20or%201=1--");
  await send("blog.test", "/b");
  s.clock.advance(20 * 60_000); // within the sessions' 30 idle minutes
  await send("shop.test", "/later");

  for (const site of ["shop", shop.id]) {
    const r = await (await call("GET", `/api/logs?site=${site}`)).json();
    assertEquals(r.items.length, 4, `site=${site}`);
  }
  assertEquals((await (await call("GET", "/api/logs?site=nosuch")).json()).items, []);

  const iso = (ms: number) => new Date(ms).toISOString();
  const early = await (await call(
    "GET",
    `/api/logs/stats?from=${iso(t0 - 1000)}&to=${iso(t0 + 600_000)}&site=shop`,
    undefined,
    "viewer",
  )).json();
  assertEquals(early.total, 3);
  assertEquals(early.by_action, { pass: 1, block: 2 });
  assertEquals(early.by_class, { xss: 1, sqli: 1 });
  assertEquals(early.period, { from: iso(t0 - 1000), to: iso(t0 + 600_000) });
  ok(typeof early.written === "number", "the pipeline counters stay");
  const all = await (await call("GET", "/api/logs/stats")).json();
  assertEquals([all.total, all.by_action.pass], [5, 3], "default period: the last 24 hours");
  const blog = await (await call("GET", `/api/logs/stats?site=blog`)).json();
  assertEquals(blog.by_action, { pass: 1 });
  const backwards = await call("GET", `/api/logs/stats?from=${iso(t0)}&to=${iso(t0 - 1)}`);
  assertEquals(backwards.status, 400);
});

Deno.test("a refused site names every problem at once, each with its field, code and bound", async () => {
  const { s, call } = await setup();
  await using _ = s;
  const r = await call("POST", "/api/sites", {
    name: "bad name!",
    hosts: ["ok.test", "bad host"],
    upstreams: ["ftp://files.example"],
    timeouts: { connect_ms: 0 },
    trusted_proxies: [],
  });
  assertEquals(r.status, 400);
  const { error } = await r.json();
  assertEquals(error.field, "name");
  assertEquals(
    error.problems.map((p: Record<string, unknown>) => [p.field, p.code, p.minimum ?? null]),
    [
      ["name", "invalid_format", null],
      ["hosts[1]", "custom", null],
      ["upstreams[0]", "custom", null],
      ["timeouts.connect_ms", "too_small", 1],
    ],
  );
  const missing = await (await call("POST", "/api/sites", { name: "shop" })).json();
  assertEquals(
    missing.error.problems.map((p: Record<string, unknown>) => [p.field, p.code]),
    [["hosts", "required"], ["upstreams", "required"]],
  );
});
