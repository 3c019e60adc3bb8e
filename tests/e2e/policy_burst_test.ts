/**
 * A burst of management writes (issue #22, item 6): rebuilds are coalesced, and each write's
 * answer comes once its change is in force on the data plane.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, call, completeSetup, login } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

Deno.test("40 concurrent IP-list writes share rebuilds, and each one blocks as soon as it is answered", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await completeSetup(s);
  const session = await login(s, ADMIN.username, ADMIN.password);
  const swapsBefore = s.monitor.swaps;
  const ips = Array.from({ length: 40 }, (_, i) => `198.51.100.${i + 1}`);
  const statuses = await Promise.all(ips.map(async (ip) => {
    const r = await call(s, "POST", "/api/protection/ip-lists", {
      session,
      body: { action: "block", cidr: ip },
    });
    await r.body?.cancel();
    // Answered: the data plane already enforces it.
    const blocked = await hit(s, "/", { ip });
    return [r.status, blocked.status];
  }));
  for (const [created, blocked] of statuses) {
    assertEquals(created, 201);
    assertEquals(blocked, 403);
  }
  const swaps = s.monitor.swaps - swapsBefore;
  ok(swaps >= 1 && swaps < 40, `${swaps} policy swaps for 40 writes`);
  // A single write after the burst is in force at once as well.
  const last = await call(s, "POST", "/api/protection/ip-lists", {
    session,
    body: { action: "block", cidr: "203.0.113.9" },
  });
  await last.body?.cancel();
  assertEquals((await hit(s, "/", { ip: "203.0.113.9" })).status, 403);
});
