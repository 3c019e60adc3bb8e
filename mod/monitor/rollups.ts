/**
 * Rolled-up traffic for the dashboard: per minute (kept 24 hours) and per hour (kept 30 days),
 * for all sites together and per site. Nothing is counted twice on the request path: a timer
 * reads the sites' cumulative counters (`SiteCounters`) and adds the difference since its last
 * reading to the open cells. Cells live in memory while open and are written to the store in
 * batches (and reloaded after a restart, so an hour interrupted by one continues). The top
 * attacked paths and client addresses of each hour come from bounded space-saving sketches fed by
 * the event bus, never from a scan of the access log. Cells are added to the stored ones, never
 * overwritten: several controllers of one deployment count into the same cells.
 */
import type { MonitorRepo, Resolution } from "../../db/monitor_repo.ts";
import type { Clock } from "../core/clock.ts";
import {
  BLOCK_CLASSES,
  type SiteCounters,
  type SiteCounterSet,
} from "../data_plane/site_counters.ts";
import type { BusEvent } from "./event_bus.ts";
import {
  addInto,
  ALL,
  type Cell,
  HOUR_MS,
  MINUTE_MS,
  NLAT,
  NREQ,
  OpenCells,
  SKETCH_CAPACITY,
  UNMATCHED,
} from "./rollup_cells.ts";
import { SpaceSaving } from "./space_saving.ts";

interface Snapshot {
  requests: Float64Array;
  blocks: Float64Array;
  latency: Float64Array;
  upstream: Float64Array;
}

export interface RollupDeps {
  readonly repo: MonitorRepo;
  readonly clock: Clock;
  readonly counters: SiteCounterSet;
  /** Delivers events still in flight to {@link Rollups.observe} (the bus's flush). */
  readonly drain?: () => void;
  /**
   * Told once a minute closes, with the stored cell of all sites (what this process counted in
   * it is written first; on a deployment of several controllers, theirs so far too).
   */
  readonly minuteClosed?: (bucket: number, cell: Cell) => void;
}

/** Per-element difference, and the previous reading moves to the current one. */
function diff(current: Float64Array, prev: Float64Array): Float64Array {
  const d = new Float64Array(current.length);
  for (let i = 0; i < current.length; i++) {
    d[i] = current[i]! - prev[i]!;
    prev[i] = current[i]!;
  }
  return d;
}

function addDelta(cell: Cell, d: Snapshot): void {
  addInto(cell.r, d.requests);
  addInto(cell.l, d.latency);
  addInto(cell.u, d.upstream);
  for (let i = 0; i < BLOCK_CLASSES.length; i++) {
    const n = d.blocks[i]!;
    if (n > 0) cell.b[BLOCK_CLASSES[i]!] = (cell.b[BLOCK_CLASSES[i]!] ?? 0) + n;
  }
}

/** The hour's top blocked paths and clients, merged into the hour's cell of all sites. */
class HourSketches {
  hour: number;
  #paths = new SpaceSaving(SKETCH_CAPACITY);
  #clients = new SpaceSaving(SKETCH_CAPACITY);

  constructor(hour: number) {
    this.hour = hour;
  }

  add(site: string, record: { path: string; client_ip: string }): void {
    this.#paths.add(`${site}\t${record.path}`);
    this.#clients.add(`${site}\t${record.client_ip}`);
  }

