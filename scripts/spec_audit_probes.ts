/**
 * The limits of specification section 8 against the constants that enforce them, and requests
 * against an in-process server for what only an answer shows: health probes, setup artefacts,
 * the codes and statuses of section 7, the block-page defaults of 2.6, and the error object
 * (`code`, `message`, `trace_id`, `event_id`) on every route for malformed JSON, a body of the
 * wrong type, an unknown id, a missing CSRF value and a missing permission.
 */
import { DEFAULT_LIFETIME_DAYS, MAX_LIFETIME_DAYS } from "../mod/identity/api_token_lifetime.ts";
import { PASSWORD_MIN } from "../mod/identity/password_policy.ts";
import { SETUP_TTL_MS } from "../mod/identity/setup_token.ts";
import { BATCH_BOUND_MS, IDLE_LIMIT_MS, SLIDE_MS } from "../mod/identity/token_cleanup.ts";
import { USERNAME_MAX, USERNAME_MIN } from "../mod/identity/username.ts";
import { SCHEMA_VERSION } from "../db/migrations.ts";
import { LANGUAGES } from "../cli/i18n/i18n.ts";
import {
  ADMIN,
  call,
  callJson,
  completeSetup,
  createUser,
  login,
  type Session,
} from "../tests/_helpers/identity.ts";
import { createTestApp, type TestServer } from "../tests/_helpers/server.ts";
import { errorObject, raw, sweepErrorObjects } from "../tests/_helpers/error_sweep.ts";
import type { Check, Finding } from "./spec_audit_text.ts";

const DAY = 86_400_000;

/** Settings whose read answer is refused on purpose when written back, and why. */
const ROUND_TRIP_REFUSED = new Map([
  [
    "/api/ai/config",
    " (on purpose: its read-only fields and the masked key hint are refused, docs/ai.md; the specification shows no AI fields)",
  ],
]);

const limit = (name: string, want: unknown, got: unknown): Check => () => ({
  area: "limit",
  name,
  ok: JSON.stringify(want) === JSON.stringify(got),
  detail: `spec ${JSON.stringify(want)}, code ${JSON.stringify(got)}`,
});

export const LIMIT_CHECKS: readonly Check[] = [
  limit("username length", [3, 32], [USERNAME_MIN, USERNAME_MAX]),
  limit("password minimum length", 10, PASSWORD_MIN),
  limit("token default lifetime (days)", 90, DEFAULT_LIFETIME_DAYS),
  limit("token maximum lifetime (days)", 365, MAX_LIFETIME_DAYS),
  limit("token inactivity removal (days)", 180, IDLE_LIMIT_MS / DAY),
  limit("token cleanup slide (minutes)", 10, SLIDE_MS / 60_000),
  limit("token cleanup batch bound (minutes)", 60, BATCH_BOUND_MS / 60_000),
  limit("setup URL validity (minutes)", 10, SETUP_TTL_MS / 60_000),
  limit("schema version", 5, SCHEMA_VERSION),
  limit("waf lang set languages", ["en", "zh-CN"], LANGUAGES),
];

type Body = Record<string, unknown>;

function expect(
  area: string,
  name: string,
  res: { status: number; body: Body },
  status: number,
  code?: string,
): Finding {
  const problem = res.status !== status
    ? `status ${res.status} (${JSON.stringify(res.body).slice(0, 160)}), expected ${status}`
    : errorObject(res.body, code);
  return { area, name, ok: problem === undefined, detail: problem ?? `${status} ${code ?? ""}` };
}

/** Section 2.3 and 5.2: the secret once, metadata only afterwards, and the bearer accepted. */
async function probeTokens(server: TestServer, admin: Session): Promise<Finding[]> {
  const created = await callJson(server, "POST", "/api/system/api-tokens", {
    session: admin,
    body: { note: "audit", permissions: ["read:users"] },
  });
  const secret = created.body.token;
  const id = (created.body.item as Body | undefined)?.id;
  const list = await callJson(server, "GET", "/api/system/api-tokens", { session: admin });
  const one = await callJson(server, "GET", `/api/system/api-tokens/${id}`, { session: admin });
  const leaks = typeof secret === "string" &&
    (JSON.stringify(list.body).includes(secret) || JSON.stringify(one.body).includes(secret));
  const bearer = await callJson(server, "GET", "/api/users", {
    headers: { authorization: `Bearer ${secret}` },
  });
  const expiry = (created.body.item as Body | undefined)?.expires_at;
  const days = typeof expiry === "string"
    ? Math.round((Date.parse(expiry) - server.clock.now()) / DAY)
    : undefined;
  return [
    {
      area: "api token",
      name: "secret returned once at creation",
      ok: created.status === 201 && typeof secret === "string",
      detail: `${created.status}`,
    },
    {
      area: "api token",
      name: "list and read carry no secret",
      ok: list.status === 200 && one.status === 200 && !leaks,
      detail: `${list.status} ${one.status} leaks=${leaks}`,
    },
    { area: "api token", name: "default lifetime 90 days", ok: days === 90, detail: `${days}` },
    {
      area: "api token",
      name: "Authorization: Bearer accepted",
      ok: bearer.status === 200,
      detail: `${bearer.status}`,
    },
  ];
}

