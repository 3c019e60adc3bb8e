import { assertEquals, assertThrows, ok } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createApiTokensRepo } from "../../../db/api_tokens_repo.ts";
import { createAuditRepo } from "../../../db/audit_repo.ts";
import { createAudit } from "../../../mod/core/audit.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { covers, createApiTokens, isKnownExpression } from "../../../mod/identity/api_tokens.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { systemRandom } from "../../../mod/core/random.ts";

const DAY = 86_400_000;
const CTX = { actor: { type: "user" as const, id: "u1", name: "alice" }, clientIp: "127.0.0.1" };
const ADMIN = { id: "user:u1", permissions: ["*"] };

async function setup(enabled = true) {
  const store = await testStore();
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  const repo = createApiTokensRepo(store.db);
  const audit = createAudit({ repo: createAuditRepo(store.db), clock });
  let on = enabled;
  const users = new Map<string, readonly string[]>([["u1", ["*"]]]);
  const tokens = createApiTokens({
    repo,
    clock,
    random: systemRandom,
    audit,
    transaction: store.transaction,
    enabled: () => on,
    userPermissions: (id) => users.get(id),
  });
  return {
    store,
    clock,
    repo,
    tokens,
    users,
    setEnabled: (v: boolean) => {
      on = v;
    },
    [Symbol.asyncDispose]: () => store[Symbol.asyncDispose](),
  };
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return `${err.status} ${err.code}`;
    throw err;
  }
  return "no error";
}

Deno.test("creating a token is refused while the management API is disabled", async () => {
  await using t = await setup(false);
  assertEquals(
    code(() => t.tokens.create({ note: "ci", permissions: ["read:sites"] }, ADMIN, CTX)),
    "403 MANAGEMENT_API_DISABLED",
  );
  assertEquals(t.repo.list().length, 0);
});

Deno.test("a token lives 90 days by default and at most 365", async () => {
  await using t = await setup();
  const now = t.clock.now();
  const a = t.tokens.create({ note: "a", permissions: ["read:sites"] }, ADMIN, CTX);
  assertEquals(Date.parse(a.item.expires_at!), now + 90 * DAY);
  const b = t.tokens.create(
    { note: "b", permissions: ["read:sites"], expires_in_days: 365 },
    ADMIN,
    CTX,
  );
  assertEquals(Date.parse(b.item.expires_at!), now + 365 * DAY);
  assertEquals(
    code(() =>
      t.tokens.create({ note: "c", permissions: ["read:sites"], expires_in_days: 366 }, ADMIN, CTX)
    ),
    "400 API_TOKEN_LIFETIME_TOO_LONG",
  );
  const far = new Date(now + 400 * DAY).toISOString();
  assertEquals(
    code(() => t.tokens.create({ note: "d", permissions: [], expires_at: far }, ADMIN, CTX)),
    "400 API_TOKEN_LIFETIME_TOO_LONG",
  );
  const past = new Date(now - DAY).toISOString();
  assertEquals(
    code(() => t.tokens.create({ note: "e", permissions: [], expires_at: past }, ADMIN, CTX)),
    "400 BAD_REQUEST",
  );
  const at = new Date(now + 10 * DAY).toISOString();
  const f = t.tokens.create({ note: "f", permissions: [], expires_at: at }, ADMIN, CTX);
  assertEquals(f.item.expires_at, at);
  assertEquals(t.repo.list().length, 3);
});

Deno.test("a non-expiring token is refused and nothing is created", async () => {
  await using t = await setup();
  assertEquals(
    code(() =>
      t.tokens.create({ note: "x", permissions: ["read:sites"], non_expiring: true }, ADMIN, CTX)
    ),
    "501 API_TOKEN_CONFIRMATION_UNAVAILABLE",
  );
  assertEquals(t.repo.list().length, 0);
});

Deno.test("the secret is returned once and only its hash is stored", async () => {
  await using t = await setup();
  const { token, item } = t.tokens.create({ note: "n", permissions: ["read:logs"] }, ADMIN, CTX);
  ok(/^waf_[A-Za-z0-9_-]{43}$/.test(token));
  const row = t.repo.get(item.id)!;
  ok(row.secret_hash !== token && !row.secret_hash.includes(token.slice(4)));
  assertEquals(row.secret_hash.length, 64);
  const dump = JSON.stringify(t.store.db.prepare("SELECT * FROM api_tokens").all()) +
    JSON.stringify(t.store.db.prepare("SELECT * FROM audit_log").all());
  ok(!dump.includes(token.slice(4)), "the secret is nowhere in the store");
  ok(!JSON.stringify(t.tokens.get(item.id)).includes(token.slice(4)));
  ok(!JSON.stringify(t.tokens.list()).includes(token.slice(4)));
});

