import { assertEquals } from "../../_helpers/assert.ts";
import { ADMIN, completeSetup, createUser, login } from "../../_helpers/identity.ts";
import { createTestApp } from "../../_helpers/server.ts";
import { transaction } from "../../../db/store.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createGuard } from "../../../routes/api/guard.ts";
import { createManagementApp } from "../../../routes/api/management.ts";
import { perm, type RouteDef } from "../../../routes/api/route.ts";

const ok200 = (c: Parameters<RouteDef["handler"]>[0]) =>
  c.json({ principal: c.get("principal")?.name });

const ROUTES: RouteDef[] = [
  { method: "POST", path: "/api/sites", access: perm("write:sites"), handler: ok200 },
  {
    method: "POST",
    path: "/api/me/2fa",
    access: perm("write:users", { sessionOnly: true }),
    handler: ok200,
  },
  {
    method: "GET",
    path: "/api/people/:id",
    access: perm("write:users", { ownAccount: "id" }),
    handler: ok200,
  },
  { method: "GET", path: "/api/cluster/heartbeat", access: { kind: "node" }, handler: ok200 },
];

async function app() {
  const server = await createTestApp({ areas: ["identity"] });
  await completeSetup(server);
  const guard = createGuard({
    sessions: server.identity.sessions,
    setup: server.identity.setup,
    audit: server.identity.audit,
    transaction: (fn) => transaction(server.db, fn),
    bearer: (_c, token) =>
      token === "good-token"
        ? { kind: "token", id: "t1", name: "t1", permissions: ["write:sites", "read:audit"] }
        : undefined,
  });
  const a = createManagementApp({
    logger: createMemoryLogger(),
    random: systemRandom,
    routes: ROUTES,
    guard,
  });
  const request = (path: string, init: RequestInit = {}) =>
    a.request(path, init, { remoteAddr: { hostname: "127.0.0.1", port: 1 }, tls: false });
  return { server, request };
}

Deno.test("bearer-token requests are exempt from the CSRF double-submit", async () => {
  const { server, request } = await app();
  await using _ = server;
  const r = await request("/api/sites", {
    method: "POST",
    headers: { authorization: "Bearer good-token" },
  });
  assertEquals(r.status, 200);
  assertEquals((await r.json()).principal, "t1");
});

Deno.test("an unknown or malformed Authorization header is 401, never a fallback to the cookie", async () => {
  const { server, request } = await app();
  await using _ = server;
  const s = await login(server, ADMIN.username, ADMIN.password);
  for (const authorization of ["Bearer bad", "Basic YWRtaW46eA==", "Bearer", "bearer good-token"]) {
    const r = await request("/api/sites", {
      method: "POST",
      headers: { authorization, cookie: s.cookie, "x-csrf-token": s.csrf },
    });
    assertEquals(r.status, 401, authorization);
    await r.body?.cancel();
  }
});

Deno.test("session-only routes refuse API tokens with 403", async () => {
  const { server, request } = await app();
  await using _ = server;
  const r = await request("/api/me/2fa", {
    method: "POST",
    headers: { authorization: "Bearer good-token" },
  });
  assertEquals(r.status, 403);
  assertEquals((await r.json()).error.code, "FORBIDDEN");
});

Deno.test("an own-account route lets a user act on their own id without the permission, no one else", async () => {
  const { server, request } = await app();
  await using _ = server;
  const viewerId = await createUser(server, "viewer", "Glacier-Moth-42", "readonly");
  const viewer = await login(server, "viewer", "Glacier-Moth-42");
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const as = (s: { cookie: string }, id: string) =>
    request(`/api/people/${id}`, { headers: { cookie: s.cookie } });
  const own = await as(viewer, viewerId);
  assertEquals([own.status, (await own.json()).principal], [200, "viewer"]);
  const other = await as(viewer, "someone-else");
  assertEquals([other.status, (await other.json()).error.code], [403, "FORBIDDEN"]);
  const byAdmin = await as(admin, viewerId);
  assertEquals(byAdmin.status, 200, "write:users acts on any account");
  await byAdmin.body?.cancel();
  // A token whose id happens to equal the path is no user acting on itself.
  const token = await request("/api/people/t1", {
    headers: { authorization: "Bearer good-token" },
  });
  assertEquals(token.status, 403);
  await token.body?.cancel();
});

Deno.test("node routes answer 401 while no node authentication is installed", async () => {
  const { server, request } = await app();
  await using _ = server;
  const s = await login(server, ADMIN.username, ADMIN.password);
  const r = await request("/api/cluster/heartbeat", { headers: { cookie: s.cookie } });
  assertEquals(r.status, 401);
  await r.body?.cancel();
});
