/**
 * One controller's API inventory in a process of its own (tests/mod/apisec/
 * concurrent_inventory_test.ts): opens the store (`sqlite PATH` or `postgresql DSN SCHEMA`), then
 * `rounds` times samples each of the endpoints `/e0` to `/e19` once with `method` and flushes, and
 * flushes until the last write succeeds. Prints `{ failed }`, the writes that failed.
 */
import { createApiSecEndpointsRepo } from "../../db/apisec_endpoints_repo.ts";
import { openPgStore } from "../../db/pg/pg_database.ts";
import { type Db, openStore } from "../../db/store.ts";
import { createInventory } from "../../mod/apisec/inventory.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { sample, T0 } from "./apisec_samples.ts";

/** The endpoints each round samples once. */
export const WRITER_ENDPOINTS = 20;

if (import.meta.main) {
  const [engine, ...rest] = Deno.args;
  const [method, rounds] = rest.slice(-2) as [string, string];
  const db: Db = engine === "postgresql"
    ? openPgStore({
      dsn: rest[0]!,
      schema: rest[1]!,
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 10_000,
      controllerId: `writer-${method}`,
      now: T0,
    })
    : openStore(rest[0]!, { now: T0 });
  const inventory = createInventory({
    repo: createApiSecEndpointsRepo(db),
    clock: new FakeClock(T0),
    logger: createMemoryLogger(),
  });
  let failed = 0;
  for (let r = 0; r < Number(rounds); r++) {
    for (let i = 0; i < WRITER_ENDPOINTS; i++) inventory.sample(sample(`/e${i}`, { method }));
    if (!inventory.flush()) failed++;
  }
  while (!inventory.flush()) failed++;
  console.log(JSON.stringify({ failed }));
  db.close();
}
