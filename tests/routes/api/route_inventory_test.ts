/**
 * The security boundary, route by route: every route of the real composed app is public
 * (the fixed list below), bootstrap/node, or guarded by a declared permission; and an
 * authorisation matrix (anonymous, readonly, admin, a narrow custom role) runs over every
 * guarded route. Routes added later by anyone are picked up from `server.routes`. The user
 * management routes' matrix past the guard (every token scope, escalations) is user_matrix_test.ts.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import {
  ADMIN,
  call,
  callJson,
  completeSetup,
  createUser,
  login,
  type Session,
} from "../../_helpers/identity.ts";
import { createTestApp, type TestTarget } from "../../_helpers/server.ts";
import { grants, isPermission } from "../../../mod/identity/permissions.ts";
import type { RouteDef } from "../../../routes/api/route.ts";

/** Section 4.1: what anyone may call. Adding a public route means adding it here, on purpose. */
const PUBLIC_ROUTES = new Set([
  "GET /health",
  "GET /health/live",
  "GET /health/ready",
  "GET /health/cluster",
  "GET /api/cluster/ca",
  "GET /api/setup/status",
  "POST /api/auth/login",
  "POST /api/auth/logout",
  "GET /api/auth/session",
  "PUT /api/auth/session/preferences",
  "GET /api/auth/login-options",
  "POST /api/auth/captcha",
  "POST /api/auth/captcha/verify",
  "GET /setup",
  "GET /login",
  "GET /console",
  "GET /console/:page",
  "GET /console/:page/:detail",
  "GET /",
]);
/** The console's static files (scripts, styles, its icon), no data. */
const PUBLIC_ASSETS = /^GET \/console\/assets\/[a-z0-9_/-]+\.(js|css|svg)$/i;

/** Section 4.2: first-install setup (setup token) and node-to-node calls. */
const BOOTSTRAP_ROUTES = new Set([
  "POST /api/setup/probe",
  "GET /api/setup/draft",
  "PATCH /api/setup/draft",
  "POST /api/setup",
]);

const ROLES = {
  admin: ["*"],
  readonly: ["read:*", "read:cluster"],
  auditor: ["read:audit", "read:users", "write:sites"],
};

const key = (r: RouteDef) => `${r.method} ${r.path}`;
const concrete = (path: string) => path.replace(/:[A-Za-z_]+/g, "no-such-id");

Deno.test("every registered route is public (4.1), bootstrap/node (4.2) or guarded by a declared permission", async () => {
  await using server = await createTestApp();
  ok(server.routes.length > 20);
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const r of server.routes) {
    const k = key(r);
    if (seen.has(k)) problems.push(`${k}: registered twice`);
    seen.add(k);
    switch (r.access.kind) {
      case "public":
        if (!PUBLIC_ROUTES.has(k) && !PUBLIC_ASSETS.test(k)) {
          problems.push(`${k}: public but not in the public list (4.1)`);
        }
        break;
      case "bootstrap":
        if (!BOOTSTRAP_ROUTES.has(k)) problems.push(`${k}: bootstrap but not a setup route (4.2)`);
        break;
      case "node":
        if (!r.path.startsWith("/api/cluster/")) {
          problems.push(`${k}: node access outside /api/cluster`);
        }
        break;
      case "permission":
        if (!isPermission(r.access.permission)) {
          problems.push(`${k}: unknown permission "${r.access.permission}"`);
        }
        break;
      default:
        problems.push(`${k}: no declared access`);
    }
  }
  assertEquals(problems, []);
  for (const k of [...PUBLIC_ROUTES, ...BOOTSTRAP_ROUTES]) {
    ok(seen.has(k), `${k} is not registered`);
  }
});

