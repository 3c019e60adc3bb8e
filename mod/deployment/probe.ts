/**
 * The start-up probe of the production management database (specification 1.8): one connection
 * within `connect_timeout`, `SELECT 1`, closed again. `waf serve` runs it before it writes
 * anything and `waf config check` runs the same, so an unreachable database fails both alike
 * with `ErrProductionStorageUnavailable`, naming the database with its password masked.
 */
import postgres from "postgres";
import type { Config } from "../config/config.ts";
import { type ProductionProblem, productionStoreOptions, redactDsn } from "../config/production.ts";

/** The problem the probe found, or undefined (reachable, or not the production profile). */
export async function probeProductionStore(
  config: Config,
): Promise<ProductionProblem | undefined> {
  if (config.storage.profile !== "production") return undefined;
  const options = productionStoreOptions(config);
  // A missing DSN is reported by `missingProductionKeys` with its own key.
  if (!options) return undefined;
  const sql = postgres(options.dsn, {
    max: 1,
    connect_timeout: options.connectTimeoutMs / 1000,
    idle_timeout: 1,
    max_lifetime: null,
    connection: { application_name: "waf start-up probe" },
    onnotice: () => {},
  });
  const timers: ReturnType<typeof setTimeout>[] = [];
  /** Rejects with `reason` after `ms`: postgres retries a connection that timed out for as long
   * as a query waits, so the probe keeps its own deadlines. */
  const within = <T>(work: Promise<T>, ms: number, reason: string) =>
    Promise.race([
      work,
      new Promise<never>((_, reject) =>
        timers.push(setTimeout(() => reject(new Error(reason)), ms))
      ),
    ]);
  const seconds = options.connectTimeoutMs / 1000;
  try {
    const reserved = sql.reserve();
    const conn = await within(
      reserved,
      options.connectTimeoutMs,
      `no connection within ${seconds}s`,
    );
    try {
      await within(conn`SELECT 1`, options.statementTimeoutMs, "no answer to SELECT 1");
    } finally {
      conn.release();
    }
    return undefined;
  } catch (err) {
    return unreachable(options.dsn, options.connectTimeoutMs, err);
  } finally {
    for (const timer of timers) clearTimeout(timer);
    await sql.end({ timeout: 0 }).catch(() => {});
  }
}

function unreachable(dsn: string, timeoutMs: number, err: unknown): ProductionProblem {
  const shown = redactDsn(dsn);
  let reason = err instanceof Error ? err.message : String(err);
  reason = reason.replaceAll(dsn, shown);
  const password = passwordOf(dsn);
  if (password) reason = reason.replaceAll(password, "***");
  return {
    path: "storage.production.postgresql.dsn",
    code: "ErrProductionStorageUnavailable",
    message: `the production management database "${shown}" is unreachable (connect within ${
      timeoutMs / 1000
    }s, SELECT 1): ${reason} (ErrProductionStorageUnavailable)`,
  };
}

/** The DSN's password, so an error that quotes it never shows it. */
function passwordOf(dsn: string): string | undefined {
  try {
    const password = decodeURIComponent(new URL(dsn).password);
    return password.length > 0 ? password : undefined;
  } catch {
    return undefined;
  }
}
