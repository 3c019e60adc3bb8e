/**
 * Protection-control test helpers: the data plane's management routes mounted in-process
 * behind a guard that grants the permissions a test names (until the identity guard is
 * composed into the server), plus shortcuts to send traffic and read its chain.
 */
import { hostFetch } from "./data_client.ts";
import type { TestServer } from "./server.ts";
import { siteInput, SYSTEM } from "./sites.ts";
import { createManagementApp } from "../../routes/api/management.ts";
import { AppError } from "../../mod/core/errors.ts";
import type { Guard } from "../../routes/api/route.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createPolicyObjectsRepo } from "../../db/policy_objects_repo.ts";
import { type Db, transaction } from "../../db/store.ts";
import type { Policy } from "../../mod/data_plane/policy.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";

/** Grants exactly the permissions in `x-test-permissions` (space separated; `*` and `family:*`). */
export const testGuard: Guard = (c, access) => {
  if (access.kind === "public") return Promise.resolve();
  const held = (c.req.header("x-test-permissions") ?? "").split(" ").filter(Boolean);
  if (held.length === 0) {
    return Promise.reject(new AppError(401, "UNAUTHORIZED", "Authentication required"));
  }
  c.set("principal", { kind: "user", id: "u1", name: "tester", permissions: held });
  if (access.kind !== "permission") {
    return Promise.reject(new AppError(403, "FORBIDDEN", "Forbidden"));
  }
  const need = access.permission;
  const family = need.split(":")[0];
  const ok = held.some((p) => p === "*" || p === need || p === `${family}:*`);
  return ok
    ? Promise.resolve()
    : Promise.reject(new AppError(403, "FORBIDDEN", `Missing permission "${need}"`));
};

export interface Api {
  (method: string, path: string, body?: unknown, permissions?: string): Promise<Response>;
}

/** Calls the server's data-plane management routes in-process with the given permissions. */
export function apiFor(s: TestServer): Api {
  const app = createManagementApp({
    logger: createMemoryLogger(),
    random: systemRandom,
    routes: s.dataPlane.routes,
    guard: testGuard,
  });
  return (method, path, body, permissions = "*") =>
    Promise.resolve(app.request(path, {
      method,
      headers: { "content-type": "application/json", "x-test-permissions": permissions },
      body: body === undefined ? undefined : JSON.stringify(body),
    }, { remoteAddr: { hostname: "127.0.0.1", port: 1 } }));
}

/** Creates a site that believes X-Forwarded-For from the loopback peer (tests pick client IPs). */
export function addSite(s: TestServer, upstream: string, overrides: Record<string, unknown> = {}) {
  return s.dataPlane.sites.create(
    siteInput({ upstreams: [upstream], trusted_proxies: ["127.0.0.1/32"], ...overrides }),
    SYSTEM,
  );
}

/** Turns on API security's HS256 token check for `routes` (any token signed with a test secret). */
export async function requireTokens(
  s: TestServer,
  routes: ReadonlyArray<{ id: string; method: string; path_pattern: string }>,
): Promise<void> {
  const put = await apiFor(s)("PUT", "/api/apisec/config", {
    auth: {
      enabled: true,
      algorithms: ["HS256"],
      secret: "a-shared-secret-of-32-characters!",
      routes,
    },
  });
  if (put.status !== 200) throw new Error(`apisec config: ${put.status} ${await put.text()}`);
}

export interface Hit {
  readonly status: number;
  readonly traceId: string;
  readonly body: string;
  readonly headers: Headers;
  readonly chain: Array<{ check: string; result: string; rule?: string }>;
  readonly action: string;
  /** The access-log record's finding (class, location, evidence, rule), or null. */
  readonly finding: Record<string, unknown> | null;
}

/** Sends one request from `ip` to the data plane and returns it with its access-log chain. */
export async function hit(
  s: TestServer,
  path: string,
  options: { ip?: string; host?: string; init?: RequestInit } = {},
): Promise<Hit> {
  const headers = new Headers(options.init?.headers);
  if (options.ip) headers.set("x-forwarded-for", options.ip);
  if (!headers.has("user-agent")) {
    headers.set("user-agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0");
  }
  const r = await hostFetch(`${s.dataUrl}${path}`, options.host ?? "shop.test", {
    ...options.init,
    headers,
    redirect: "manual",
  });
  const body = await r.text();
  const traceId = r.headers.get("x-waf-trace-id") ?? "";
  const row = await s.dataPlane.accessLog.get(traceId);
  const rec = row ? JSON.parse(row.record) : { chain: [], action: "" };
  return {
    status: r.status,
    traceId,
    body,
    headers: r.headers,
    chain: rec.chain,
    action: rec.action,
    finding: rec.finding ?? null,
  };
}

/** The chain without timings, as `check:result[:rule]` strings. */
export function steps(h: Hit): string[] {
  return h.chain.map((c) => [c.check, c.result, c.rule].filter((x) => x !== undefined).join(":"));
}

/**
 * Stores `n` global IP-list entries in one transaction (10.x.y.z/32, every tenth an allow
 * entry) and rebuilds the policy once: a large list without `n` API calls and `n` rebuilds.
 * Entry `i`'s address is {@link seededIp}(i).
 */
export function seedIpEntries(s: { db: Db; dataPlane: { policy: Policy } }, n: number): void {
  const repo = createPolicyObjectsRepo(s.db);
  const now = Date.now();
  transaction(s.db, () => {
    for (let i = 0; i < n; i++) {
      repo.insert({
        id: `seed-ip-${i}`,
        kind: KIND.ip,
        site_id: null,
        position: i + 1,
        config: JSON.stringify({
          action: i % 10 === 9 ? "allow" : "block",
          cidr: `${seededIp(i)}/32`,
          site_id: null,
          path_prefix: null,
          expires_at: null,
          note: "",
        }),
        created_at: now,
        updated_at: now,
      });
    }
  });
  s.dataPlane.policy.rebuild();
}

/** The address of seeded entry `i` (see {@link seedIpEntries}). */
export function seededIp(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}
