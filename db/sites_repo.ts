/** SQL for sites: one row per site, its settings as a JSON document in `config`. */
import type { Db } from "./store.ts";

export interface SiteRow {
  readonly id: string;
  readonly name: string;
  /** JSON of every site field except id, name and the timestamps. */
  readonly config: string;
  readonly created_at: number;
  readonly updated_at: number;
}

export function createSitesRepo(db: Db) {
  const all = db.prepare("SELECT * FROM sites ORDER BY created_at, id");
  const byId = db.prepare("SELECT * FROM sites WHERE id = ?");
  const byName = db.prepare("SELECT * FROM sites WHERE name = ?");
  const insert = db.prepare(
    "INSERT INTO sites (id, name, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
  );
  const update = db.prepare("UPDATE sites SET name = ?, config = ?, updated_at = ? WHERE id = ?");
  const remove = db.prepare("DELETE FROM sites WHERE id = ?");
  return {
    list(): SiteRow[] {
      return all.all() as unknown as SiteRow[];
    },
    get(id: string): SiteRow | undefined {
      return byId.get(id) as SiteRow | undefined;
    },
    getByName(name: string): SiteRow | undefined {
      return byName.get(name) as SiteRow | undefined;
    },
    insert(row: SiteRow): void {
      insert.run(row.id, row.name, row.config, row.created_at, row.updated_at);
    },
    update(row: Omit<SiteRow, "created_at">): boolean {
      return Number(update.run(row.name, row.config, row.updated_at, row.id).changes) > 0;
    },
    remove(id: string): boolean {
      return Number(remove.run(id).changes) > 0;
    },
  };
}

export type SitesRepo = ReturnType<typeof createSitesRepo>;
