/**
 * Monitoring: the Prometheus exposition (`monitor.prometheus.path`, outside /api; public when
 * `monitor.prometheus.public` is true, otherwise `read:monitor`) and the dashboard's summary and
 * series (`read:monitor`), and where the exposition is (`GET /api/monitor/prometheus`, for the
 * console's note).
 */
import { z } from "zod";
import { CONTENT_TYPE } from "../../mod/monitor/exposition.ts";
import type { Dashboard } from "../../mod/monitor/dashboard.ts";
import type { Metrics } from "../../mod/monitor/metrics.ts";
import { perm, PUBLIC, type RouteDef } from "./route.ts";
import { readQuery } from "./validate.ts";

export interface MonitorRouteDeps {
  readonly metrics: Metrics;
  readonly dashboard: Dashboard;
  readonly prometheus: {
    readonly enabled: boolean;
    readonly path: string;
    readonly public: boolean;
  };
}

const PERIOD = /^(\d+)(m|h|d)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

const time = z.string().refine((v) => !Number.isNaN(Date.parse(v)), {
  message: "expected an ISO 8601 time such as 2026-01-01T00:00:00Z",
}).transform((v) => Date.parse(v));

const periodQuery = z.strictObject({
  period: z.string().regex(PERIOD, 'expected a period such as "1h", "24h" or "30d"').optional()
    .transform((v) => {
      if (v === undefined) return undefined;
      const [, n, unit] = PERIOD.exec(v)!;
      return Number(n) * UNIT_MS[unit as keyof typeof UNIT_MS];
    }),
  from: time.optional(),
  to: time.optional(),
  site: z.string().min(1).max(200).optional(),
  top: z.coerce.number().int().min(1).max(100).optional(),
});

const seriesQuery = periodQuery.extend({
  step: z.enum(["minute", "hour"]).optional(),
});

export function monitorRoutes(deps: MonitorRouteDeps): RouteDef[] {
  const routes: RouteDef[] = [
    {
      method: "GET",
      path: "/api/monitor/summary",
      access: perm("read:monitor"),
      handler: (c) => {
        const q = readQuery(c, periodQuery);
        return c.json(deps.dashboard.summary({ ...q, periodMs: q.period }));
      },
    },
    {
      method: "GET",
      path: "/api/monitor/series",
      access: perm("read:monitor"),
      handler: (c) => {
        const q = readQuery(c, seriesQuery);
        return c.json(deps.dashboard.series({ ...q, periodMs: q.period }));
      },
    },
    {
      method: "GET",
      path: "/api/monitor/prometheus",
      access: perm("read:monitor"),
      handler: (c) =>
        c.json({
          enabled: deps.prometheus.enabled,
          path: deps.prometheus.enabled ? deps.prometheus.path : null,
          public: deps.prometheus.enabled && deps.prometheus.public,
          content_type: CONTENT_TYPE,
        }),
    },
  ];
  if (deps.prometheus.enabled) {
    routes.push({
      method: "GET",
      path: deps.prometheus.path,
      access: deps.prometheus.public ? PUBLIC : perm("read:monitor"),
      handler: (c) => c.body(deps.metrics.scrape(), 200, { "content-type": CONTENT_TYPE }),
    });
  }
  return routes;
}
