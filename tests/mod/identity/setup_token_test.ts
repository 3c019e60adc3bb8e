import { assertEquals, assertMatch, assertRejects, ok } from "../../_helpers/assert.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { testStore } from "../../_helpers/store.ts";
import { createSettingsRepo } from "../../../db/settings_repo.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import {
  issueSetupToken,
  SETUP_KEYS,
  SETUP_TTL_MS,
  setupReceipt,
  SetupTokenError,
  setupTokenProblem,
  setupUrlPath,
} from "../../../mod/identity/setup_token.ts";
import { sha256Hex } from "../../../mod/core/digest.ts";

const STRONG = "k3T9_vQx-2LmZpR8wYb4NcHd6JfGs1Ua0EoIi7Xy5Wt";

Deno.test("setupTokenProblem() accepts 32+ random URL-safe characters", () => {
  assertEquals(setupTokenProblem(STRONG), undefined);
  assertEquals(setupTokenProblem(STRONG.slice(0, 32)), undefined);
  assertEquals(
    setupTokenProblem("0123456789abcdef".repeat(2).split("").reverse().join("") + "f3a9c2e1"),
    undefined,
  );
});

Deno.test("setupTokenProblem() refuses short, malformed and predictable tokens", () => {
  assertMatch(setupTokenProblem(STRONG.slice(0, 31))!, /32 to 256/);
  assertMatch(setupTokenProblem(STRONG.slice(0, 31) + "=")!, /URL-safe/);
  assertMatch(setupTokenProblem(STRONG.slice(0, 31) + " ")!, /URL-safe/);
  assertMatch(setupTokenProblem(STRONG.slice(0, 31) + "\u00e9")!, /URL-safe/);
  assertMatch(setupTokenProblem("a".repeat(40))!, /predictable/);
  assertMatch(setupTokenProblem("abcd".repeat(10))!, /predictable/);
  assertMatch(setupTokenProblem("ab".repeat(20))!, /predictable/);
});

Deno.test("setup token problems never quote the value", () => {
  const bad = "secretvalue".repeat(3) + "=";
  const problem = setupTokenProblem(bad)!;
  ok(!problem.includes("secretvalue"));
  ok(!new SetupTokenError(problem).message.includes("secretvalue"));
});

Deno.test("setupReceipt() is short, stable and not the token or its stored hash", () => {
  const r = setupReceipt(STRONG);
  assertMatch(r, /^[0-9a-f]{4}-[0-9a-f]{4}$/);
  assertEquals(setupReceipt(STRONG), r);
  ok(!sha256Hex(STRONG).startsWith(r.replace("-", "")));
});

Deno.test("issueSetupToken() stores only the hash and writes setup.url with mode 0600", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  const settings = createSettingsRepo(store.db);
  const now = Date.UTC(2026, 0, 1);
  const issued = await issueSetupToken({
    settings,
    dataDir: dir,
    baseUrl: "http://127.0.0.1:9443/",
    now,
    random: systemRandom,
  });
  assertEquals(issued.path, setupUrlPath(dir));
  assertEquals(
    await Deno.readTextFile(issued.path),
    `http://127.0.0.1:9443/setup#token=${issued.token}\n`,
  );
  assertEquals((await Deno.stat(issued.path)).mode! & 0o777, 0o600);
  assertEquals((await Deno.stat(`${dir}/runtime`)).mode! & 0o777, 0o700);
  const stored = settings.get(SETUP_KEYS.token) as Record<string, unknown>;
  assertEquals(stored, {
    hash: sha256Hex(issued.token),
    issued_at: now,
    expires_at: now + SETUP_TTL_MS,
  });
  ok(!JSON.stringify(stored).includes(issued.token));
  assertEquals(issued.token.length, 43);
});

Deno.test("issueSetupToken() refuses a weak supplied token before writing anything", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  const settings = createSettingsRepo(store.db);
  await assertRejects(
    () =>
      issueSetupToken({
        settings,
        dataDir: dir,
        baseUrl: "http://x",
        now: 0,
        random: systemRandom,
        token: "short",
      }),
    SetupTokenError,
  );
  assertEquals(settings.get(SETUP_KEYS.token), undefined);
  await assertRejects(() => Deno.stat(setupUrlPath(dir)), Deno.errors.NotFound);
});
