/**
 * The attack-spike alert: an `attack.spike` notification when a minute blocked `threshold`
 * requests or more, at most one every ten minutes.
 *
 * One process (no `lease`): the minute is judged when it closes. Several controllers of one
 * deployment (`lease` given): each adds its counts to the stored minute, and the controller
 * holding the alert's lease judges the deployment's sum once every controller has written it
 * (`graceMs` after the minute's end, each controller writing its counts when the minute closes),
 * so a spike spread over the controllers is seen and is notified once.
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { Notify } from "../core/notifications.ts";
import { type Cell, MINUTE_MS } from "./rollup_cells.ts";

const QUIET_MS = 10 * 60_000;
/** The most closed minutes one check judges. */
const MAX_BEHIND = 10;
/** How long after a minute's end the deployment's sum is judged. */
export const SPIKE_GRACE_MS = 15_000;

export interface AttackSpikeDeps {
  readonly notify: Notify;
  readonly threshold: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The alert's deployment-wide lease (several controllers); absent: this process judges. */
  readonly lease?: () => Promise<boolean>;
  /** The stored cell of all sites of a minute (every controller's counts). */
  readonly stored?: (bucket: number) => Cell | undefined;
  readonly graceMs?: number;
}

export interface AttackSpike {
  /** The rollups' `minuteClosed`. */
  closed(bucket: number, cell: Cell): void;
  /**
   * Judges, on the lease holder, the minutes whose grace has passed (several controllers; a
   * timer calls it).
   */
  check(): Promise<void>;
}

export function createAttackSpike(deps: AttackSpikeDeps): AttackSpike {
  const grace = deps.graceMs ?? SPIKE_GRACE_MS;
  let lastSpike = -Infinity;
  // The first minute not judged yet (several controllers): the one open at start.
  let next = Math.floor(deps.clock.now() / MINUTE_MS) * MINUTE_MS;

  const judge = (bucket: number, cell: Cell) => {
    const blocked = Object.values(cell.b).reduce((a, b) => a + b, 0);
    if (blocked < deps.threshold || bucket - lastSpike < QUIET_MS) return;
    lastSpike = bucket;
    notifySpike(deps.notify, bucket, cell, blocked, deps.threshold);
  };

  return {
    closed(bucket, cell) {
      if (!deps.lease) judge(bucket, cell);
    },
    async check() {
      if (!deps.lease) return;
      const now = deps.clock.now();
      // After a long pause only the latest minutes are worth an alert.
      next = Math.max(next, Math.floor(now / MINUTE_MS) * MINUTE_MS - MAX_BEHIND * MINUTE_MS);
      const ripe: number[] = [];
      for (; next + MINUTE_MS + grace <= now; next += MINUTE_MS) ripe.push(next);
      if (ripe.length === 0) return;
      const held = await deps.lease().catch((err) => {
        deps.logger.warn("attack spike lease check failed", { error: err as Error });
        return false;
      });
      if (!held) return;
      for (const b of ripe) {
        const cell = deps.stored?.(b);
        if (cell !== undefined) judge(b, cell);
      }
    },
  };
}

function notifySpike(
  notify: Notify,
  bucket: number,
  cell: Cell,
  blocked: number,
  threshold: number,
): void {
  const classes = Object.entries(cell.b).sort((a, b) => b[1] - a[1]).slice(0, 5);
  const minute = new Date(bucket).toISOString();
  notify({
    level: "warning",
    kind: "attack.spike",
    title: `Attack spike: ${blocked} requests blocked in one minute`,
    body: `${blocked} requests were blocked between ${minute} and ${
      new Date(bucket + 60_000).toISOString()
    } (threshold ${threshold}). Top classes: ${classes.map(([k, v]) => `${k} ${v}`).join(", ")}.`,
    data: { minute, blocked, threshold, classes: Object.fromEntries(classes) },
    params: {
      minute,
      blocked,
      threshold,
      classes: classes.map(([k, v]) => `${k} ${v}`).join(", "),
    },
    link: "/console/logs?action=block",
  });
}
