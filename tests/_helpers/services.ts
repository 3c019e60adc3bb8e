/**
 * Finds the local PostgreSQL for tests. Absent: the test is skipped with a clear message,
 * unless WAF_REQUIRE_SERVICES=1 (CI), where it must fail instead.
 */

export const REQUIRE_SERVICES = Deno.env.get("WAF_REQUIRE_SERVICES") === "1";

async function reachable(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

/** A DSN for the local test database, or undefined (with a message) when there is none. */
export async function postgresDsn(): Promise<string | undefined> {
  if (await reachable(5432)) return "postgres://postgres@127.0.0.1:5432/test";
  const message = "PostgreSQL is not reachable on 127.0.0.1:5432";
  if (REQUIRE_SERVICES) throw new Error(`${message}, and WAF_REQUIRE_SERVICES=1 requires it`);
  console.warn(`skipped: ${message} (set WAF_REQUIRE_SERVICES=1 to make this a failure)`);
  return undefined;
}
