/**
 * The store-maintenance thread: runs one heavy job (integrity check, backup, optimisation) on
 * its own connection to the store, so none of it stalls the data plane's event loop. Started per
 * job by `runStoreJob` in `store_jobs.ts`; answers one `{ ok, result }` or `{ ok: false, error }`.
 * The SQL is in `db/store_jobs_repo.ts` and `db/maintenance.ts`.
 */
/// <reference lib="deno.worker" />
import { openExisting } from "../../db/maintenance.ts";
import type { Db } from "../../db/store.ts";
import { accessLogRowsBefore, optimizeStore, tableRows } from "../../db/store_jobs_repo.ts";
import { backupStore, checkDb } from "./backup.ts";
import { systemRandom } from "../core/random.ts";
import type { StoreJob } from "./store_jobs.ts";

/** `fn` on a connection of its own to the store at `path`, closed after. */
function withStore<T>(path: string, readOnly: boolean, fn: (db: Db) => T): T {
  const db = openExisting(path, { readOnly });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function run(job: StoreJob): unknown {
  switch (job.kind) {
    case "integrity":
      return withStore(job.path, true, checkDb);
    case "backup":
      return withStore(job.path, true, (db) => backupStore(db, job.out, { random: systemRandom }));
    case "status":
      return withStore(job.path, true, tableRows);
    case "access_logs_before":
      return withStore(job.path, true, (db) => ({ rows: accessLogRowsBefore(db, job.before) }));
    case "optimize":
      return withStore(job.path, false, (db) => optimizeStore(db, job.vacuumFreeRatio));
  }
}

self.onmessage = (e: MessageEvent<StoreJob>) => {
  try {
    self.postMessage({ ok: true, result: run(e.data) });
  } catch (err) {
    self.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
  }
};