/** The rows of the route-family table in docs/identity.md: path prefix -> read/write identifier. */
async function familyTable(): Promise<{ prefix: string; read: string; write: string }[]> {
  const doc = await Deno.readTextFile(new URL("../../../docs/identity.md", import.meta.url));
  const rows = [];
  for (const line of doc.split("\n")) {
    const m = /^\| `(\/[^`]*)` *\| `([a-z_:]+)` *\| `([a-z_:]+)` *\|/.exec(line);
    if (m) rows.push({ prefix: m[1]!.replace(/\{[a-z]+\}/g, ":id"), read: m[2]!, write: m[3]! });
  }
  return rows;
}

Deno.test("docs/identity.md maps every guarded route family to the identifier the route declares", async () => {
  await using server = await createTestApp();
  const table = await familyTable();
  ok(table.length > 10, "the table is found");
  for (const row of table) {
    for (const id of [row.read, row.write]) {
      ok(isPermission(id), `${row.prefix}: ${id} is not in the spec`);
    }
  }
  const problems: string[] = [];
  for (const r of server.routes) {
    if (r.access.kind !== "permission") continue;
    const path = r.path.replace(/:[A-Za-z_]+/g, ":id");
    const row = table.filter((t) => path === t.prefix || path.startsWith(`${t.prefix}/`))
      .sort((a, b) => b.prefix.length - a.prefix.length)[0];
    if (!row) {
      problems.push(`${key(r)}: no row in docs/identity.md "Route families and their identifiers"`);
      continue;
    }
    const documented = r.method === "GET" ? row.read : row.write;
    if (documented !== r.access.permission) {
      problems.push(`${key(r)}: declares ${r.access.permission}, docs say ${documented}`);
    }
  }
  assertEquals(problems, []);
});

Deno.test("every guarded route answers anonymous callers 401 UNAUTHORIZED", async () => {
  await using server = await createTestApp();
  await completeSetup(server);
  for (const r of server.routes) {
    if (r.access.kind !== "permission") continue;
    const res = await callJson(server, r.method, concrete(r.path), {
      body: r.method === "GET" ? undefined : {},
    });
    assertEquals(res.status, 401, key(r));
    assertEquals((res.body.error as { code: string }).code, "UNAUTHORIZED", key(r));
  }
});

async function principals(server: TestTarget): Promise<Record<keyof typeof ROLES, Session>> {
  await completeSetup(server);
  await createUser(server, "viewer", "Glacier-Moth-42", "readonly");
  await createUser(server, "auditor", "Pebble-Lantern-5", "auditor");
  return {
    admin: await login(server, ADMIN.username, ADMIN.password),
    readonly: await login(server, "viewer", "Glacier-Moth-42"),
    auditor: await login(server, "auditor", "Pebble-Lantern-5"),
  };
}

/**
 * Calls a route; JSON answers are parsed, others (the Prometheus text, an event stream that never
 * ends) only have their status read and their body cancelled.
 */
async function probe(server: TestTarget, method: string, path: string, session: Session) {
  const res = await call(server, method, path, {
    session,
    body: method === "GET" ? undefined : {},
  });
  if (!(res.headers.get("content-type") ?? "").includes("json")) {
    await res.body?.cancel();
    return { status: res.status, body: {} as Record<string, unknown> };
  }
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) as Record<string, unknown> : {} };
}

const GUARD_CODES = new Set(["UNAUTHORIZED", "FORBIDDEN", "CSRF_INVALID"]);
/** GET routes whose answer is 501 by the specification (section 7: the Updates page). */
const NOT_IMPLEMENTED = new Set(["GET /api/system/updates"]);

Deno.test("the authorisation matrix holds on every guarded route: 403 without the permission, through the guard with it", async () => {
  await using server = await createTestApp({ config: { apisec: { permissions: ROLES } } });
  const sessions = await principals(server);
  const report: string[] = [];
  for (const r of server.routes) {
    if (r.access.kind !== "permission") continue;
    const wanted = [r.access.permission];
    for (const [role, session] of Object.entries(sessions)) {
      const allowed = wanted.some((p) => grants(ROLES[role as keyof typeof ROLES], p));
      const res = await probe(server, r.method, concrete(r.path), session);
      const code = (res.body.error as { code?: string } | undefined)?.code;
      const label = `${role} ${key(r)} → ${res.status} ${code ?? ""}`;
      if (!allowed) {
        if (res.status !== 403 || code !== "FORBIDDEN") report.push(`expected 403: ${label}`);
      } else if (code !== undefined && GUARD_CODES.has(code)) {
        report.push(`expected to pass the guard: ${label}`);
      } else if (
        r.method === "GET" && !r.path.includes(":") && (res.status < 200 || res.status > 299) &&
        !(NOT_IMPLEMENTED.has(key(r)) && res.status === 501) &&
        // A WebSocket endpoint answers a plain GET with 426 once the guard let it through.
        !(res.status === 426 && code === "UPGRADE_REQUIRED")
      ) {
        report.push(`expected 2xx: ${label}`);
      }
    }
  }
  assertEquals(report, []);
});

Deno.test("a role the configuration no longer has grants nothing", async () => {
  await using server = await createTestApp({ config: { apisec: { permissions: ROLES } } });
  const sessions = await principals(server);
  server.db.prepare("UPDATE users SET role = 'retired' WHERE username = 'viewer'").run();
  const r = await callJson(server, "GET", "/api/users", { session: sessions.readonly });
  assertEquals(r.status, 403);
});
