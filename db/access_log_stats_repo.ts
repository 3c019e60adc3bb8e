/**
 * Aggregate SQL over the access log for a period: counts by action and attack class, and the
 * addresses and paths behind the most hostile requests (anything blocked, challenged or logged,
 * or carrying an attack class). The time index bounds every scan to the period.
 */
import type { Db } from "./store.ts";

export interface PeriodFilter {
  readonly from: number;
  readonly to: number;
  readonly siteId?: string;
}

export interface ActionClassCount {
  readonly action: string;
  readonly attack_class: string | null;
  readonly requests: number;
}

export interface TopEntry {
  readonly key: string | null;
  readonly requests: number;
  readonly blocked: number;
  /** Comma-separated attack classes seen. */
  readonly classes: string | null;
  readonly first_seen: number;
  readonly last_seen: number;
}

const HOSTILE = "(action <> 'pass' OR attack_class IS NOT NULL)";
const PERIOD = "time >= :from AND time <= :to AND (:site IS NULL OR site_id = :site)";

function top(db: Db, column: "client_ip" | "path") {
  return db.prepare(
    `SELECT ${column} AS key, COUNT(*) AS requests, SUM(action = 'block') AS blocked,
       GROUP_CONCAT(DISTINCT attack_class) AS classes, MIN(time) AS first_seen,
       MAX(time) AS last_seen
     FROM access_logs WHERE ${PERIOD} AND ${HOSTILE}
     GROUP BY ${column} ORDER BY requests DESC, key LIMIT :limit`,
  );
}

export function createAccessLogStatsRepo(db: Db) {
  const byActionClass = db.prepare(
    `SELECT action, attack_class, COUNT(*) AS requests FROM access_logs WHERE ${PERIOD}
     GROUP BY action, attack_class ORDER BY requests DESC`,
  );
  const topClients = top(db, "client_ip");
  const topPaths = top(db, "path");
  const params = (f: PeriodFilter) => ({ from: f.from, to: f.to, site: f.siteId ?? null });
  return {
    byActionClass(f: PeriodFilter): ActionClassCount[] {
      return byActionClass.all(params(f)) as unknown as ActionClassCount[];
    },
    /** The most hostile client addresses or paths of the period. */
    top(by: "client_ip" | "path", f: PeriodFilter, limit: number): TopEntry[] {
      const stmt = by === "client_ip" ? topClients : topPaths;
      return stmt.all({ ...params(f), limit }) as unknown as TopEntry[];
    },
  };
}

export type AccessLogStatsRepo = ReturnType<typeof createAccessLogStatsRepo>;
