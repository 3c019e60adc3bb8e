/** A real SQLite store in a temporary directory, migrated to the current schema. */
import { type Db, openStore, transaction } from "../../db/store.ts";

export interface TestStore extends AsyncDisposable {
  readonly db: Db;
  readonly dir: string;
  readonly transaction: <T>(fn: () => T) => T;
}

export async function testStore(now = Date.UTC(2026, 0, 1)): Promise<TestStore> {
  const dir = await Deno.makeTempDir({ prefix: "waf-store-" });
  const db = openStore(`${dir}/waf.db`, { now });
  return {
    db,
    dir,
    transaction: (fn) => transaction(db, fn),
    async [Symbol.asyncDispose]() {
      db.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
