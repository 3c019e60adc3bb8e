/**
 * Management API tokens over HTTP on a real server: the management API switch, lifetimes, the
 * non-expiring refusal, the secret shown once, hashing at rest, bearer use without CSRF, token
 * actors in the audit trail, escalation, revocation and expiry.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import {
  as,
  auditItems,
  errorCode,
  mintToken,
  TOKENS_ON,
  VIEWER,
  withToken,
} from "../../_helpers/api_access.ts";
import {
  ADMIN,
  callJson,
  completeSetup,
  createUser,
  login,
  type Session,
} from "../../_helpers/identity.ts";
import { createTestApp, type TestBase } from "../../_helpers/server.ts";
import { sha256Hex } from "../../../mod/core/digest.ts";

const DAY = 86_400_000;

async function ready(
  config: Record<string, unknown> = TOKENS_ON,
): Promise<{ server: TestBase; admin: Session }> {
  const server = await createTestApp({ config, areas: ["apiAccess", "dataPlane"] });
  await completeSetup(server);
  return { server, admin: await login(server, ADMIN.username, ADMIN.password) };
}

const create = (server: TestBase, by: Session | string, body: Record<string, unknown>) =>
  callJson(server, "POST", "/api/system/api-tokens", as(by, body));

const list = async (server: TestBase, admin: Session) =>
  (await callJson(server, "GET", "/api/system/api-tokens", { session: admin })).body
    .items as Record<string, unknown>[];

Deno.test("creating a token answers 403 MANAGEMENT_API_DISABLED while apisec.management_api.enabled is false", async () => {
  const { server, admin } = await ready({});
  await using _ = server;
  const r = await create(server, admin, { note: "ci", permissions: ["read:sites"] });
  assertEquals(r.status, 403);
  assertEquals(errorCode(r), "MANAGEMENT_API_DISABLED");
  assertMatch((r.body.error as { message: string }).message, /apisec\.management_api\.enabled/);
  assertEquals(await list(server, admin), []);
  const items = await auditItems(server, admin, "action=api_token.create");
  assertEquals(items.map((i) => [i.result, i.detail.code]), [
    ["failure", "MANAGEMENT_API_DISABLED"],
  ]);
});

Deno.test("the token list says whether tokens are on, the waf.yaml key and that a change needs a restart", async () => {
  for (const [config, enabled] of [[{}, false], [TOKENS_ON, true]] as const) {
    const { server, admin } = await ready(config);
    await using _ = server;
    const r = await callJson(server, "GET", "/api/system/api-tokens", { session: admin });
    assertEquals(r.status, 200);
    assertEquals(r.body, {
      enabled,
      setting: "apisec.management_api.enabled",
      restart_required: true,
      items: [],
    });
  }
  const { server, admin } = await ready({});
  await using _ = server;
  const refused = await create(server, admin, { note: "ci", permissions: ["read:sites"] });
  assertMatch((refused.body.error as { message: string }).message, /restart/);
  assertEquals(
    (refused.body.error as Record<string, unknown>).setting,
    "apisec.management_api.enabled",
  );
});

Deno.test("creating a token works once apisec.management_api.enabled is true", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const r = await create(server, admin, { note: "ci", permissions: ["read:sites"] });
  assertEquals(r.status, 201);
  assertEquals(r.res.headers.get("cache-control"), "no-store");
  assertEquals(Object.keys(r.body).sort(), ["item", "token"]);
  assertMatch(r.body.token as string, /^waf_[A-Za-z0-9_-]{43}$/);
  const item = r.body.item as Record<string, unknown>;
  assertEquals(Object.keys(item).sort(), [
    "created_at",
    "created_by",
    "expires_at",
    "id",
    "last_used_at",
    "last_used_ip",
    "note",
    "permissions",
    "revoked",
    "revoked_at",
  ]);
  assertEquals(item.note, "ci");
  assertEquals(item.permissions, ["read:sites"]);
  assertEquals(item.revoked, false);
  assertMatch(item.created_by as string, /^user:[0-9a-f]{32}$/);
});

Deno.test("a token lives 90 days by default, as asked up to 365 days, and longer is refused with 400", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const now = server.clock.now();
  const expiry = async (extra: Record<string, unknown>) => {
    const r = await create(server, admin, { note: "t", permissions: ["read:sites"], ...extra });
    return r.status === 201
      ? Date.parse((r.body.item as { expires_at: string }).expires_at) - now
      : `${r.status} ${errorCode(r)} ${(r.body.error as { field?: string }).field}`;
  };
  assertEquals(await expiry({}), 90 * DAY);
  assertEquals(await expiry({ expires_in_days: 1 }), DAY);
  assertEquals(await expiry({ expires_in_days: 365 }), 365 * DAY);
  const at = new Date(now + 30 * DAY).toISOString();
  assertEquals(await expiry({ expires_at: at }), 30 * DAY);
  assertEquals(
    await expiry({ expires_at: new Date(now + 30 * DAY).toISOString().replace("Z", "+00:00") }),
    30 * DAY,
  );
  assertEquals(
    await expiry({ expires_in_days: 366 }),
    "400 API_TOKEN_LIFETIME_TOO_LONG expires_in_days",
  );
  assertEquals(
    await expiry({ expires_at: new Date(now + 366 * DAY).toISOString() }),
    "400 API_TOKEN_LIFETIME_TOO_LONG expires_at",
  );
  assertEquals(
    await expiry({ expires_at: new Date(now - DAY).toISOString() }),
    "400 BAD_REQUEST expires_at",
  );
  assertEquals(await expiry({ expires_at: "tomorrow" }), "400 BAD_REQUEST expires_at");
  assertEquals(await expiry({ expires_in_days: 0 }), "400 BAD_REQUEST expires_in_days");
  assertEquals(await expiry({ expires_in_days: 1.5 }), "400 BAD_REQUEST expires_in_days");
  assertEquals(
    await expiry({ expires_in_days: 5, expires_at: at }),
    "400 BAD_REQUEST expires_at",
  );
  assertEquals((await list(server, admin)).length, 5);
});

Deno.test("ttl (the specification's TTL) gives the lifetime as a duration or in seconds, up to 365 days", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const now = server.clock.now();
  const expiry = async (extra: Record<string, unknown>) => {
    const r = await create(server, admin, { note: "t", permissions: ["read:sites"], ...extra });
    return r.status === 201
      ? Date.parse((r.body.item as { expires_at: string }).expires_at) - now
      : `${r.status} ${errorCode(r)} ${(r.body.error as { field?: string }).field}`;
  };
  assertEquals(await expiry({ ttl: "24h" }), DAY);
  assertEquals(await expiry({ ttl: "30d" }), 30 * DAY);
  assertEquals(await expiry({ ttl: 3600 }), 3_600_000);
  assertEquals(await expiry({ ttl: "365d" }), 365 * DAY);
  assertEquals(await expiry({ ttl: "366d" }), "400 API_TOKEN_LIFETIME_TOO_LONG ttl");
  assertEquals(await expiry({ ttl: 0 }), "400 BAD_REQUEST ttl");
  assertEquals(await expiry({ ttl: "soon" }), "400 BAD_REQUEST ttl");
  assertEquals(await expiry({ ttl: "1h", expires_in_days: 2 }), "400 BAD_REQUEST expires_in_days");
  assertEquals((await list(server, admin)).length, 4);
});

Deno.test("a non-expiring token answers 501 API_TOKEN_CONFIRMATION_UNAVAILABLE and creates nothing", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const r = await create(server, admin, {
    note: "forever",
    permissions: ["read:sites"],
    non_expiring: true,
  });
  assertEquals(r.status, 501);
  assertEquals(errorCode(r), "API_TOKEN_CONFIRMATION_UNAVAILABLE");
  assertEquals(await list(server, admin), []);
});

Deno.test("the request shape is checked: unknown fields, permissions and empty lists are 400", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const field = async (body: Record<string, unknown>) => {
    const r = await create(server, admin, body);
    return `${r.status} ${(r.body.error as { field?: string }).field}`;
  };
  assertEquals(await field({ permissions: ["read:sites"] }), "400 note");
  assertEquals(await field({ note: "x", permissions: [] }), "400 permissions");
  assertEquals(await field({ note: "x", permissions: ["read:nothing"] }), "400 permissions[0]");
  assertEquals(await field({ note: "x", permissions: ["nope:*"] }), "400 permissions[0]");
  assertEquals(await field({ note: "x", permissions: ["read:sites"], owner: "me" }), "400 owner");
});

Deno.test("the secret is returned once: list and read show metadata only, and neither the store nor the logs hold it", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const { token, item } = await mintToken(server, admin, {
    note: "deploy bot",
    permissions: ["read:sites", "write:sites"],
  });
  const secretPart = token.slice(4);
  assertEquals((await withToken(server, token, "GET", "/api/sites")).status, 200);
  const all = await callJson(server, "GET", "/api/system/api-tokens", { session: admin });
  const one = await callJson(server, "GET", `/api/system/api-tokens/${item.id}`, {
    session: admin,
  });
  ok(!JSON.stringify(all.body).includes(secretPart));
  ok(!JSON.stringify(one.body).includes(secretPart));
  assertEquals((one.body.item as { note: string }).note, "deploy bot");
  // Hashing at rest: the row holds SHA-256 of the whole secret, nothing else derived from it.
  const row = server.db.prepare("SELECT * FROM api_tokens WHERE id = ?").get(item.id) as Record<
    string,
    unknown
  >;
  assertEquals(row.secret_hash, sha256Hex(token));
  for (const [k, v] of Object.entries(row)) {
    ok(!String(v).includes(secretPart), `column ${k} holds the secret`);
  }
  server.db.exec("PRAGMA wal_checkpoint(FULL)");
  for (const file of ["waf.db", "waf.db-wal"]) {
    const bytes = await Deno.readFile(`${server.dir}/${file}`).catch(() => new Uint8Array());
    ok(!new TextDecoder("latin1").decode(bytes).includes(secretPart), `${file} holds the secret`);
  }
  ok(!server.logs.join("\n").includes(secretPart), "a log line holds the secret");
});

Deno.test("a read:sites token can list sites but not create one, and cannot read users", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const { token } = await mintToken(server, admin, { note: "r", permissions: ["read:sites"] });
  assertEquals((await withToken(server, token, "GET", "/api/sites")).status, 200);
  const post = await withToken(server, token, "POST", "/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: ["http://127.0.0.1:9"],
  });
  assertEquals([post.status, errorCode(post)], [403, "FORBIDDEN"]);
  const users = await withToken(server, token, "GET", "/api/users");
  assertEquals([users.status, errorCode(users)], [403, "FORBIDDEN"]);
  const denied = await auditItems(server, admin, "action=auth.denied");
  const actors = denied.map((i) => i.actor.type);
  assertEquals(actors, ["token", "token"]);
});

Deno.test("an unknown, malformed or non-bearer Authorization header answers 401", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const { token } = await mintToken(server, admin, { note: "r", permissions: ["read:sites"] });
  const wrong = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
  for (
    const header of [`Bearer ${wrong}`, "Bearer waf_short", `Basic ${token}`, `Bearer  ${token}`]
  ) {
    const r = await callJson(server, "GET", "/api/sites", { headers: { authorization: header } });
    assertEquals([r.status, errorCode(r)], [401, "UNAUTHORIZED"], header);
  }
});

Deno.test("bearer requests need no CSRF header, and the audit trail names the token id as the actor", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const { token, item } = await mintToken(server, admin, {
    note: "alice's laptop",
    permissions: ["read:sites", "write:sites"],
  });
  const r = await withToken(server, token, "POST", "/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: ["http://127.0.0.1:9"],
  });
  assertEquals(r.status, 201);
  const audit = await auditItems(server, admin, "action=site.create");
  assertEquals(audit[0]!.actor, { type: "token", id: item.id, name: `token:${item.id}` });
  ok(!JSON.stringify(audit).includes("alice"), "the note is never the identity");
  // A session on the same route still needs the CSRF header.
  const noCsrf = await callJson(server, "POST", "/api/sites", {
    session: admin,
    csrf: false,
    body: { name: "blog", hosts: ["blog.test"], upstreams: ["http://127.0.0.1:9"] },
  });
  assertEquals(errorCode(noCsrf), "CSRF_INVALID");
});

Deno.test("a token cannot mint a token wider than itself, nor one that outlives it", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const parent = await mintToken(server, admin, {
    note: "minter",
    permissions: ["manage:api_tokens", "read:sites"],
    expires_in_days: 10,
  });
  for (const wider of [["write:sites"], ["read:*"], ["*"], ["manage:api_tokens", "read:users"]]) {
    const r = await create(server, parent.token, {
      note: "child",
      permissions: wider,
      expires_in_days: 5,
    });
    assertEquals([r.status, errorCode(r)], [403, "FORBIDDEN"], wider.join(","));
  }
  const longer = await create(server, parent.token, { note: "child", permissions: ["read:sites"] });
  assertEquals([longer.status, errorCode(longer)], [403, "FORBIDDEN"]);
  const child = await mintToken(server, parent.token, {
    note: "child",
    permissions: ["read:sites"],
    expires_in_days: 5,
  });
  assertEquals(child.item.created_by, `token:${parent.item.id}`);
  assertEquals((await withToken(server, child.token, "GET", "/api/sites")).status, 200);
  const denied = await auditItems(server, admin, "action=api_token.create&result=denied");
  assertEquals(denied.length, 5);
  assertEquals((await list(server, admin)).length, 2);
});

Deno.test("revocation by DELETE or POST .../revoke takes effect on the next request", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const a = await mintToken(server, admin, { note: "a", permissions: ["read:sites"] });
  const b = await mintToken(server, admin, { note: "b", permissions: ["read:sites"] });
  assertEquals((await withToken(server, a.token, "GET", "/api/sites")).status, 200);
  const del = await callJson(server, "DELETE", `/api/system/api-tokens/${a.item.id}`, {
    session: admin,
  });
  assertEquals(del.status, 200);
  assertEquals((del.body.item as { revoked: boolean }).revoked, true);
  assertEquals((await withToken(server, a.token, "GET", "/api/sites")).status, 401);
  const post = await callJson(server, "POST", `/api/system/api-tokens/${b.item.id}/revoke`, {
    session: admin,
  });
  assertEquals(post.status, 200);
  assertMatch((post.body.item as { revoked_at: string }).revoked_at, /^\d{4}-/);
  assertEquals((await withToken(server, b.token, "GET", "/api/sites")).status, 401);
  const missing = await callJson(server, "DELETE", "/api/system/api-tokens/nope", {
    session: admin,
  });
  assertEquals(missing.status, 404);
  const audit = await auditItems(server, admin, "action=api_token.revoke");
  assertEquals(
    audit.map((i) => i.result),
    ["failure", "success", "success"],
  );
});

Deno.test("a token stops working at its expiry, on the next request", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const { token } = await mintToken(server, admin, {
    note: "short",
    permissions: ["read:sites"],
    expires_in_days: 1,
  });
  server.clock.advance(DAY - 1);
  assertEquals((await withToken(server, token, "GET", "/api/sites")).status, 200);
  server.clock.advance(1);
  assertEquals((await withToken(server, token, "GET", "/api/sites")).status, 401);
});

Deno.test("listing, reading and revoking tokens need manage:api_tokens: read:system and the readonly role see nothing", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  const { item } = await mintToken(server, admin, { note: "n", permissions: ["read:sites"] });
  const system = await mintToken(server, admin, { note: "s", permissions: ["read:system"] });
  for (
    const [method, path] of [
      ["GET", "/api/system/api-tokens"],
      ["GET", `/api/system/api-tokens/${item.id}`],
      ["POST", "/api/system/api-tokens"],
      ["DELETE", `/api/system/api-tokens/${item.id}`],
      ["POST", `/api/system/api-tokens/${item.id}/revoke`],
    ] as const
  ) {
    const body = method === "POST" ? { note: "x", permissions: ["read:sites"] } : undefined;
    const r = await callJson(server, method, path, { session: viewer, body });
    assertEquals([r.status, errorCode(r)], [403, "FORBIDDEN"], `viewer ${method} ${path}`);
    const t = await withToken(server, system.token, method, path, body);
    assertEquals([t.status, errorCode(t)], [403, "FORBIDDEN"], `read:system ${method} ${path}`);
  }
  const manager = await mintToken(server, admin, {
    note: "m",
    permissions: ["manage:api_tokens", "read:sites"],
  });
  const list = await withToken(server, manager.token, "GET", "/api/system/api-tokens");
  assertEquals(list.status, 200);
  ok(!JSON.stringify(list.body).includes(system.token), "never a secret");
});

Deno.test("last use is recorded with the client address, at most once a minute", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const { token, item } = await mintToken(server, admin, {
    note: "n",
    permissions: ["read:sites"],
  });
  const seen = async () => ((await callJson(server, "GET", `/api/system/api-tokens/${item.id}`, {
    session: admin,
  })).body
    .item as { last_used_at: string | null; last_used_ip: string | null });
  assertEquals((await seen()).last_used_at, null);
  await withToken(server, token, "GET", "/api/sites");
  const first = await seen();
  assertEquals(first.last_used_ip, "127.0.0.1");
  assertEquals(Date.parse(first.last_used_at!), server.clock.now());
  server.clock.advance(30_000);
  await withToken(server, token, "GET", "/api/sites");
  assertEquals((await seen()).last_used_at, first.last_used_at);
  server.clock.advance(30_000);
  await withToken(server, token, "GET", "/api/sites");
  assertEquals(Date.parse((await seen()).last_used_at!), server.clock.now());
});
