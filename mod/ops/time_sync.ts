/**
 * System time synchronisation: measures the host clock against the configured SNTP servers
 * (`time.servers`) and keeps each server's last offset, delay, stratum and reachability, the
 * active server (the reachable one with the lowest delay, chosen by `reselect`) and when it was
 * chosen. It never sets the host clock (that is the operating system's job, and needs privileges a
 * WAF should not hold). It warns - a notification and a metric - when the offset passes
 * `time.max_offset`, and with `time.apply_offset` the clock given to TOTP, JWT checks and cluster
 * heartbeats (an `OffsetClock`) adds the measured offset.
 */
import type { Clock, OffsetClock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Notify } from "../core/notifications.ts";
import { querySntp, type SntpResult } from "./sntp.ts";

export interface ServerState {
  readonly server: string;
  reachable: boolean | null;
  offset_ms: number | null;
  delay_ms: number | null;
  stratum: number | null;
  checked_at: number | null;
  error: string | null;
}

export interface TimeSyncOptions {
  readonly servers: readonly string[];
  readonly applyOffset: boolean;
  readonly maxOffsetMs: number;
  /** How often the active server is measured (0: only on request). */
  readonly intervalMs: number;
  readonly timeoutMs: number;
}

export interface TimeSyncDeps {
  /** The host clock (never adjusted). */
  readonly clock: Clock;
  /** The clock that applies the offset when `applyOffset` is on. */
  readonly adjusted: OffsetClock;
  readonly logger: Logger;
  readonly notify?: Notify;
  /** Told after each measurement (the realtime `time.sync` event). */
  readonly measured?: (view: TimeSyncView) => void;
  readonly query?: typeof querySntp;
}

export type TimeSyncView = ReturnType<ReturnType<typeof createTimeSync>["view"]>;

const round = (v: number | null) => v === null ? null : Math.round(v * 1000) / 1000;

/** The notice of a host clock that differs from `server` by more than the limit. */
function offsetNotice(server: string, offsetMs: number, options: TimeSyncOptions) {
  const offset = Math.round(offsetMs);
  return {
    level: "warning" as const,
    kind: "time.offset",
    title: `Clock offset ${offset} ms exceeds ${options.maxOffsetMs} ms`,
    body:
      `The host clock differs from ${server} by ${offset} ms. TOTP codes, token expiry and cluster heartbeats depend on it: fix the host's time synchronisation${
        options.applyOffset ? "" : ' or set "time.apply_offset: true"'
      }.`,
    data: { server, offset_ms: offsetMs, max_offset_ms: options.maxOffsetMs },
    params: {
      variant: "host",
      server,
      offset_ms: offset,
      max_offset_ms: options.maxOffsetMs,
      apply_offset: options.applyOffset,
    },
    link: "/console/system",
  };
}

export function createTimeSync(options: TimeSyncOptions, deps: TimeSyncDeps) {
  const query = deps.query ?? querySntp;
  const states: ServerState[] = options.servers.map((server) => ({
    server,
    reachable: null,
    offset_ms: null,
    delay_ms: null,
    stratum: null,
    checked_at: null,
    error: null,
  }));
  let active: ServerState | undefined;
  let chosenAt: number | null = null;
  let offsetMs: number | null = null;
  let syncedAt: number | null = null;
  let exceeded = false;
  let busy: Promise<unknown> = Promise.resolve();

  function requireServers(): void {
    if (states.length === 0) {
      throw new AppError(
        409,
        "TIME_SERVERS_NOT_CONFIGURED",
        'No time servers are configured: set "time.servers" in waf.yaml',
      );
    }
  }

  async function probe(s: ServerState): Promise<SntpResult | undefined> {
    const now = deps.clock.now();
    try {
      const r = await query(s.server, () => deps.clock.now(), options.timeoutMs);
      Object.assign(s, {
        reachable: true,
        offset_ms: r.offsetMs,
        delay_ms: r.delayMs,
        stratum: r.stratum,
        checked_at: now,
        error: null,
      });
      return r;
    } catch (err) {
      Object.assign(s, { reachable: false, checked_at: now, error: (err as Error).message });
      return undefined;
    }
  }

  function adopt(s: ServerState): void {
    offsetMs = s.offset_ms;
    syncedAt = deps.clock.now();
    deps.adjusted.offsetMs = options.applyOffset && offsetMs !== null ? offsetMs : 0;
    const over = Math.abs(offsetMs ?? 0) > options.maxOffsetMs;
    if (over && !exceeded) {
      deps.logger.warn("clock offset above the limit", {
        server: s.server,
        offset_ms: offsetMs,
        max_offset_ms: options.maxOffsetMs,
      });
      deps.notify?.(offsetNotice(s.server, offsetMs ?? 0, options));
    }
    exceeded = over;
  }

  /** Probes every server and makes the reachable one with the lowest delay active. */
  async function reselect(): Promise<void> {
    requireServers();
    await Promise.all(states.map(probe));
    const best = states.filter((s) => s.reachable)
      .sort((a, b) => a.delay_ms! - b.delay_ms!)[0];
    if (best === undefined) {
      active = undefined;
      deps.logger.warn("no time server answered", { servers: options.servers });
      return;
    }
    if (best !== active) chosenAt = deps.clock.now();
    active = best;
    adopt(best);
  }

  /** Measures the active server now; without one (or when it stops answering), reselects. */
  async function sync(): Promise<void> {
    requireServers();
    if (active === undefined || !(await probe(active))) return await reselect();
    adopt(active);
  }

  const serial = (fn: () => Promise<void>) => {
    const next = busy.then(fn, fn);
    busy = next.catch(() => {});
    return next.then(() => {
      const v = view();
      deps.measured?.(v);
      return v;
    });
  };

  function view() {
    return {
      servers: states.map((s) => ({
        server: s.server,
        reachable: s.reachable,
        offset_ms: round(s.offset_ms),
        delay_ms: round(s.delay_ms),
        stratum: s.stratum,
        checked_at: s.checked_at === null ? null : new Date(s.checked_at).toISOString(),
        error: s.error,
        active: s === active,
      })),
      active: active?.server ?? null,
      chosen_at: chosenAt === null ? null : new Date(chosenAt).toISOString(),
      offset_ms: round(offsetMs),
      synced_at: syncedAt === null ? null : new Date(syncedAt).toISOString(),
      max_offset_ms: options.maxOffsetMs,
      offset_exceeded: exceeded,
      apply_offset: options.applyOffset,
      applied_offset_ms: deps.adjusted.offsetMs,
      sets_host_clock: false,
    };
  }

  return {
    view,
    sync: () => serial(sync),
    reselect: () => serial(reselect),
    /** Current figures for the metrics. */
    figures: () => ({ offsetMs, exceeded, states: states as readonly ServerState[] }),
    /** Whether a periodic synchronisation is configured (servers and a non-zero interval). */
    periodic: () => states.length > 0 && options.intervalMs > 0,
    intervalMs: options.intervalMs,
    /** Waits for a measurement in flight. */
    async stop(): Promise<void> {
      await busy;
    },
  };
}

export type TimeSync = ReturnType<typeof createTimeSync>;
