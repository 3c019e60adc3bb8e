/**
 * The cells of the dashboard's rollups: one bucket of one scope as stored, the open cells that
 * collect a minute's or an hour's traffic before they are written in batches, and the totals the
 * API shows of a set of them.
 */
import type { MonitorRepo, Resolution } from "../../db/monitor_repo.ts";
import { LATENCY_BOUNDS_US, quantile } from "../core/histogram.ts";
import { ACTIONS, STATUS_CLASSES } from "../data_plane/site_counters.ts";
import { type HeavyHitter, SpaceSaving } from "./space_saving.ts";

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const MINUTE_RETENTION_MS = DAY_MS;
export const HOUR_RETENTION_MS = 30 * DAY_MS;
/** The scope of every site together; requests that matched no site are scope `-`. */
export const ALL = "";
export const UNMATCHED = "-";
export const NREQ = ACTIONS.length * STATUS_CLASSES.length;
export const NLAT = LATENCY_BOUNDS_US.length + 3;
/** Entries kept of an hour's top blocked paths and clients. */
export const SKETCH_CAPACITY = 200;

/** One bucket of one scope, as stored (JSON). */
export interface Cell {
  /** Requests by action (rows) and status class (columns). */
  r: number[];
  /** Blocks by class. */
  b: Record<string, number>;
  /** Request latency histogram (per-bucket counts, then sum and count, in µs). */
  l: number[];
  /** Upstream latency histogram. */
  u: number[];
  /** Hour cells of all sites: the hour's top blocked paths (`site_id\tpath`) and clients. */
  tp?: HeavyHitter[];
  tc?: HeavyHitter[];
}

export const emptyCell = (): Cell => ({
  r: new Array(NREQ).fill(0),
  b: {},
  l: new Array(NLAT).fill(0),
  u: new Array(NLAT).fill(0),
});

export const addInto = (into: number[], from: ArrayLike<number>) => {
  for (let i = 0; i < into.length; i++) into[i]! += from[i] ?? 0;
};

/** `add` counted into `into` (the top lists merged as sketches). */
export function mergeCell(into: Cell, add: Cell): Cell {
  addInto(into.r, add.r);
  addInto(into.l, add.l);
  addInto(into.u, add.u);
  for (const [k, v] of Object.entries(add.b)) into.b[k] = (into.b[k] ?? 0) + v;
  for (const key of ["tp", "tc"] as const) {
    if (!add[key]?.length) continue;
    const s = new SpaceSaving(SKETCH_CAPACITY);
    s.merge(into[key] ?? []);
    s.merge(add[key]);
    into[key] = s.top();
  }
  return into;
}

/**
 * The open cells: what this process counted since its last write, added to the stored cells in
 * batches. Adding (not overwriting) is what lets several controllers of one deployment count
 * into the same cells.
 */
export class OpenCells {
  readonly #repo: MonitorRepo;
  readonly #cells = new Map<
    string,
    { res: Resolution; bucket: number; site: string; cell: Cell }
  >();
  #lastPrune = 0;

  constructor(repo: MonitorRepo) {
    this.#repo = repo;
  }

  /** The cell counting a bucket and scope until the next write. */
  cellOf(res: Resolution, bucket: number, site: string): Cell {
    const key = `${res}|${bucket}|${site}`;
    let c = this.#cells.get(key);
    if (c === undefined) {
      c = { res, bucket, site, cell: emptyCell() };
      this.#cells.set(key, c);
    }
    return c.cell;
  }

  /** Adds what was counted to the stored cells; old ones leave the store. */
  write(now: number): void {
    const rows = [...this.#cells.values()].map((c) => ({
      resolution: c.res,
      bucket: c.bucket,
      site_id: c.site,
      data: JSON.stringify(c.cell),
    }));
    this.#repo.add(
      rows,
      (stored, add) =>
        stored === undefined
          ? add
          : JSON.stringify(mergeCell(JSON.parse(stored) as Cell, JSON.parse(add) as Cell)),
    );
    this.#cells.clear();
    if (now - this.#lastPrune >= HOUR_MS) {
      this.#lastPrune = now;
      this.#repo.prune("minute", now - MINUTE_RETENTION_MS);
      this.#repo.prune("hour", now - HOUR_RETENTION_MS);
    }
  }
}

/** Totals of a set of cells in the shape the API returns. */
export function totals(cells: readonly Cell[]) {
  const sum = emptyCell();
  for (const c of cells) {
    addInto(sum.r, c.r);
    addInto(sum.l, c.l);
    addInto(sum.u, c.u);
    for (const [k, v] of Object.entries(c.b)) sum.b[k] = (sum.b[k] ?? 0) + v;
  }
  const nStatus = STATUS_CLASSES.length;
  const byAction: Record<string, number> = {};
  ACTIONS.forEach((a, i) => {
    byAction[a] = sum.r.slice(i * nStatus, (i + 1) * nStatus).reduce((x, y) => x + y, 0);
  });
  const byStatus: Record<string, number> = {};
  STATUS_CLASSES.forEach((s, j) => {
    byStatus[s] = ACTIONS.reduce((acc, _a, i) => acc + sum.r[i * nStatus + j]!, 0);
  });
  return {
    requests: Object.values(byAction).reduce((x, y) => x + y, 0),
    by_action: byAction,
    by_status: byStatus,
    blocked_classes: Object.fromEntries(
      Object.entries(sum.b).sort((a, b) => b[1] - a[1]),
    ),
    latency_ms: latency(sum.l),
    upstream_latency_ms: latency(sum.u),
  };
}

function latency(h: number[]) {
  const n = LATENCY_BOUNDS_US.length;
  const count = h[n + 2]!;
  const ms = (v: number | null) => v === null ? null : Math.round(v) / 1000;
  return {
    count,
    mean: count === 0 ? null : ms(h[n + 1]! / count),
    p50: ms(quantile(LATENCY_BOUNDS_US, h, 0.5)),
    p90: ms(quantile(LATENCY_BOUNDS_US, h, 0.9)),
    p95: ms(quantile(LATENCY_BOUNDS_US, h, 0.95)),
    p99: ms(quantile(LATENCY_BOUNDS_US, h, 0.99)),
  };
}
