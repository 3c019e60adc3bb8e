/**
 * The tools and services some tests need (chromium, pebble, promtool, PostgreSQL, Redis, ...).
 * Each is probed once, when the test module loads; a test that needs one says so in its name
 * ("... (needs chromium)") and is ignored without it, except under WAF_REQUIRE_SERVICES=1 (CI),
 * where it runs and fails on the missing tool. WAF_TEST_WITHOUT=chromium,pebble makes the named
 * ones count as missing, to see the tests that need them ignored (or, in CI, failing).
 */

export const REQUIRE_SERVICES = Deno.env.get("WAF_REQUIRE_SERVICES") === "1";

const WITHOUT = new Set(
  (Deno.env.get("WAF_TEST_WITHOUT") ?? "").split(",").map((s) => s.trim()).filter(Boolean),
);

/** Whether `name` is there by `check`; false when WAF_TEST_WITHOUT names it. */
export async function probe(name: string, check: () => Promise<boolean>): Promise<boolean> {
  if (WITHOUT.has(name)) return false;
  return await check().catch(() => false);
}

/** The `ignore` of a test that needs what `available` says is there: CI runs it regardless. */
export function ignoreWithout(available: boolean): boolean {
  return !available && !REQUIRE_SERVICES;
}

/** The failure of a test that WAF_REQUIRE_SERVICES=1 runs without what it needs. */
export function missing(what: string): Error {
  return new Error(`${what}, and WAF_REQUIRE_SERVICES=1 requires it`);
}

/** Whether `path` exists. */
export async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Whether `command` runs (`--version` answers with success). */
export async function runs(command: string): Promise<boolean> {
  const out = await new Deno.Command(command, {
    args: ["--version"],
    stdout: "null",
    stderr: "null",
  }).output();
  return out.success;
}

async function reachable(port: number): Promise<boolean> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  conn.close();
  return true;
}

/** The local test database's DSN; a test that CI runs without it (`available` false) fails here. */
export function postgresDsn(available: boolean): string {
  if (!available) throw missing("PostgreSQL is not reachable on 127.0.0.1:5432");
  return "postgres://postgres@127.0.0.1:5432/test";
}

/** Whether PostgreSQL answers on 127.0.0.1:5432. */
export function hasPostgres(): Promise<boolean> {
  return probe("postgresql", () => reachable(5432));
}

/** Whether Redis answers on 127.0.0.1:6379. */
export function hasRedis(): Promise<boolean> {
  return probe("redis", () => reachable(6379));
}
