/** SQL for the discovered API inventory (`apisec_endpoints`): batched upserts and a bounded load. */
import { type Db, transaction } from "./store.ts";

export interface EndpointRow {
  readonly site_id: string;
  readonly template: string;
  /** JSON of the endpoint's statistics. */
  readonly data: string;
  readonly last_seen: number;
}

export function createApiSecEndpointsRepo(db: Db) {
  const upsert = db.prepare(
    `INSERT INTO apisec_endpoints (site_id, template, data, last_seen)
     VALUES (:site_id, :template, :data, :last_seen)
     ON CONFLICT (site_id, template) DO UPDATE SET data = excluded.data, last_seen = excluded.last_seen`,
  );
  const remove = db.prepare("DELETE FROM apisec_endpoints WHERE site_id = ? AND template = ?");
  const recent = db.prepare(
    "SELECT site_id, template, data, last_seen FROM apisec_endpoints ORDER BY last_seen DESC LIMIT ?",
  );
  const clear = db.prepare("DELETE FROM apisec_endpoints");
  return {
    /** Writes a batch in one transaction: `rows` upserted, `gone` (merged away) deleted. */
    write(
      rows: readonly EndpointRow[],
      gone: ReadonlyArray<{ site_id: string; template: string }>,
    ) {
      transaction(db, () => {
        for (const g of gone) remove.run(g.site_id, g.template);
        for (const r of rows) upsert.run({ ...r });
      });
    },
    /** The most recently seen endpoints, at most `limit`. */
    load(limit: number): EndpointRow[] {
      return recent.all(limit) as unknown as EndpointRow[];
    },
    clear(): void {
      clear.run();
    },
  };
}

export type ApiSecEndpointsRepo = ReturnType<typeof createApiSecEndpointsRepo>;
