/**
 * `/api/logs` as the attack log uses it, over HTTP on a real server: every kind of block has the
 * class the dashboard counts it by, the class filter takes any case, actions combine, free text
 * searches the request, a trace id is found in any copied form, and an address is looked up in
 * the IP list before it is blocked.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { errorCode } from "../../_helpers/api_access.ts";
import { BLOCK_KINDS, blockEveryKind } from "../../_helpers/attack_log.ts";
import { ADMIN, callJson, completeSetup, login } from "../../_helpers/identity.ts";
import { addSite, hit } from "../../_helpers/protection.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { startUpstream } from "../../_helpers/upstream.ts";

async function setup() {
  const s = await startTestServer();
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  return Object.assign(s, { admin });
}

type Item = { trace_id: string; class: string | null; action: string; status: number };

Deno.test("every kind of block has the dashboard's class in the log, and the class filter takes any case", async () => {
  await using up = startUpstream();
  await using s = await setup();
  addSite(s, up.url);
  const every = await blockEveryKind(s);
  const get = (path: string) => callJson(s, "GET", path, { session: s.admin });

  const blocks = await get("/api/logs?action=block&limit=100");
  const items = blocks.body.items as Item[];
  for (const [kind, h] of Object.entries(every.blocked)) {
    const it = items.find((i) => i.trace_id === h.traceId);
    assertEquals(it?.class, BLOCK_KINDS[kind as keyof typeof BLOCK_KINDS], kind);
  }
  // The dashboard's blocks by class are the log's, kind for kind.
  s.monitor.rollups.sample();
  const dash = await callJson(s, "GET", "/api/monitor/summary?period=1h", { session: s.admin });
  const tally: Record<string, number> = {};
  for (const i of items) tally[i.class!] = (tally[i.class!] ?? 0) + 1;
  assertEquals(dash.body.blocked_classes, tally);
  assertEquals(Object.keys(tally).sort(), Object.values(BLOCK_KINDS).sort());
  // The log's own summary counts them alike.
  const summary = await get("/api/logs/summary?top=50");
  const byClass = summary.body.blocked_by_class as { class: string; count: number }[];
  assertEquals(Object.fromEntries(byClass.map((c) => [c.class, c.count])), tally);

  const one = await get(`/api/logs/${every.blocked.ip_list.traceId}`);
  assertEquals([one.body.class, one.body.finding], ["ip_list", null]);
  const challenge = await get(`/api/logs/${every.challenged.traceId}`);
  assertEquals([challenge.body.action, challenge.body.class], ["challenge", "bot"]);

  for (
    const [query, want] of [
      ["class=SQLi", [every.blocked.engine.traceId]],
      ["class=IP_LIST", [every.blocked.ip_list.traceId]],
      ["class=custom_rule", [every.blocked.custom_rule.traceId]],
      ["class=%20Rate_Limit%20", [every.blocked.rate_limit.traceId]],
      ["class=bot", [every.blocked.bot.traceId, every.challenged.traceId]],
    ] as const
  ) {
    const r = await get(`/api/logs?${query}`);
    assertEquals(r.status, 200, query);
    assertEquals((r.body.items as Item[]).map((i) => i.trace_id).sort(), [...want].sort(), query);
  }
  const unknown = await get("/api/logs?class=nonsense");
  assertEquals([unknown.status, errorCode(unknown)], [400, "BAD_REQUEST"]);
  ok(String((unknown.body.error as { message: string }).message).includes("/api/logs/classes"));
  const classes = await get("/api/logs/classes");
  const names = classes.body.items as { class: string; kind: string }[];
  ok(names.some((c) => c.class === "sqli" && c.kind === "engine"));
  ok(names.some((c) => c.class === "ip_list" && c.kind === "check"));
});

Deno.test("actions combine in one filter; rate_limited is a block answered 429", async () => {
  await using up = startUpstream();
  await using s = await setup();
  addSite(s, up.url);
  const every = await blockEveryKind(s);
  const get = (q: string) => callJson(s, "GET", `/api/logs?limit=100&${q}`, { session: s.admin });
  const all = (await get("")).body.items as Item[];
  const attacks = (await get("action=block,challenge")).body.items as Item[];
  assertEquals(attacks.length, all.filter((i) => i.action !== "pass").length);
  ok(all.some((i) => i.action === "pass"), "passed traffic exists");
  const limited = (await get("action=RATE_LIMITED")).body.items as Item[];
  assertEquals(
    limited.map((i) => i.trace_id).sort(),
    [every.blocked.rate_limit.traceId, every.blocked.api_rate_limit.traceId].sort(),
  );
  const both = (await get("action=challenge,rate_limited")).body.items as Item[];
  assertEquals(both.length, 3);
  const bad = await get("action=block,nope");
  assertEquals([bad.status, errorCode(bad)], [400, "BAD_REQUEST"]);
});

Deno.test("free text finds a request by its path, decoded query, client, user agent or host", async () => {
  await using up = startUpstream();
  await using s = await setup();
  addSite(s, up.url, { hosts: ["shop.test", "api.shop.test"] });
  const get = (q: string) =>
    callJson(s, "GET", `/api/logs?q=${encodeURIComponent(q)}`, { session: s.admin });
  const xss = await hit(s, "/find?name=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", {
    ip: "192.0.2.9",
  });
  const agent = await hit(s, "/", {
    ip: "192.0.2.10",
    init: { headers: { "user-agent": "sqlmap/1.7" } },
  });
  const api = await hit(s, "/v1/orders", { ip: "192.0.2.11", host: "api.shop.test" });
  const ids = (r: { body: Record<string, unknown> }) =>
    (r.body.items as Item[]).map((i) => i.trace_id);
  assertEquals(ids(await get("<IMG src=x onerror")), [xss.traceId]);
  assertEquals(ids(await get("SQLMAP")), [agent.traceId]);
  assertEquals(ids(await get("192.0.2.11")), [api.traceId]);
  assertEquals(ids(await get("api.shop.test")), [api.traceId]);
  assertEquals(ids(await get("/v1/ORDERS")), [api.traceId]);
  const none = await get("not anywhere");
  assertEquals([ids(none), none.body.next_cursor, none.body.search_stopped], [[], null, false]);
  const long = await get("x".repeat(201));
  assertEquals([long.status, errorCode(long)], [400, "BAD_REQUEST"]);
});

Deno.test("a trace id is found in any form it is copied in, in the path and the filter", async () => {
  await using up = startUpstream();
  await using s = await setup();
  addSite(s, up.url);
  const attack = await hit(s, "/search?q=1%20union%20select%20password%20from%20users", {
    ip: "198.51.100.7",
  });
  const id = attack.traceId;
  const forms = [
    id,
    id.toUpperCase(),
    `traceId: ${id}`,
    `trace_id=${id}`,
    ` "${id}" `,
    `'${id}'`,
    `{"error":{"trace_id":"${id}","event_id":"${"e".repeat(32)}"}}`,
    `https://waf.example/console/logs?trace=${id}`,
    `http://127.0.0.1:9443/console/logs/${id}`,
    `Trace ID: ${id.slice(0, 16)} ${id.slice(16)}`,
  ];
  for (const form of forms) {
    const one = await callJson(s, "GET", `/api/logs/${encodeURIComponent(form)}`, {
      session: s.admin,
    });
    assertEquals([one.status, one.body.trace_id], [200, id], form);
    // One box: its own records are the deployment's.
    assertEquals([one.body.source, one.body.partial], ["local", false], form);
    const listed = await callJson(s, "GET", `/api/logs?trace_id=${encodeURIComponent(form)}`, {
      session: s.admin,
    });
    assertEquals((listed.body.items as Item[]).map((i) => i.trace_id), [id], form);
    assertEquals([listed.body.source, listed.body.partial], ["local", false], form);
  }
  for (const wrong of ["abc", `${id}0`, `${"a".repeat(32)} ${"b".repeat(32)}`]) {
    const r = await callJson(s, "GET", `/api/logs/${encodeURIComponent(wrong)}`, {
      session: s.admin,
    });
    assertEquals([r.status, errorCode(r)], [400, "BAD_REQUEST"], wrong);
  }
  const missing = await callJson(s, "GET", `/api/logs/traceId:%20${"0".repeat(32)}`, {
    session: s.admin,
  });
  assertEquals(missing.status, 404);
});

Deno.test("GET /api/protection/ip-lists/lookup/{ip} names the entries holding an address and its scope", async () => {
  await using s = await setup();
  const post = (body: unknown) =>
    callJson(s, "POST", "/api/protection/ip-lists", { session: s.admin, body });
  const net = await post({ action: "block", cidr: "198.51.100.0/24", note: "scanners" });
  await post({ action: "allow", cidr: "192.0.2.1" });
  const look = (ip: string) =>
    callJson(s, "GET", `/api/protection/ip-lists/lookup/${encodeURIComponent(ip)}`, {
      session: s.admin,
    });
  const hitNet = await look("198.51.100.7");
  assertEquals(hitNet.body.scope, "public");
  assertEquals(
    (hitNet.body.entries as { id: string; cidr: string; note: string }[]).map((
      e,
    ) => [e.id, e.cidr, e.note]),
    [[net.body.id, "198.51.100.0/24", "scanners"]],
  );
  assertEquals((await look("203.0.113.1")).body.entries, []);
  for (
    const [ip, scope] of [
      ["127.0.0.1", "loopback"],
      ["::1", "loopback"],
      ["10.1.2.3", "private"],
      ["192.168.0.9", "private"],
      ["fd00::1", "private"],
      ["169.254.1.1", "link_local"],
      ["::ffff:127.0.0.1", "loopback"],
    ] as const
  ) assertEquals((await look(ip)).body.scope, scope, ip);
  const bad = await look("not-an-ip");
  assertEquals([bad.status, errorCode(bad)], [400, "BAD_REQUEST"]);
});
