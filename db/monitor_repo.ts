/** SQL for the monitoring rollups: one JSON cell per resolution, bucket start and site. */
import { type Db, transaction } from "./store.ts";

export type Resolution = "minute" | "hour";

export interface RollupRow {
  readonly resolution: Resolution;
  readonly bucket: number;
  /** The site's id; "" for all sites together. */
  readonly site_id: string;
  readonly data: string;
}

export function createMonitorRepo(db: Db) {
  const upsert = db.prepare(
    `INSERT INTO monitor_rollups (resolution, bucket, site_id, data) VALUES (?, ?, ?, ?)
     ON CONFLICT (resolution, bucket, site_id) DO UPDATE SET data = excluded.data`,
  );
  const one = db.prepare(
    "SELECT * FROM monitor_rollups WHERE resolution = ? AND bucket = ? AND site_id = ?",
  );
  const range = db.prepare(
    `SELECT * FROM monitor_rollups WHERE resolution = ? AND bucket >= ? AND bucket < ?
       AND (? IS NULL OR site_id = ?) ORDER BY bucket`,
  );
  const prune = db.prepare("DELETE FROM monitor_rollups WHERE resolution = ? AND bucket < ?");
  return {
    /**
     * Adds the cells to what is stored, in one transaction (the PostgreSQL store's takes the
     * deployment's write lock, so controllers adding to one cell never lose each other's counts):
     * `combine` merges a stored cell's data (undefined: none yet) with the row's.
     */
    add(rows: readonly RollupRow[], combine: (stored: string | undefined, add: string) => string) {
      if (rows.length === 0) return;
      transaction(db, () => {
        for (const r of rows) {
          const stored = one.get(r.resolution, r.bucket, r.site_id) as RollupRow | undefined;
          upsert.run(r.resolution, r.bucket, r.site_id, combine(stored?.data, r.data));
        }
      });
    },
    get(resolution: Resolution, bucket: number, siteId: string): RollupRow | undefined {
      return one.get(resolution, bucket, siteId) as RollupRow | undefined;
    },
    /** Cells in [from, to); `siteId` undefined = every scope ("" and each site). */
    list(resolution: Resolution, from: number, to: number, siteId?: string): RollupRow[] {
      const s = siteId ?? null;
      return range.all(resolution, from, to, s, s) as unknown as RollupRow[];
    },
    prune(resolution: Resolution, before: number): number {
      return Number(prune.run(resolution, before).changes);
    },
  };
}

export type MonitorRepo = ReturnType<typeof createMonitorRepo>;
