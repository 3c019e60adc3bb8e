/**
 * The authorisation matrix of user management (extends route_inventory_test.ts's matrix past the
 * guard): every user-management route of the composed server x every token scope, with the
 * expected answer written out per scope, escalations included (a read:users+write:users token
 * creating or promoting an administrator, or setting an administrator's password, gets 403
 * `PERMISSION_ESCALATION`). A new route under /api/users fails the test until it has cases here.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { mintToken, withToken } from "../../_helpers/api_access.ts";
import { ADMIN, completeSetup, createUser, login } from "../../_helpers/identity.ts";
import { createTestApp, type TestTarget } from "../../_helpers/server.ts";
import { OPERATOR } from "../../../mod/identity/account_authority.ts";

const ROLES = {
  admin: ["*"],
  readonly: ["read:*", "read:cluster"],
  usermgr: ["read:users", "write:users"],
  auditor: ["read:audit", "read:users"],
} as const;
type Role = keyof typeof ROLES;
const ROLE_NAMES = Object.keys(ROLES) as Role[];

/**
 * Each scope with what it should be able to do, written out rather than computed: `read` and
 * `write` pass the guard of `read:users` and `write:users`; `holds` lists the roles whose every
 * permission the scope holds (a wildcard is held only by an equal or wider wildcard).
 */
const SCOPES: readonly { perms: string[]; read: boolean; write: boolean; holds: Role[] }[] = [
  { perms: ["read:users"], read: true, write: false, holds: [] },
  { perms: ["write:users"], read: false, write: true, holds: [] },
  { perms: ["read:users", "write:users"], read: true, write: true, holds: ["usermgr"] },
  {
    perms: ["read:*", "write:users"],
    read: true,
    write: true,
    holds: ["readonly", "usermgr", "auditor"],
  },
  {
    perms: ["read:users", "read:audit", "write:users"],
    read: true,
    write: true,
    holds: [
      "usermgr",
      "auditor",
    ],
  },
  { perms: ["read:*"], read: true, write: false, holds: [] },
  { perms: ["write:*"], read: false, write: true, holds: [] },
  { perms: ["manage:api_tokens"], read: false, write: false, holds: [] },
  { perms: ["read:sites", "write:sites"], read: false, write: false, holds: [] },
  { perms: ["*"], read: true, write: true, holds: [...ROLE_NAMES] },
];
type Scope = typeof SCOPES[number];

const NEW_PASSWORD = "Harbour-Quill-73";

/** One call of a case: what to send, and the answer it should get with `scope`. */
interface Probe {
  readonly label: string;
  readonly path: string;
  readonly body?: unknown;
  /** The success status, or the refusal `[status, code]` expected for this scope. */
  readonly expect: number | readonly [number, string];
  /** Puts the target back after a success (another case reuses it). */
  readonly restore?: () => Promise<void>;
}

const FORBIDDEN = [403, "FORBIDDEN"] as const;
const ESCALATION = [403, "PERMISSION_ESCALATION"] as const;

/** Refused by the guard, by the authority rule, or `ok`. */
const judge = (allowed: boolean, holds: boolean, ok: number) =>
  !allowed ? FORBIDDEN : holds ? ok : ESCALATION;

interface Targets {
  /** One account per role, made for this scope. */
  readonly ids: Record<Role, string>;
  readonly tag: string;
}

async function targets(server: TestTarget, tag: string): Promise<Targets> {
  const ids = {} as Record<Role, string>;
  for (const role of ROLE_NAMES) {
    ids[role] = await createUser(server, `${role}-${tag}`, "Glacier-Moth-42", role);
  }
  return { ids, tag };
}

const restoreTo = (server: TestTarget, id: string, change: Record<string, unknown>) => async () => {
  await server.identity.users.update(id, change, {
    actor: { type: "cli", name: "test" },
    caller: OPERATOR,
  });
};

