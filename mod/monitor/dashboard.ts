/**
 * `GET /api/monitor/summary` and `GET /api/monitor/series`: totals, blocked classes, latency
 * percentiles and the top attacked sites, paths and client addresses of a period, and the same
 * per minute (last 24 hours) or per hour (last 30 days), all from the rollups.
 */
import type { Clock } from "../core/clock.ts";
import { AppError, badRequest } from "../core/errors.ts";
import { SpaceSaving } from "./space_saving.ts";
import {
  ALL,
  type Cell,
  DAY_MS,
  HOUR_MS,
  HOUR_RETENTION_MS,
  MINUTE_MS,
  MINUTE_RETENTION_MS,
  totals,
  UNMATCHED,
} from "./rollup_cells.ts";
import type { Rollups } from "./rollups.ts";

export interface PeriodQuery {
  /** Milliseconds since the epoch; default `to - period`. */
  readonly from?: number;
  readonly to?: number;
  /** Length when `from` is absent (ms); default 24 hours. */
  readonly periodMs?: number;
  /** A site's id or name. */
  readonly site?: string;
  readonly step?: "minute" | "hour";
  readonly top?: number;
}

export interface DashboardDeps {
  readonly rollups: Rollups;
  readonly clock: Clock;
  /** The sites by id and name (the current policy's, plus names of deleted ones unknown). */
  readonly sites: () => readonly { readonly id: string; readonly name: string }[];
}

export function createDashboard(deps: DashboardDeps) {
  const siteName = (id: string) =>
    id === UNMATCHED ? null : deps.sites().find((s) => s.id === id)?.name ?? null;

  function resolveSite(site: string | undefined): string | undefined {
    if (site === undefined) return undefined;
    const found = deps.sites().find((s) => s.id === site || s.name === site);
    if (!found) {
      throw new AppError(404, "NOT_FOUND", `No site with id or name "${site}"`, {
        details: { field: "site" },
      });
    }
    return found.id;
  }

  function period(q: PeriodQuery, step?: "minute" | "hour") {
    const now = deps.clock.now();
    const to = Math.min(q.to ?? now, now);
    const from = q.from ?? to - (q.periodMs ?? DAY_MS);
    if (from >= to) {
      throw badRequest('Invalid period: "from" must be before "to"', "from");
    }
    const res = step ?? (from >= now - MINUTE_RETENTION_MS ? "minute" : "hour");
    if (res === "minute" && from < now - MINUTE_RETENTION_MS - MINUTE_MS) {
      throw new AppError(
        400,
        "BAD_REQUEST",
        'Invalid field "step": per-minute data covers the last 24 hours only; use step=hour',
        { details: { field: "step" } },
      );
    }
    if (from < now - HOUR_RETENTION_MS - HOUR_MS) {
      throw badRequest('Invalid field "from": data covers 30 days', "from");
    }
    const size = res === "minute" ? MINUTE_MS : HOUR_MS;
    return { from: Math.floor(from / size) * size, to, res, size } as const;
  }

  return {
    summary(q: PeriodQuery) {
      const siteId = resolveSite(q.site);
      const p = period(q);
      const top = q.top ?? 10;
      const rows = deps.rollups.cells(p.res, p.from, p.to);
      const scope = siteId ?? ALL;
      const t = totals(rows.filter((r) => r.site === scope).map((r) => r.cell));
      const perSite = new Map<string, Cell[]>();
      for (const r of rows) {
        if (r.site === ALL) continue;
        perSite.set(r.site, [...(perSite.get(r.site) ?? []), r.cell]);
      }
      const topSites = siteId !== undefined ? [] : [...perSite].map(([id, cells]) => {
        const s = totals(cells);
        return {
          site_id: id === UNMATCHED ? null : id,
          site: siteName(id),
          requests: s.requests,
          blocked: s.by_action.block ?? 0,
          challenged: s.by_action.challenge ?? 0,
        };
      }).filter((s) => s.blocked + s.challenged > 0)
        .sort((a, b) => b.blocked - a.blocked || b.challenged - a.challenged).slice(0, top);
      // The sketches are hourly: the hours that overlap the period.
      const hours = p.res === "hour"
        ? rows.filter((r) => r.site === ALL)
        : deps.rollups.cells("hour", Math.floor(p.from / HOUR_MS) * HOUR_MS, p.to, ALL);
      const paths = new SpaceSaving(1000);
      const clients = new SpaceSaving(1000);
      const prefix = siteId === undefined ? undefined : `${siteId}\t`;
      for (const h of hours) {
        for (const i of h.cell.tp ?? []) {
          if (prefix === undefined || i.key.startsWith(prefix)) paths.add(i.key, i.count, i.error);
        }
        for (const i of h.cell.tc ?? []) {
          if (prefix !== undefined && !i.key.startsWith(prefix)) continue;
          // Across sites, one address is one client.
          clients.add(i.key.slice(i.key.indexOf("\t") + 1), i.count, i.error);
        }
      }
      return {
        period: {
          from: new Date(p.from).toISOString(),
          to: new Date(p.to).toISOString(),
          resolution: p.res,
        },
        ...(siteId === undefined ? {} : { site_id: siteId, site: siteName(siteId) }),
        ...t,
        blocked: t.by_action.block ?? 0,
        challenged: t.by_action.challenge ?? 0,
        top_sites: topSites,
        top_paths: paths.top(top).map((i) => {
          const tab = i.key.indexOf("\t");
          const id = i.key.slice(0, tab);
          return {
            site_id: id === UNMATCHED ? null : id,
            site: siteName(id),
            path: i.key.slice(tab + 1),
            blocked: i.count,
            error: i.error,
          };
        }),
        top_clients: clients.top(top).map((i) => ({
          client_ip: i.key,
          blocked: i.count,
          error: i.error,
        })),
      };
    },
    series(q: PeriodQuery) {
      const siteId = resolveSite(q.site);
      const p = period(q, q.step);
      const scope = siteId ?? ALL;
      const rows = deps.rollups.cells(p.res, p.from, p.to, scope);
      const byBucket = new Map(rows.map((r) => [r.bucket, r.cell]));
      const points = [];
      for (let b = p.from; b < p.to; b += p.size) {
        const cell = byBucket.get(b);
        const t = totals(cell ? [cell] : []);
        points.push({
          time: new Date(b).toISOString(),
          requests: t.requests,
          blocked: t.by_action.block ?? 0,
          challenged: t.by_action.challenge ?? 0,
          logged: t.by_action.log ?? 0,
          by_status: t.by_status,
          blocked_classes: t.blocked_classes,
          latency_ms: { p50: t.latency_ms.p50, p95: t.latency_ms.p95, p99: t.latency_ms.p99 },
        });
      }
      return {
        period: {
          from: new Date(p.from).toISOString(),
          to: new Date(p.to).toISOString(),
          step: p.res,
        },
        ...(siteId === undefined ? {} : { site_id: siteId, site: siteName(siteId) }),
        points,
      };
    },
  };
}

export type Dashboard = ReturnType<typeof createDashboard>;
