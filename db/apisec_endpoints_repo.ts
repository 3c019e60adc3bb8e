/** SQL for the discovered API inventory (`apisec_endpoints`): batched additions and a bounded load. */
import { type Db, transaction } from "./store.ts";

export interface EndpointRow {
  readonly site_id: string;
  readonly template: string;
  /** JSON of the endpoint's statistics. */
  readonly data: string;
  readonly last_seen: number;
}

/** Merges stored statistics (undefined: no row yet) with statistics added to them. */
export type CombineStats = (stored: string | undefined, add: string) => string;

export function createApiSecEndpointsRepo(db: Db) {
  const upsert = db.prepare(
    `INSERT INTO apisec_endpoints (site_id, template, data, last_seen)
     VALUES (:site_id, :template, :data, :last_seen)
     ON CONFLICT (site_id, template) DO UPDATE SET data = excluded.data, last_seen = excluded.last_seen`,
  );
  const one = db.prepare(
    "SELECT data, last_seen FROM apisec_endpoints WHERE site_id = ? AND template = ?",
  );
  const remove = db.prepare("DELETE FROM apisec_endpoints WHERE site_id = ? AND template = ?");
  const recent = db.prepare(
    "SELECT site_id, template, data, last_seen FROM apisec_endpoints ORDER BY last_seen DESC LIMIT ?",
  );
  const clear = db.prepare("DELETE FROM apisec_endpoints");

  /** Adds `r` to its stored row (or stores it): `combine` merges the data, last seen the later. */
  const add = (r: EndpointRow, combine: CombineStats) => {
    const stored = one.get(r.site_id, r.template);
    upsert.run({
      site_id: r.site_id,
      template: r.template,
      data: combine(stored === undefined ? undefined : String(stored.data), r.data),
      last_seen: Math.max(r.last_seen, Number(stored?.last_seen ?? r.last_seen)),
    });
  };

  return {
    /**
     * Writes a batch in one transaction (the PostgreSQL store's takes the deployment's write
     * lock, so controllers adding to one row never lose each other's counts): each `gone` row
     * (merged away) is deleted and added to its `into` row, in order, then each of `rows` is
     * added to its stored row. Nothing is written when any step fails.
     */
    write(
      rows: readonly EndpointRow[],
      gone: ReadonlyArray<{ site_id: string; template: string; into: string }>,
      combine: CombineStats,
    ) {
      transaction(db, () => {
        for (const g of gone) {
          const from = one.get(g.site_id, g.template);
          if (from === undefined) continue;
          remove.run(g.site_id, g.template);
          add({
            site_id: g.site_id,
            template: g.into,
            data: String(from.data),
            last_seen: Number(from.last_seen),
          }, combine);
        }
        for (const r of rows) add(r, combine);
      });
    },
    /** The most recently seen endpoints, at most `limit`. */
    load(limit: number): EndpointRow[] {
      return (recent.all(limit) as unknown as EndpointRow[]).map((r) => ({
        ...r,
        last_seen: Number(r.last_seen),
      }));
    },
    clear(): void {
      clear.run();
    },
  };
}

export type ApiSecEndpointsRepo = ReturnType<typeof createApiSecEndpointsRepo>;
