/**
 * A real store migrated to the current schema: a SQLite file in a temporary directory, or, with
 * `WAF_TEST_STORE=postgresql`, the PostgreSQL store in a schema of its own on the machine's
 * database (tests/db/store_contract_test.ts runs the store's tests that way, the same cases on
 * both engines).
 */
import "./fast_hash.ts";
import { openStore, type SqliteDb, transaction } from "../../db/store.ts";
import { openPgStore } from "../../db/pg/pg_database.ts";

export interface TestStore extends AsyncDisposable {
  readonly db: SqliteDb;
  readonly dir: string;
  readonly transaction: <T>(fn: () => T) => T;
  /** Another connection to the same store (a restart); the caller closes it. */
  readonly reopen: () => SqliteDb;
}

/** The machine's PostgreSQL (trust auth), overridable for another host. */
export const TEST_PG_DSN = Deno.env.get("WAF_TEST_PG_DSN") ??
  "postgres://postgres@127.0.0.1:5432/test";

/** True when the store tests run on PostgreSQL. */
export function testEngine(): "sqlite" | "postgresql" {
  return Deno.env.get("WAF_TEST_STORE") === "postgresql" ? "postgresql" : "sqlite";
}

/** A fresh schema name for one test. */
export function testSchemaName(): string {
  return `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
}

export async function testStore(now = Date.UTC(2026, 0, 1)): Promise<TestStore> {
  const dir = await Deno.makeTempDir({ prefix: "waf-store-" });
  if (testEngine() === "postgresql") {
    const schema = testSchemaName();
    const pg = openPgStore({
      dsn: TEST_PG_DSN,
      schema,
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 10_000,
      controllerId: crypto.randomUUID(),
      now,
    });
    // The repositories take either engine; tests written against SQLite's type get the facade.
    const db = pg as unknown as SqliteDb;
    return {
      db,
      dir,
      transaction: (fn) => transaction(db, fn),
      reopen: () =>
        openPgStore({
          dsn: TEST_PG_DSN,
          schema,
          connectTimeoutMs: 5_000,
          statementTimeoutMs: 10_000,
          controllerId: crypto.randomUUID(),
          now,
        }) as unknown as SqliteDb,
      async [Symbol.asyncDispose]() {
        if (pg.isOpen) {
          try {
            pg.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          } finally {
            pg.close();
          }
        }
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      },
    };
  }
  const db = openStore(`${dir}/waf.db`, { now });
  return {
    db,
    dir,
    transaction: (fn) => transaction(db, fn),
    reopen: () => openStore(`${dir}/waf.db`, { now }),
    async [Symbol.asyncDispose]() {
      db.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