/** Section 4.1: `monitor.prometheus.public: true` makes the configured path anonymous. */
export async function probePublicPrometheus(): Promise<Finding> {
  await using app = await createTestApp({
    config: { monitor: { prometheus: { public: true, path: "/scrape" } } },
  });
  const res = await app.api("/scrape");
  const text = await res.text();
  return {
    area: "monitor",
    name: "monitor.prometheus.public: true",
    ok: res.status === 200 && /# (HELP|TYPE) /.test(text),
    detail: `${res.status} ${text.slice(0, 60).replace(/\n/g, " ")}`,
  };
}

export async function probeServer(server: TestServer): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const p of ["/health", "/health/live", "/health/ready", "/health/cluster"]) {
    const r = await callJson(server, "GET", p);
    out.push({
      area: "health probe",
      name: `GET ${p}`,
      ok: r.status === 200 && /json/.test(r.res.headers.get("content-type") ?? ""),
      detail: `${r.status} ${JSON.stringify(r.body).slice(0, 80)}`,
    });
  }
  const info = await Deno.stat(`${server.dir}/runtime/setup.url`);
  out.push({
    area: "setup",
    name: "setup.url mode 0600",
    ok: (info.mode! & 0o777) === 0o600,
    detail: (info.mode! & 0o777).toString(8),
  });
  const status = await callJson(server, "GET", "/api/setup/status");
  const leaked = /token|url/i.test(JSON.stringify(status.body));
  out.push({
    area: "setup",
    name: "GET /api/setup/status reveals no token or URL",
    ok: status.status === 200 && !leaked,
    detail: JSON.stringify(status.body),
  });
  await completeSetup(server);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  await createUser(server, "viewer", "Glacier-Moth-42", "readonly");
  const viewer = await login(server, "viewer", "Glacier-Moth-42");
  const as = (method: string, path: string, body?: unknown, session = admin) =>
    callJson(server, method, path, { session, body });

  out.push(
    expect(
      "error code",
      "POST /api/backup/export",
      await as("POST", "/api/backup/export", {}),
      501,
      "BACKUP_EXPORT_NOT_IMPLEMENTED",
    ),
    expect(
      "error code",
      "POST /api/backup/restore",
      await as("POST", "/api/backup/restore", {}),
      501,
      "BACKUP_RESTORE_NOT_IMPLEMENTED",
    ),
    expect(
      "error code",
      "GET /api/system/updates",
      await as("GET", "/api/system/updates"),
      501,
      "NOT_IMPLEMENTED",
    ),
    expect(
      "error code",
      "PUT /api/system/ota enabled",
      await as("PUT", "/api/system/ota", { enabled: true }),
      501,
      "OTA_UPDATES_UNAVAILABLE",
    ),
    expect(
      "error code",
      "POST /api/users bad username",
      await as("POST", "/api/users", {
        username: " viewer2",
        password: "Glacier-Moth-42",
        role: "readonly",
      }),
      400,
      "USERNAME_INVALID",
    ),
    expect(
      "error code",
      "POST /api/users bad role",
      await as("POST", "/api/users", {
        username: "viewer2",
        password: "Glacier-Moth-42",
        role: "Admin",
      }),
      400,
      "ROLE_INVALID",
    ),
    expect(
      "error code",
      "POST /api/system/api-tokens non-expiring",
      await as("POST", "/api/system/api-tokens", {
        note: "x",
        permissions: ["read:sites"],
        non_expiring: true,
      }),
      501,
      "API_TOKEN_CONFIRMATION_UNAVAILABLE",
    ),
    expect(
      "error code",
      "POST /api/sites malformed JSON",
      await raw(server, "POST", "/api/sites", "{", admin),
      400,
      "BAD_REQUEST",
    ),
  );

  out.push(...await probeTokens(server, admin));
  const bp = await as("GET", "/api/block-pages/settings");
  const want = { template_id: "minimal", custom_enabled: false, custom_html: "" };
  out.push({
    area: "block_page",
    name: "defaults",
    ok: JSON.stringify(bp.body) === JSON.stringify(want),
    detail: JSON.stringify(bp.body),
  });
  // What GET answers can be written back with PUT: every settings document, and an account.
  const users = (await as("GET", "/api/users")).body.items as Array<{ id: string }>;
  const documents = server.routes
    .filter((r) => r.method === "PUT" && !r.path.includes(":"))
    .filter((r) => server.routes.some((g) => g.method === "GET" && g.path === r.path))
    .map((r) => r.path);
  for (const path of [...documents, `/api/users/${users[0]!.id}`]) {
    const read = await as("GET", path);
    const back = await as("PUT", path, read.body);
    const deliberate = ROUND_TRIP_REFUSED.get(path);
    out.push({
      area: "round trip",
      name: `GET then PUT ${path.replace(users[0]!.id, "{id}")}`,
      ok: back.status === 200 || (deliberate !== undefined && back.status === 400),
      detail: back.status === 200
        ? "200"
        : `${back.status} ${JSON.stringify(back.body).slice(0, 120)}${deliberate ?? ""}`,
    });
  }

  out.push(...await sweepErrorObjects(server, server.routes, { admin, viewer }));
  await call(server, "POST", "/api/auth/logout", { session: viewer }).then((r) => r.body?.cancel());
  return out;
}