  /** Hands what was counted to the hour's open cell (merged into the stored one when written). */
  store(cells: OpenCells): void {
    if (this.#paths.size === 0 && this.#clients.size === 0) return;
    const cell = cells.cellOf("hour", this.hour, ALL);
    const p = new SpaceSaving(SKETCH_CAPACITY);
    p.merge(cell.tp ?? []);
    p.merge(this.#paths.top());
    const c = new SpaceSaving(SKETCH_CAPACITY);
    c.merge(cell.tc ?? []);
    c.merge(this.#clients.top());
    cell.tp = p.top();
    cell.tc = c.top();
    this.#paths = new SpaceSaving(SKETCH_CAPACITY);
    this.#clients = new SpaceSaving(SKETCH_CAPACITY);
  }
}

export function createRollups(deps: RollupDeps): Rollups {
  return new Rollups(deps);
}

/**
 * `sample`, `persist` and `observe` are bound: the composition hands them to timers and to the
 * bus as they are.
 */
export class Rollups {
  readonly #deps: RollupDeps;
  readonly #snapshots = new Map<SiteCounters, Snapshot>();
  readonly #cells: OpenCells;
  readonly #sketches: HourSketches;
  #openMinute: number;

  constructor(deps: RollupDeps) {
    this.#deps = deps;
    this.#cells = new OpenCells(deps.repo);
    this.#sketches = new HourSketches(Math.floor(deps.clock.now() / HOUR_MS) * HOUR_MS);
    this.#openMinute = Math.floor(deps.clock.now() / MINUTE_MS) * MINUTE_MS;
  }

  /** Folds what the counters gained since the last reading into the cells of now. */
  readonly sample = (): void => {
    const now = this.#deps.clock.now();
    const minute = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    const hour = Math.floor(now / HOUR_MS) * HOUR_MS;
    if (minute !== this.#openMinute) {
      const closed = this.#openMinute;
      this.#openMinute = minute;
      // The closing minute first gets what arrived up to now (a timer tick is late, not early).
      this.#fold(closed, Math.floor(closed / HOUR_MS) * HOUR_MS);
      if (this.#deps.minuteClosed === undefined) return;
      this.#cells.write(now);
      const cell = this.stored("minute", closed, ALL);
      if (cell !== undefined) this.#deps.minuteClosed(closed, cell);
      return;
    }
    this.#fold(minute, hour);
  };

  /** Writes the changed cells; closed ones leave memory, old ones leave the store. */
  readonly persist = (): void => {
    this.sample();
    this.#sketches.store(this.#cells);
    this.#cells.write(this.#deps.clock.now());
  };

  /** Counts a blocked request's path and client in the hour's sketches (a bus listener). */
  readonly observe = (e: BusEvent): void => {
    if (e.kind !== "access.blocked") return;
    const record = (e as unknown as { record?: { path: string; client_ip: string } }).record;
    if (record === undefined) return;
    const hour = Math.floor(e.time / HOUR_MS) * HOUR_MS;
    if (hour !== this.#sketches.hour) {
      this.#sketches.store(this.#cells);
      this.#sketches.hour = hour;
    }
    this.#sketches.add(e.siteId ?? UNMATCHED, record);
  };

  /** The stored cell of a bucket and scope (what this process holds open not included). */
  stored(res: Resolution, bucket: number, site: string): Cell | undefined {
    const row = this.#deps.repo.get(res, bucket, site);
    return row === undefined ? undefined : JSON.parse(row.data) as Cell;
  }

  /** Stored cells of a range, after writing what is open (management requests only). */
  cells(
    res: Resolution,
    from: number,
    to: number,
    site?: string,
  ): { bucket: number; site: string; cell: Cell }[] {
    this.#deps.drain?.();
    this.persist();
    return this.#deps.repo.list(res, from, to, site).map((row) => ({
      bucket: row.bucket,
      site: row.site_id,
      cell: JSON.parse(row.data) as Cell,
    }));
  }

  #fold(minute: number, hour: number): void {
    for (const sc of this.#deps.counters.all()) {
      let prev = this.#snapshots.get(sc);
      if (prev === undefined) {
        prev = {
          requests: new Float64Array(NREQ),
          blocks: new Float64Array(sc.blocks.length),
          latency: new Float64Array(NLAT),
          upstream: new Float64Array(NLAT),
        };
        this.#snapshots.set(sc, prev);
      }
      const d: Snapshot = {
        requests: diff(sc.requests, prev.requests),
        blocks: diff(sc.blocks, prev.blocks),
        latency: diff(sc.latency.values, prev.latency),
        upstream: diff(sc.upstreamLatency.values, prev.upstream),
      };
      if (!d.requests.some((n) => n > 0)) continue;
      const scope = sc.id === "" ? UNMATCHED : sc.id;
      for (const [res, bucket] of [["minute", minute], ["hour", hour]] as const) {
        addDelta(this.#cells.cellOf(res, bucket, scope), d);
        addDelta(this.#cells.cellOf(res, bucket, ALL), d);
      }
    }
  }
}
