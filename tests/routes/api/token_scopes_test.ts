/**
 * API-token scopes over every guarded route of the composed server (every route family, picked
 * up from `server.routes`): a token passes the guard exactly where one of its permissions grants
 * the route's declared permission, never on session-only routes, and otherwise gets 403.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { mintToken, TOKENS_ON, withToken } from "../../_helpers/api_access.ts";
import { ADMIN, completeSetup, login } from "../../_helpers/identity.ts";
import { createTestApp } from "../../_helpers/server.ts";
import { grants } from "../../../mod/identity/permissions.ts";

const SCOPES: readonly (readonly string[])[] = [
  ["read:sites"],
  ["read:*"],
  ["write:sites", "read:logs", "read:audit"],
  ["manage:api_tokens"],
  ["read:system", "write:system"],
  ["*"],
];
const GUARD_CODES = new Set(["UNAUTHORIZED", "FORBIDDEN", "CSRF_INVALID"]);
const concrete = (path: string) => path.replace(/:[A-Za-z_]+/g, "no-such-id");

Deno.test("every guarded route checks a bearer token's permissions and refuses tokens on session-only routes", async () => {
  await using server = await createTestApp({ config: TOKENS_ON });
  await completeSetup(server);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const tokens = [];
  for (const permissions of SCOPES) {
    tokens.push({
      permissions,
      token: (await mintToken(server, admin, { note: permissions.join(" "), permissions })).token,
    });
  }
  const report: string[] = [];
  const families = new Set<string>();
  for (const r of server.routes) {
    if (r.access.kind !== "permission") continue;
    families.add(r.path.split("/")[2]!);
    const wanted = [r.access.permission];
    for (const { permissions, token } of tokens) {
      const allowed = !r.access.sessionOnly && wanted.some((p) => grants(permissions, p));
      const res = await withToken(
        server,
        token,
        r.method,
        concrete(r.path),
        r.method === "GET" ? undefined : {},
      );
      const code = (res.body.error as { code?: string } | undefined)?.code;
      const label = `[${permissions.join(" ")}] ${r.method} ${r.path} → ${res.status} ${
        code ?? ""
      }`;
      if (!allowed) {
        if (res.status !== 403 || code !== "FORBIDDEN") report.push(`expected 403: ${label}`);
      } else if (code !== undefined && GUARD_CODES.has(code)) {
        report.push(`expected to pass the guard: ${label}`);
      }
    }
  }
  assertEquals(report, []);
  // The families this issue names are all there (others are picked up as they are added).
  for (const family of ["sites", "users", "audit", "logs", "system", "notifications", "backup"]) {
    assertEquals(families.has(family), true, family);
  }
});