/** The probes of each user-management route (method and path pattern) for one scope. */
function cases(server: TestTarget, s: Scope, t: Targets): Record<string, Probe[]> {
  const held = (r: Role) => s.holds.includes(r);
  const puts: Probe[] = [];
  for (const role of ROLE_NAMES) {
    const id = t.ids[role];
    const manage = judge(s.write, held(role), 200);
    puts.push(
      {
        label: `password of ${role}`,
        path: `/api/users/${id}`,
        body: { password: NEW_PASSWORD },
        expect: manage,
      },
      {
        label: `disable ${role}`,
        path: `/api/users/${id}`,
        body: { disabled: true },
        expect: manage,
        restore: restoreTo(server, id, { disabled: false }),
      },
      {
        label: `rename ${role}`,
        path: `/api/users/${id}`,
        body: { username: `${role}-${t.tag}-r` },
        expect: manage,
        restore: restoreTo(server, id, { username: `${role}-${t.tag}` }),
      },
    );
    for (const to of ROLE_NAMES.filter((r) => r !== role)) {
      puts.push({
        label: `${role} to ${to}`,
        path: `/api/users/${id}`,
        body: { role: to },
        expect: judge(s.write, held(role) && held(to), 200),
        restore: restoreTo(server, id, { role }),
      });
    }
  }
  const twoFactor = (action: string, body: unknown): Probe[] =>
    ROLE_NAMES.map((role) => ({
      label: `2fa ${action} of ${role}`,
      path: `/api/users/${t.ids[role]}/2fa/${action}`,
      body,
      // Session-only: no token passes, whatever it holds.
      expect: FORBIDDEN,
    }));
  return {
    "GET /api/users": [{ label: "list", path: "/api/users", expect: s.read ? 200 : FORBIDDEN }],
    "GET /api/users/:id": [{
      label: "read",
      path: `/api/users/${t.ids.usermgr}`,
      expect: s.read ? 200 : FORBIDDEN,
    }],
    "POST /api/users": ROLE_NAMES.map((role) => ({
      label: `create ${role}`,
      path: "/api/users",
      body: { username: `new-${role}-${t.tag}`, password: NEW_PASSWORD, role },
      expect: judge(s.write, held(role), 201),
    })),
    "PUT /api/users/:id": puts,
    "POST /api/users/:id/2fa/setup": twoFactor("setup", {}),
    "POST /api/users/:id/2fa/enable": twoFactor("enable", { code: "123456" }),
    "POST /api/users/:id/2fa/disable": twoFactor("disable", { password: NEW_PASSWORD }),
    "POST /api/users/:id/2fa/recover": twoFactor("recover", { password: NEW_PASSWORD }),
    "GET /api/users/:id/2fa/recovery-codes": twoFactor("recovery-codes", undefined),
    "POST /api/users/:id/2fa/recovery-codes": twoFactor("recovery-codes", {
      password: NEW_PASSWORD,
    }),
  };
}

const isUserRoute = (path: string) => path === "/api/users" || path.startsWith("/api/users/");

Deno.test("every user-management route answers every token scope as expected, escalations refused", async () => {
  await using server = await createTestApp({
    config: { apisec: { permissions: ROLES, management_api: { enabled: true } } },
  });
  await completeSetup(server);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const routes = server.routes.filter((r) => isUserRoute(r.path)).map((r) =>
    `${r.method} ${r.path}`
  );
  const report: string[] = [];
  let calls = 0;
  for (const [i, scope] of SCOPES.entries()) {
    const { token } = await mintToken(server, admin, { note: `s${i}`, permissions: scope.perms });
    const table = cases(server, scope, await targets(server, `s${i}`));
    assertEquals(Object.keys(table).sort(), [...routes].sort(), "every user route has cases");
    for (const [route, probes] of Object.entries(table)) {
      const method = route.slice(0, route.indexOf(" "));
      for (const p of probes) {
        const r = await withToken(server, token, method, p.path, p.body);
        calls++;
        const got = typeof p.expect === "number"
          ? r.status
          : [r.status, (r.body.error as { code?: string } | undefined)?.code];
        if (JSON.stringify(got) !== JSON.stringify(p.expect)) {
          report.push(
            `[${scope.perms.join(" ")}] ${route} ${p.label}: expected ${
              JSON.stringify(p.expect)
            }, got ${JSON.stringify(got)} ${JSON.stringify(r.body.error ?? "")}`,
          );
        }
        if (r.status < 300) await p.restore?.();
      }
    }
  }
  assertEquals(report, []);
  assertEquals(calls > 300, true, `${calls} calls`);
});
