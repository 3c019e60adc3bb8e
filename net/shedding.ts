/**
 * What a connection front does as it fills up (its `max_connections`, or its plane's descriptor
 * pool): past half full every deadline shrinks with the pressure, down to a tenth of its setting
 * when full, so slow clients leave sooner; and a connection that arrives when it is full takes
 * the place of the one that does least with its own: an idle keep-alive connection first (the
 * longest idle), then the head that has taken longest, then the slowest body. A connection whose
 * request is handled, whose answer is being sent, or that carries an authenticated long-lived
 * feed (`Front.longLived`) is never shed, and its deadlines are not shortened.
 */
import type { CloseReason, ConnectionLimits, FrontConnection } from "./front_conn.ts";

/** Below this pressure the deadlines are as configured. */
export const EASY_PRESSURE = 0.5;
/** The share of a deadline left at full pressure. */
const FLOOR = 0.1;
/** From this pressure on, the sweep closes idle keep-alive connections ... */
export const SHED_IDLE_FROM = 0.9;
/** ... until this one. */
export const SHED_IDLE_TO = 0.85;

/** The share of each deadline that applies at `pressure` (0: empty, 1: full). */
export function deadlineFactor(pressure: number): number {
  if (pressure <= EASY_PRESSURE) return 1;
  const over = Math.min(1, (pressure - EASY_PRESSURE) / (1 - EASY_PRESSURE));
  return 1 - over * (1 - FLOOR);
}

/** The setting a deadline of `reason` was made from (what the factor shortens). */
export function nominalMs(reason: CloseReason, limits: ConnectionLimits): number {
  switch (reason) {
    case "header_timeout":
      return limits.headerTimeoutMs;
    case "keepalive_timeout":
      return limits.keepAliveTimeoutMs;
    case "body_rate":
      return limits.bodyMinRateAfterMs ?? 0;
    default:
      return limits.bodyTimeoutMs;
  }
}

// Shedding classes, in order.
const IDLE = 0;
const HEAD = 1;
const BODY = 2;

interface Candidate {
  readonly c: FrontConnection;
  readonly kind: number;
  /** Within a class, lower goes first: when it began waiting, or a body's rate. */
  readonly order: number;
}

/**
 * Which class `c` is shed in, if it may be: waiting for its client, nothing of ours pending, and
 * no authenticated long-lived feed (between its events it looks idle).
 */
export function shedClass(c: FrontConnection): number | undefined {
  if (c.closed || c.pushing || c.sendingSince > 0 || c.deadline === Infinity) return undefined;
  if (!c.perClient) return undefined;
  switch (c.reason) {
    case "keepalive_timeout":
      return IDLE;
    case "header_timeout":
      return HEAD;
    case "body_timeout":
    case "body_rate":
      return BODY;
    default:
      return undefined;
  }
}

/** The connections that may be shed, in the order they would be. */
export function shedOrder(
  open: Iterable<FrontConnection>,
  now: number,
  limits: ConnectionLimits,
): FrontConnection[] {
  const list: Candidate[] = [];
  for (const c of open) {
    const kind = shedClass(c);
    if (kind === undefined) continue;
    const order = kind === BODY
      ? c.bodyBytes / Math.max(1, c.bodyWaited + (c.waitFrom >= 0 ? now - c.waitFrom : 0))
      : c.deadline - nominalMs(c.reason, limits);
    list.push({ c, kind, order });
  }
  list.sort((a, b) => a.kind - b.kind || a.order - b.order);
  return list.map((x) => x.c);
}

/** Whether `c` is an idle keep-alive connection (the first to go). */
export function idleKeepAlive(c: FrontConnection): boolean {
  return shedClass(c) === IDLE;
}

/** How often the shedding order may be made again while the front stays full. */
const REORDER_MS = 50;

/**
 * The shedding order of a full front, made when first needed and taken from until the front's
 * next sweep (`clear`); made again at most every {@link REORDER_MS}, so that a flood of arrivals
 * does not sort the front each time.
 */
export class ShedQueue {
  /** The order, reversed (the next to go last). */
  #order: FrontConnection[] = [];
  #madeAt = -Infinity;

  clear(): void {
    this.#order = [];
  }

  /** The next connection to shed; undefined when none may be. */
  next(
    open: Iterable<FrontConnection>,
    now: number,
    limits: ConnectionLimits,
  ): FrontConnection | undefined {
    for (let again = true;; again = false) {
      let c = this.#order.pop();
      while (c !== undefined && shedClass(c) === undefined) c = this.#order.pop();
      if (c !== undefined) return c;
      if (!again || now - this.#madeAt < REORDER_MS) return undefined;
      this.#madeAt = now;
      this.#order = shedOrder(open, now, limits).reverse();
    }
  }
}
