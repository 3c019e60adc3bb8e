/** The protection API through the real management listener: session, CSRF, roles, audit, effect. */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, createUser, login } from "../_helpers/identity.ts";
import { addSite, hit, steps } from "../_helpers/protection.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

Deno.test("an administrator's IP block through the real API is audited and enforced; readonly and CSRF-less writes are refused", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  await createUser(s, "viewer", "Glacier-Moth-42", "readonly");
  const viewer = await login(s, "viewer", "Glacier-Moth-42");
  const entry = { action: "block", cidr: "203.0.113.0/24" };

  const noCsrf = await callJson(s, "POST", "/api/protection/ip-lists", {
    session: admin,
    body: entry,
    csrf: false,
  });
  assertEquals(noCsrf.status, 403);
  const denied = await callJson(s, "POST", "/api/protection/ip-lists", {
    session: viewer,
    body: entry,
  });
  assertEquals(denied.status, 403);
  assertEquals(
    (await callJson(s, "GET", "/api/protection/ip-lists", { session: viewer })).status,
    200,
  );
  assertEquals(
    (await callJson(s, "POST", "/api/protection/ip-lists", { body: entry })).status,
    401,
  );

  const created = await callJson(s, "POST", "/api/protection/ip-lists", {
    session: admin,
    body: entry,
  });
  assertEquals(created.status, 201);
  const id = created.body["id"] as string;
  const blocked = await hit(s, "/", { ip: "203.0.113.5" });
  assertEquals([blocked.status, steps(blocked).at(-1)], [403, `ip_list:block:${id}`]);

  const audit = await callJson(s, "GET", `/api/audit?action=protection.ip_entry.create`, {
    session: admin,
  });
  const items = audit.body["items"] as Array<
    { actor: { name: string }; target: string; trace_id: string }
  >;
  assertEquals(items.map((i) => [i.actor.name, i.target]), [["admin", id]]);
  ok(items[0]!.trace_id === created.res.headers.get("x-waf-trace-id"));
});
