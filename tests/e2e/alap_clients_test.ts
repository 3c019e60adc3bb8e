/**
 * The clients ALAP never blocks (issue #36): a few test attacks from the machine itself proposed
 * blocking 127.0.0.1, which auto-apply turned into a lockout of local use. Loopback, the
 * management listener's signed-in clients and the sites' trusted proxies are never proposed;
 * private addresses are proposed but never applied on their own. And the block notice links to
 * the decision's console page, in the inbox and, with `server.management.base_url`, in a channel.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { addSite, apiFor, hit } from "../_helpers/protection.ts";
import { createTestApp, startTestServer, type TestServer } from "../_helpers/server.ts";
import { KNOWN_FOR_MS } from "../../mod/core/management_clients.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const UNION = "/search?q=1%20union%20select%20password%20from%20users"; // sqli.union, critical

interface Decision {
  id: string;
  kind: string;
  status: string;
  target: { client_ip?: string };
}

async function decisions(s: TestServer): Promise<Decision[]> {
  const r = await apiFor(s)("GET", "/api/alap/decisions", undefined, "read:logs");
  assertEquals(r.status, 200);
  return (await r.json()).items;
}

/** Three critical findings from `ip` (or, without one, from the test's own loopback peer). */
async function attacks(s: TestServer, ip?: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    assertEquals((await hit(s, UNION, ip ? { ip } : {})).status, 403);
  }
  s.dataPlane.protection.alap.flush();
}

async function autoApplying(s: TestServer): Promise<void> {
  const r = await apiFor(s)("PUT", "/api/alap/policy", {
    auto_apply: true,
    client_score_threshold: 150,
  }, "write:protection");
  assertEquals(r.status, 200);
}

Deno.test("test attacks from loopback never propose blocking it, even with auto-apply on", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { trusted_proxies: [] });
  await autoApplying(s);
  await attacks(s);
  await attacks(s, "::1");
  assertEquals(await decisions(s), []);
  assertEquals((await hit(s, "/")).status, 200, "local use goes on");
  const notes = s.db.prepare("SELECT kind FROM notifications WHERE kind LIKE 'alap.%'").all();
  assertEquals(notes, []);
});

Deno.test("a private address is proposed for blocking but never applied on its own", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await autoApplying(s);
  await attacks(s, "10.0.0.5");
  await attacks(s, "198.51.100.9");
  const byIp = Object.fromEntries(
    (await decisions(s)).map((d) => [d.target.client_ip, [d.kind, d.status]]),
  );
  assertEquals(byIp, {
    "10.0.0.5": ["temp_block", "proposed"],
    "198.51.100.9": ["temp_block", "applied"],
  });
  assertEquals((await hit(s, "/", { ip: "10.0.0.5" })).status, 200);
  assertEquals((await hit(s, "/", { ip: "198.51.100.9" })).status, 403);
});

Deno.test("a site's trusted proxy is never proposed for blocking", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { trusted_proxies: ["127.0.0.1/32", "203.0.113.9/32"] });
  await autoApplying(s);
  // A proxy forwarding without naming the client: the proxy itself is the client address.
  const h = await hit(s, UNION, { ip: "203.0.113.9" });
  const row = await s.dataPlane.accessLog.get(h.traceId);
  assertEquals(JSON.parse(row!.record).client_ip, "203.0.113.9");
  await attacks(s, "203.0.113.9");
  assertEquals(await decisions(s), []);
  assertEquals((await hit(s, "/", { ip: "203.0.113.9" })).status, 200);
});

Deno.test("the management listener remembers the addresses of signed-in callers only", async () => {
  await using app = await createTestApp({ areas: ["monitor", "apiAccess"] });
  await completeSetup(app);
  const session = await login(app, ADMIN.username, ADMIN.password);
  const from = (hostname: string, cookie?: string) =>
    app.app.request(
      "/api/notifications",
      { headers: cookie ? { cookie } : {} },
      { remoteAddr: { hostname, port: 50_000, transport: "tcp" } },
    );
  assertEquals((await from("198.51.100.20", session.cookie)).status, 200);
  assertEquals((await from("198.51.100.21")).status, 401, "not signed in");
  const known = app.monitor.managementClients;
  assertEquals([known.has("198.51.100.20"), known.has("198.51.100.21")], [true, false]);
  app.clock.advance(KNOWN_FOR_MS + 1);
  assertEquals(known.has("198.51.100.20"), false, "forgotten a day after its last request");
});

Deno.test("an address signed in to the management listener is never blocked; another is", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await autoApplying(s);
  // What the management listener's observer does for an authenticated request (test above).
  s.monitor.managementClients.remember("198.51.100.20");
  await attacks(s, "198.51.100.20");
  await attacks(s, "198.51.100.21");
  assertEquals((await decisions(s)).map((d) => [d.target.client_ip, d.status]), [
    ["198.51.100.21", "applied"],
  ]);
  assertEquals((await hit(s, "/", { ip: "198.51.100.20" })).status, 200);
});

Deno.test("a channel's ALAP notice links to the decision's console page under base_url", async () => {
  const received: Record<string, unknown>[] = [];
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    received.push(JSON.parse(await req.text()));
    return Response.json({ ok: true });
  });
  try {
    await using up = startUpstream();
    await using s = await startTestServer({
      config: { server: { management: { base_url: "https://waf.example.com" } } },
    });
    await completeSetup(s);
    addSite(s, up.url);
    const admin = await login(s, ADMIN.username, ADMIN.password);
    const created = await callJson(s, "POST", "/api/notification-channels", {
      session: admin,
      body: {
        name: "ops",
        type: "webhook",
        events: ["alap.temp_block"],
        settings: { url: `http://127.0.0.1:${receiver.addr.port}/hook` },
      },
    });
    assertEquals(created.status, 201);
    await apiFor(s)("PUT", "/api/alap/policy", { client_score_threshold: 150 });
    await attacks(s, "192.0.2.44");
    await s.monitor.dispatcher.runDue();
    const [d] = await decisions(s);
    ok(d);
    assertEquals(received.length, 1);
    const m = received[0]!;
    assertEquals([m.event, m.url], [
      "alap.temp_block",
      `https://waf.example.com/console/alap/${d.id}`,
    ]);
    ok(!/POST|\/api\//.test(String(m.body)), String(m.body));
    // The inbox item carries the same link and the facts the console writes its text from.
    const inbox = await callJson(s, "GET", "/api/notifications", { session: admin });
    const item = (inbox.body.items as Record<string, unknown>[])[0]!;
    assertEquals(item.link, `/console/alap/${d.id}`);
    assertEquals((item.params as Record<string, unknown>).ip, "192.0.2.44");
  } finally {
    await receiver.shutdown();
  }
});