Deno.test("unknown permissions and wider grants are refused", async () => {
  await using t = await setup();
  assertEquals(
    code(() => t.tokens.create({ note: "x", permissions: ["read:nothing"] }, ADMIN, CTX)),
    "400 BAD_REQUEST",
  );
  const narrow = { id: "token:t1", permissions: ["read:sites", "read:logs"] };
  assertEquals(
    code(() => t.tokens.create({ note: "x", permissions: ["write:sites"] }, narrow, CTX)),
    "403 FORBIDDEN",
  );
  assertEquals(
    code(() => t.tokens.create({ note: "x", permissions: ["read:*"] }, narrow, CTX)),
    "403 FORBIDDEN",
  );
  assertEquals(
    code(() => t.tokens.create({ note: "x", permissions: ["*"] }, narrow, CTX)),
    "403 FORBIDDEN",
  );
  const ok1 = t.tokens.create({ note: "x", permissions: ["read:sites"] }, narrow, CTX);
  assertEquals(ok1.item.permissions, ["read:sites"]);
  assertEquals(ok1.item.created_by, "token:t1");
});

Deno.test("covers() treats wildcards as wider than any list of identifiers", () => {
  ok(covers(["*"], "*"));
  ok(covers(["read:*"], "read:sites"));
  ok(covers(["read:*"], "read:*"));
  ok(!covers(["read:sites", "read:logs"], "read:*"));
  ok(!covers(["read:*"], "write:sites"));
  ok(isKnownExpression("read:*") && isKnownExpression("manage:api_tokens"));
  ok(!isKnownExpression("nope:*") && !isKnownExpression("read:nope") && !isKnownExpression(""));
});

Deno.test("authenticate() honours revocation, expiry and the management API switch", async () => {
  await using t = await setup();
  const { token, item } = t.tokens.create(
    { note: "n", permissions: ["read:sites"], expires_in_days: 1 },
    ADMIN,
    CTX,
  );
  const p = t.tokens.authenticate(token, "10.0.0.1");
  assertEquals(p?.id, item.id);
  assertEquals(p?.permissions, ["read:sites"]);
  assertEquals(t.tokens.get(item.id).last_used_ip, "10.0.0.1");
  // One character changed (never to itself, which made this check fail one run in 64).
  const altered = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
  assertEquals(t.tokens.authenticate(altered, "x"), undefined);
  assertEquals(t.tokens.authenticate("waf_short", "x"), undefined);
  t.setEnabled(false);
  assertEquals(t.tokens.authenticate(token, "x"), undefined);
  t.setEnabled(true);
  t.clock.advance(DAY);
  assertEquals(t.tokens.authenticate(token, "x"), undefined, "expired");
  const other = t.tokens.create({ note: "m", permissions: ["read:sites"] }, ADMIN, CTX);
  ok(t.tokens.authenticate(other.token, "x"));
  t.tokens.revoke(other.item.id, CTX);
  assertEquals(t.tokens.authenticate(other.token, "x"), undefined, "revoked");
  assertEquals(t.tokens.get(other.item.id).revoked, true);
});

Deno.test("last use is recorded at most once a minute", async () => {
  await using t = await setup();
  const { token, item } = t.tokens.create({ note: "n", permissions: [] }, ADMIN, CTX);
  t.tokens.authenticate(token, "10.0.0.1");
  const first = t.tokens.get(item.id).last_used_at;
  t.clock.advance(30_000);
  t.tokens.authenticate(token, "10.0.0.2");
  assertEquals(t.tokens.get(item.id).last_used_at, first);
  assertEquals(t.tokens.get(item.id).last_used_ip, "10.0.0.1");
  t.clock.advance(30_000);
  t.tokens.authenticate(token, "10.0.0.3");
  assertEquals(t.tokens.get(item.id).last_used_ip, "10.0.0.3");
});

Deno.test("creation and revocation are audited without the secret", async () => {
  await using t = await setup();
  const { item } = t.tokens.create({ note: "n", permissions: [] }, ADMIN, CTX);
  t.tokens.revoke(item.id, CTX);
  const actions = t.store.db.prepare("SELECT action, target, result FROM audit_log ORDER BY id")
    .all().map((r) => `${r.action} ${r.target} ${r.result}`);
  assertEquals(actions, [
    `api_token.create api_token:${item.id} success`,
    `api_token.revoke api_token:${item.id} success`,
  ]);
  assertThrows(() => t.tokens.revoke("missing", CTX), /No API token/);
});

Deno.test("a token acts only within what its creator holds now", async () => {
  await using t = await setup();
  const { token } = t.tokens.create(
    { note: "n", permissions: ["read:sites", "write:sites"] },
    ADMIN,
    CTX,
  );
  assertEquals(t.tokens.authenticate(token, "x")?.permissions, ["read:sites", "write:sites"]);
  t.users.set("u1", ["read:*"]);
  assertEquals(t.tokens.authenticate(token, "x")?.permissions, ["read:sites"], "role narrowed");
  t.users.delete("u1");
  assertEquals(t.tokens.authenticate(token, "x"), undefined, "creator disabled or gone");
});

Deno.test("a token minted by a token dies with its parent", async () => {
  await using t = await setup();
  const parent = t.tokens.create({ note: "p", permissions: ["read:*"] }, ADMIN, CTX);
  const child = t.tokens.create(
    { note: "c", permissions: ["read:logs"] },
    { id: `token:${parent.item.id}`, permissions: ["read:*"] },
    CTX,
  );
  assertEquals(t.tokens.authenticate(child.token, "x")?.permissions, ["read:logs"]);
  t.tokens.revoke(parent.item.id, CTX);
  assertEquals(t.tokens.authenticate(child.token, "x"), undefined);
});
