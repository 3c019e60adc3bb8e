/**
 * Notifications from the real producers: an attack spike (the rollup minute closing over the
 * threshold), a login lockout (wrong passwords) and an expiring certificate (the check at start)
 * each reach a loopback webhook receiver through the dispatcher, exactly once.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { ADMIN, call, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const ATTACK = "/search?q=1%27%20union%20select%20password%20from%20users--";

function startReceiver() {
  const received: { event: string; data: Record<string, unknown>; title: string }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    received.push(JSON.parse(await req.text()));
    return Response.json({ ok: true });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

async function attack(s: TestServer): Promise<string> {
  const r = await hostFetch(`${s.dataUrl}${ATTACK}`, "shop.test");
  assertEquals(r.status, 403);
  await r.body?.cancel();
  return r.headers.get("x-waf-trace-id")!;
}

Deno.test("attack spikes, login lockouts and expiring certificates reach a loopback receiver", async () => {
  await using up = startUpstream();
  await using receiver = startReceiver();
  const dir = await Deno.makeTempDir({ prefix: "waf-alerts-" });
  const config = { monitor: { alerts: { attack_spike_per_minute: 3 } } };
  {
    await using s = await startTestServer({ dir, config });
    await completeSetup(s);
    const admin = await login(s, ADMIN.username, ADMIN.password);
    const ca = await createCa("alert CA", s.clock.now(), systemRandom);
    const leaf = await createLeaf(
      ca,
      { commonName: "shop.test", dnsNames: ["shop.test"], days: 5 },
      s.clock.now(),
      systemRandom,
    );
    s.dataPlane.sites.create(siteInput({ upstreams: [up.url], tls: leaf }), SYSTEM);
    const created = await callJson(s, "POST", "/api/notification-channels", {
      session: admin,
      body: {
        name: "ops",
        type: "webhook",
        events: ["attack.spike", "login.lockout", "certificate.expiring"],
        settings: { url: receiver.url },
      },
    });
    assertEquals(created.status, 201);

    // Attack spike: three blocks in one minute (the threshold); the alert comes when it closes.
    s.monitor.rollups.sample();
    for (let i = 0; i < 3; i++) await attack(s);
    s.monitor.rollups.sample();
    assertEquals(receiver.received.length, 0);
    s.clock.advance(60_000);
    s.monitor.rollups.sample();
    await s.monitor.dispatcher.runDue();
    const spike = receiver.received.find((r) => r.event === "attack.spike");
    ok(spike);
    assertEquals(spike.data.blocked, 3);
    assertEquals(spike.data.classes, { sqli: 3 });
    // A quiet minute raises nothing more.
    s.clock.advance(60_000);
    s.monitor.rollups.sample();
    await s.monitor.dispatcher.runDue();
    assertEquals(
      receiver.received.filter((r) => r.event === "attack.spike").length,
      1,
      JSON.stringify(receiver.received),
    );

    // Login lockout: wrong passwords until the (username, client) pair locks (no CAPTCHA asked).
    const policy = await callJson(s, "PUT", "/api/auth/captcha-policy", {
      session: admin,
      body: { mode: "never", failures: 3, difficulty: 8 },
    });
    assertEquals(policy.status, 200);
    for (let i = 0; i < 5; i++) {
      const r = await call(s, "POST", "/api/auth/login", {
        body: { username: ADMIN.username, password: "Wrong-Pass-x9" },
      });
      assertEquals(r.status, 401);
      await r.body?.cancel();
    }
    await s.monitor.dispatcher.runDue();
    const lockout = receiver.received.find((r) => r.event === "login.lockout");
    ok(lockout, JSON.stringify(receiver.received.map((r) => r.event)));
    assertEquals(lockout.data.username, ADMIN.username);
  }
  // The certificate check runs at every start (the first start's run saw no site and planned
  // the next one 6 hours later): the site's certificate has 5 days left (< 14).
  await using again = await startTestServer({ dir, config });
  await again.ops.scheduler.idle();
  const check = again.ops.scheduler.runs("certificate-check", 1)[0];
  assertEquals([check?.result, check?.detail], ["ok", { expiring: 1 }]);
  await again.monitor.dispatcher.runDue();
  const expiring = receiver.received.find((r) => r.event === "certificate.expiring");
  ok(expiring, JSON.stringify(receiver.received.map((r) => r.event)));
  assertEquals(expiring.data.site, "shop");
  assertEquals(expiring.data.days_left, 4);
  assertMatch(expiring.title, /shop expires in 4 day/);
});
