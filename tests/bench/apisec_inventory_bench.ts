/**
 * The API inventory's store work on SQLite with 10,000 stored endpoints: a read within the refresh
 * age and one that answers from the store (write nothing, load, refresh) against the in-memory
 * view that every read was before, and a flush of
 * 500 deltas added to their rows against the same rows overwritten (the former flush).
 */
import { createApiSecEndpointsRepo } from "../../db/apisec_endpoints_repo.ts";
import { openStore } from "../../db/store.ts";
import { combineStats } from "../../mod/apisec/endpoint_stats.ts";
import { EndpointTable } from "../../mod/apisec/endpoint_table.ts";
import { createInventory, READ_REFRESH_MS } from "../../mod/apisec/inventory.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { sample, T0 } from "../_helpers/apisec_samples.ts";

const ENDPOINTS = 10_000;
const dir = Deno.makeTempDirSync({ prefix: "waf-bench-inventory-" });
const db = openStore(`${dir}/waf.db`, { now: T0 });
const repo = createApiSecEndpointsRepo(db);
const table = new EndpointTable(ENDPOINTS, []);
for (let i = 0; i < ENDPOINTS; i++) {
  // At most 25 literal children per parent: no position becomes a parameter.
  table.add(sample(`/a${i % 25}/b${Math.floor(i / 25) % 20}/c${Math.floor(i / 500)}`, {
    queryNames: ["page", "sort", `f${i % 7}`],
    contentType: "application/json",
  }));
}
const all = table.changes()!;
if (table.size !== ENDPOINTS) throw new Error(`Expected ${ENDPOINTS} endpoints: ${table.size}`);
repo.write(all.rows, [], combineStats);
table.written();
const clock = new FakeClock(T0);
const inventory = createInventory({
  repo,
  clock,
  logger: createMemoryLogger(),
  maxEndpoints: ENDPOINTS,
});
const deltas = all.rows.slice(0, 500);

Deno.bench({ name: "in-memory view (before)", group: "read", baseline: true }, () => {
  table.values();
});
Deno.bench({ name: "read within the refresh age", group: "read" }, () => {
  inventory.endpoints();
});
Deno.bench({ name: "read from the store", group: "read" }, () => {
  clock.advance(READ_REFRESH_MS);
  inventory.endpoints();
});
Deno.bench({ name: "overwrite 500 rows (before)", group: "flush", baseline: true }, () => {
  repo.write(deltas, [], (_stored, add) => add);
});
Deno.bench({ name: "add 500 deltas to their rows", group: "flush" }, () => {
  repo.write(deltas, [], combineStats);
});

globalThis.addEventListener("unload", () => {
  db.close();
  Deno.removeSync(dir, { recursive: true });
});
